"""Every public result for a list of files, as one canonical JSON digest (a helper of
tests/wire/test_walk_differential.py, run in a fresh process; not a test itself).

    python tests/walk_digest.py LIST OUT [--count-calls MODULE ...]

LIST holds one path a line; OUT gets ``{"files": {path: digest}, "calls": {...}}``.
For each file: ``readings`` (every field of each reading's JSON), ``explore``'s JSON and
byte table, the byte table of every kind, the CLI's ``validate`` (exit status and
output), ``read`` and ``to_numpy(load())`` as each kind and with none (the value, or the
error's class, text and problems), and the warnings each call gave. Arrays are digested
as dtype, shape, read-only flag and a hash of their bytes; dict order is kept.

``--count-calls MODULE``: load that compiled module of onnxdata before onnxdata itself,
wrap each of its functions to count calls, and report the counts with the file it was
loaded from, so the test can see which walk ran.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import importlib.machinery
import importlib.util
import io
import json
import sys
import warnings
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

KINDS = ("sequence", "optional", "map", "tensor", "sparse_tensor")
CALLS: Counter[str] = Counter()


def preload_counted(name: str) -> dict[str, Any]:
    """Load ``onnxdata.<name>`` from its compiled file before the package (so every
    ``from onnxdata.wire.<name> import f`` binds our counting wrapper), if it is built."""
    spec = importlib.util.find_spec("onnxdata")  # finds the package without importing it
    assert spec is not None and spec.origin is not None
    folder = Path(spec.origin).parent / "wire"
    # only this interpreter's build: a venv of another Python may have built one beside it
    # (an in-place build of 3.10 next to 3.11's), and loading that one crashes the process
    files = [folder / f"{name}{suffix}" for suffix in importlib.machinery.EXTENSION_SUFFIXES
             if (folder / f"{name}{suffix}").is_file()]
    if not files:
        return {"file": None}
    full = f"onnxdata.wire.{name}"
    loader = importlib.machinery.ExtensionFileLoader(full, str(files[0]))
    mod_spec = importlib.util.spec_from_file_location(full, files[0], loader=loader)
    assert mod_spec is not None
    module = importlib.util.module_from_spec(mod_spec)
    sys.modules[full] = module  # before its body runs, as importlib does
    try:
        loader.exec_module(module)
    except Exception as exc:  # reported, and the test says so: the digest goes on
        del sys.modules[full]
        return {"file": str(files[0]), "error": repr(exc), "wrapped": []}
    wrapped = []
    for attr, obj in list(vars(module).items()):
        if attr.startswith("__") or isinstance(obj, type) or not callable(obj):
            continue
        setattr(module, attr, _counting(f"{name}.{attr}", obj))
        wrapped.append(attr)
    return {"file": str(files[0]), "wrapped": sorted(wrapped)}


def _counting(label: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    def counted(*args: Any, **kwargs: Any) -> Any:
        CALLS[label] += 1
        return fn(*args, **kwargs)
    return counted


# --- canonical digests -----------------------------------------------------------------------

def value(v: Any) -> Any:
    """A JSON form of a value that two equal values share and unequal ones do not."""
    import numpy as np

    if v is None or isinstance(v, (bool, str)):
        return v
    if isinstance(v, np.ndarray):
        if v.dtype == object:
            body = json.dumps([value(x) for x in v.ravel()]).encode()
        else:
            body = np.ascontiguousarray(v).tobytes()
        return {"array": v.dtype.str, "shape": list(v.shape), "readonly": not v.flags.writeable,
                "sha256": hashlib.sha256(body).hexdigest()}
    if isinstance(v, bytes):
        return {"bytes": v.hex()}
    if isinstance(v, (list, tuple)):
        return {type(v).__name__: [value(x) for x in v]}
    if isinstance(v, dict):
        return {"dict": [[value(k), value(x)] for k, x in v.items()]}
    return {"type": type(v).__name__, "repr": repr(v)}


def error(exc: BaseException) -> dict[str, Any]:
    out: dict[str, Any] = {"error": type(exc).__name__, "text": str(exc)}
    problems = getattr(exc, "problems", None)
    if problems is not None:
        out["problems"] = [[p.path, p.message] for p in problems]
    return out


def outcome(fn: Callable[[], Any], digest: Callable[[Any], Any] = value) -> dict[str, Any]:
    """What ``fn()`` gave (its value's digest or its error) and the warnings on the way."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            out: dict[str, Any] = {"value": digest(fn())}
        except Exception as exc:  # every error is part of the answer being compared
            out = error(exc)
    if caught:
        out["warnings"] = [[w.category.__name__, str(w.message)] for w in caught]
    return out


def rows(table: list[Any]) -> list[Any]:
    return [list(dataclasses.astuple(r)) for r in table]


def cli(args: list[str]) -> dict[str, Any]:
    from onnxdata.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(args)
    return {"exit": code, "stdout": out.getvalue(), "stderr": err.getvalue()}


def digest(path: str) -> dict[str, Any]:
    import onnxdata

    data = Path(path).read_bytes()
    folder = str(Path(path).parent)
    out: dict[str, Any] = {}
    out["readings"] = outcome(lambda: [r.as_json() for r in
                                       onnxdata.readings(data, base_dir=folder)], lambda x: x)

    def explored() -> Any:
        ex = onnxdata.explore(path)
        return {"json": ex.as_json(), "byte_table": rows(ex.byte_table())}
    out["explore"] = outcome(explored, lambda x: x)
    out["byte_table"] = {k: outcome(lambda k=k: rows(onnxdata.byte_table(data, k, limit=300)),
                                    lambda x: x) for k in KINDS}
    out["validate"] = outcome(lambda: cli(["validate", path]), lambda x: x)
    for kind in (*KINDS, None):
        name = kind or "chosen"
        out[f"read[{name}]"] = outcome(lambda kind=kind: onnxdata.read(path, kind))
        out[f"to_numpy(load)[{name}]"] = outcome(
            lambda kind=kind: onnxdata.to_numpy(onnxdata.load(path, kind), base_dir=folder))
    return out


def main(argv: list[str]) -> int:
    paths = Path(argv[1]).read_text().splitlines()
    counted = argv[argv.index("--count-calls") + 1:] if "--count-calls" in argv else []
    loaded = {name: preload_counted(name) for name in counted}
    import onnxdata.wire.loops

    files = {p: digest(p) for p in paths}
    report = {"files": files, "varints_compiled": onnxdata.wire.loops.COMPILED,
              "calls": {name: {**info, "in_sys_modules": f"onnxdata.wire.{name}" in sys.modules,
                               "count": sum(c for k, c in CALLS.items()
                                            if k.startswith(name + "."))}
                        for name, info in loaded.items()}}
    Path(argv[2]).write_text(json.dumps(report, sort_keys=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
