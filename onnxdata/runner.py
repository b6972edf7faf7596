"""Run a model's test data sets on a backend and compare with the expected outputs.

``run_test_data_set(model, folder)`` reads ``folder``'s inputs and expected
outputs with the model's declared types (``load_test_data_set``), runs them on
a backend (ONNX Runtime by default; ``onnxdata.backends`` does the conversions
each backend needs, and gives the outputs back as the model declares them) and
compares each output with ``compare``. ``onnxdata run --write-outputs``
adds the outputs to the sets that have no expected outputs (inputs only, as a user
writes them before the first run); ``--write-outputs DIR`` writes every set with
the backend's outputs as a new test case in DIR.

ONNX Runtime is an optional dependency: ``pip install 'onnxdata[ort]'``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from onnxdata.backends import Backend, BackendUnavailable, get_backend
from onnxdata.compare import Difference, compare
from onnxdata.errors import OnnxDataError
from onnxdata.generated.onnx_ml_pb2 import ModelProto
from onnxdata.testdata import load_test_data_set
from onnxdata.testdata_save import ModelArg, as_model, save_test_data_set

__all__ = ["OutputResult", "add_parser", "main", "run_test_data_set", "test_data_sets"]

Status = Literal["pass", "fail", "error", "unchecked"]
ORT_MISSING = ("onnxdata run needs ONNX Runtime, an optional extra: "
               "pip install 'onnxdata[ort]' (or pip install onnxruntime)")
_SET = re.compile(r"^test_data_set_(\d+)$")


@dataclass(frozen=True)
class OutputResult:
    """One output of one test data set after a run.

    ``status`` is "pass", "fail" (``differences`` says where), "unchecked" (no
    expected file for it) or "error" (the set could not be read or run:
    ``error`` says why, and ``index`` is -1). ``actual`` is the runtime's value.
    """

    folder: str
    index: int
    name: str
    status: Status
    differences: tuple[Difference, ...] = ()
    error: str = ""
    actual: Any = field(default=None, repr=False, compare=False)

    def as_json(self) -> dict[str, Any]:
        """The result as JSON-ready data (without the runtime's value)."""
        return {"set": Path(self.folder).name, "folder": self.folder, "output": self.index,
                "name": self.name, "status": self.status, "error": self.error or None,
                "differences": [d.as_json() for d in self.differences]}

    def __str__(self) -> str:
        where = Path(self.folder).name
        if self.index < 0:
            return f"{where}: error: {self.error}"
        head = f"{where} output {self.index} {self.name!r}: {self.status}"
        if self.differences:
            n = len(self.differences)
            head += f", {n} difference{'s' if n != 1 else ''}"
        return head


class _Session:
    """A model prepared on a backend, with its path and declared types."""

    def __init__(self, model: ModelArg, runtime: str | Backend = "ort") -> None:
        try:
            backend = get_backend("ort" if runtime == "onnxruntime" else runtime) \
                if isinstance(runtime, str) else runtime
        except BackendUnavailable as exc:
            if runtime in ("ort", "onnxruntime"):
                raise ImportError(ORT_MISSING) from exc
            raise
        self.backend = backend
        self.prepared = backend.prepare(model)
        self.path = Path(model) if isinstance(model, (str, os.PathLike)) else None
        if self.path is not None and self.path.is_dir():
            self.path = self.path / "model.onnx"
        self.model = as_model(self.path if self.path is not None else model)


def run_test_data_set(model: ModelArg, folder: str | os.PathLike[str],
                      runtime: str | Backend = "onnxruntime", *, rtol: float = 1e-3,
                      atol: float = 1e-7) -> list[OutputResult]:
    """Run ``model`` (a path or ModelProto) on the inputs in ``folder`` and compare each
    output with ``folder``'s ``output_K.pb``; one ``OutputResult`` per output.

    ``runtime`` is a backend name (``"onnxruntime"``/``"ort"``, ``"reference"``,
    ``"module:attr"``: see ``onnxdata.backends``) or a backend. ONNX Runtime
    missing raises ImportError saying how to install it; a model the backend
    cannot load raises OnnxDataError with its message. A set that cannot be read
    or run gives one result with status "error".
    """
    return _run(_Session(model, runtime), Path(folder), rtol, atol)


def _run(s: _Session, folder: Path, rtol: float, atol: float) -> list[OutputResult]:
    where = os.fspath(folder)
    try:
        inputs, expected = load_test_data_set(folder, model=s.path) if s.path is not None \
            else _load_with(s.model, folder)
    except (OnnxDataError, OSError, IndexError, ValueError) as exc:
        return [OutputResult(where, -1, "", "error", error=f"cannot read the set: {exc}")]
    try:
        raw = s.prepared.run(inputs)
    except OnnxDataError as exc:
        return [OutputResult(where, -1, "", "error", error=str(exc))]
    out: list[OutputResult] = []
    names = [v.name for v in s.model.graph.output]
    for k, (name, actual) in enumerate(zip(names, raw, strict=True)):
        if k >= len(expected):
            out.append(OutputResult(where, k, name, "unchecked", actual=actual))
            continue
        found = compare(actual, expected[k], rtol=rtol, atol=atol)
        out.append(OutputResult(where, k, name, "fail" if found else "pass", tuple(found),
                                actual=actual))
    return out


def _load_with(model: ModelProto, folder: Path) -> tuple[list[Any], list[Any]]:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "model.onnx"
        path.write_bytes(model.SerializeToString())
        return load_test_data_set(folder, model=path)


# ---------------------------------------------------------------- folders and the command

def test_data_sets(model_dir: Path) -> list[Path]:
    """The ``test_data_set_N`` folders beside a model, by N."""
    found = [(int(m.group(1)), p) for p in model_dir.iterdir()
             if p.is_dir() and (m := _SET.match(p.name)) is not None]
    return [p for _, p in sorted(found)]


test_data_sets.__test__ = False  # type: ignore[attr-defined]  # not a pytest test


def add_parser(sub: Any) -> None:
    """Add ``run`` to the ``onnxdata`` subcommands."""
    from onnxdata.diff import add_tolerances

    p = sub.add_parser(
        "run", help="run a model's test data sets on ONNX Runtime and compare",
        description="Feed each test_data_set_N's inputs, read with the model's declared "
                    "types, to ONNX Runtime (pip install 'onnxdata[ort]') and compare its "
                    "outputs with the expected ones, one line per set and output. Exit 0 "
                    "when every output passes, 1 when any differs, 2 when a set cannot be "
                    "read or ONNX Runtime cannot load or run the model.")
    p.add_argument("model", metavar="MODEL_DIR_OR_MODEL",
                   help="a folder with model.onnx and test_data_set_N, the model file, or "
                        "one test_data_set_N folder beside a model.onnx (that set only)")
    p.add_argument("--set", type=int, metavar="N", help="run test_data_set_N only")
    add_tolerances(p)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--write-outputs", nargs="?", const="", metavar="DIR",
                   help="alone: add ORT's outputs to the sets that have no expected outputs; "
                        "with DIR: write each set's inputs and ORT's outputs to "
                        "DIR/test_data_set_N, with the model (a test case to run)")


def main(args: argparse.Namespace) -> int:
    """Run ``onnxdata run`` with parsed arguments; 0 all pass, 1 any fails, 2 errors."""
    from rich.text import Text

    from onnxdata.console import console, write_text

    err = console(stderr=True)
    target = Path(args.model)
    model_path = target / "model.onnx" if target.is_dir() else target
    one_set = _SET.match(target.name) if target.is_dir() else None
    if one_set is not None and not model_path.exists() and args.set is None:
        model_path = target.parent / "model.onnx"  # a data set folder: run that set only
        args.set = int(one_set.group(1))
    if target.is_file() and target.suffix == ".pb":
        err.print(Text(f"onnxdata: {target} is a value file, not a model: pass the test case "
                       "folder (model.onnx and test_data_set_N) or its model.onnx",
                       style="red"), soft_wrap=True)
        return 2
    if not model_path.is_file():
        err.print(Text(f"onnxdata: no model at {model_path}", style="red"), soft_wrap=True)
        return 2
    sets = test_data_sets(model_path.parent)
    if not sets:
        err.print(Text(f"onnxdata: no test_data_set_N folder beside {model_path}",
                       style="red"), soft_wrap=True)
        return 2
    if args.set is not None:
        sets = [p for p in sets if p.name == f"test_data_set_{args.set}"]
        if not sets:
            err.print(Text(f"onnxdata: no test_data_set_{args.set} in {model_path.parent}",
                           style="red"), soft_wrap=True)
            return 2
    try:
        session = _Session(model_path)
    except (ImportError, OnnxDataError) as exc:
        err.print(Text(f"onnxdata: {exc}", style="red"), soft_wrap=True)
        return 2
    results: list[OutputResult] = []
    written: list[str] = []
    kept: list[str] = []  # sets with expected outputs, left as they are
    for folder in sets:
        got = _run(session, folder, args.rtol, args.atol)
        results.extend(got)
        if args.write_outputs is None or not got or any(r.index < 0 for r in got):
            continue
        try:
            if args.write_outputs:  # a new test case: DIR/test_data_set_N and the model
                written.append(os.fspath(_write_outputs(session, folder, got,
                                                        Path(args.write_outputs))))
            elif all(r.status == "unchecked" for r in got):  # outputs filled in
                written.append(os.fspath(_write_outputs(session, folder, got, None)))
            else:
                kept.append(folder.name)
        except (OnnxDataError, OSError) as exc:
            err.print(Text(f"onnxdata: {exc}", style="red"), soft_wrap=True)
            return 2
    code = exit_code(results)
    if args.json:
        write_text(json.dumps({"model": os.fspath(model_path), "passed": code == 0,
                               "rtol": args.rtol, "atol": args.atol, "written": written,
                               "kept": kept,
                               "results": [r.as_json() for r in results]}, indent=2) + "\n")
        return code
    _print(console(), results, written)
    if kept:
        console().print(f"not written: {', '.join(kept)} (expected outputs there already; "
                        "--write-outputs DIR writes ORT's outputs to a new test case)",
                        markup=False, soft_wrap=True)
    return code


def exit_code(results: list[OutputResult]) -> int:
    """2 when a set could not be read or run, 1 when an output differs, else 0."""
    if any(r.status == "error" for r in results):
        return 2
    return 1 if any(r.status == "fail" for r in results) else 0


def _write_outputs(s: _Session, folder: Path, results: list[OutputResult],
                   case: Path | None) -> Path:
    """The set's inputs and ORT's outputs: in place (``case`` None: a set without expected
    outputs gets them), or as ``case``/the set's name beside a copy of the model (an
    existing non-empty set there is refused, never replaced)."""
    inputs, _ = load_test_data_set(folder, model=s.path)
    outputs = [r.actual for r in results]
    if case is None:
        return save_test_data_set(folder, inputs, outputs, model=s.model, overwrite=True)
    target = save_test_data_set(case / folder.name, inputs, outputs, model=s.model)
    model = case / "model.onnx"
    if not model.exists():
        if s.path is not None:
            shutil.copyfile(s.path, model)
        else:
            model.write_bytes(s.model.SerializeToString())
    return target


_STYLE = {"pass": "green", "fail": "yellow", "error": "red", "unchecked": "cyan"}


def _print(out: Any, results: list[OutputResult], written: list[str]) -> None:
    from rich.text import Text

    from onnxdata.diff import SHOWN

    for r in results:
        where = Path(r.folder).name
        if r.index < 0:
            out.print(Text.assemble((where, "bold"), ": ", ("error", "red"), f": {r.error}"),
                      soft_wrap=True)
            continue
        n = len(r.differences)
        more = f", {n} difference{'s' if n != 1 else ''}" if n else ""
        out.print(Text.assemble((where, "bold"), f" output {r.index} {r.name!r}: ",
                                (r.status, _STYLE[r.status]), more), soft_wrap=True)
        for d in r.differences[:SHOWN]:
            out.print(f"  {d}", markup=False, soft_wrap=True)
        if n > SHOWN:
            out.print(f"  … {n - SHOWN} more (--json lists all)", soft_wrap=True)
    for w in written:
        out.print(f"wrote {w}", markup=False, soft_wrap=True)
