"""Every public function and CLI command that takes a path (``readings`` and
``byte_table`` take bytes or a Source, ``validate`` and ``problems`` a message), given
the four paths that are not a file to read (issue 42): a FIFO with no writer, a folder
(not empty), ``/dev/zero`` and a dangling symlink (into a folder that does not exist).
Each call must end with our error naming the path (the library: OnnxDataError or
OSError; the CLI: exit 2, one line of ours, no traceback) within 2 s and under 200 MiB.

Each kind of path runs in a child process of its own (a hang cannot hang the suite: a
per-call alarm stops it and the parent's timeout stops the child). In the child, a call's
memory is its peak RSS (``VmHWM`` reset through ``/proc/self/clear_refs`` before it) over
the RSS before it; its time the wall clock around it. The stream cap is 64 MiB
(``set_stream_limit``, ``--max-bytes 64M``): what ``/dev/zero`` may give before our error.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

import onnxdata
import onnxdata.cases

NODE = Path(__file__).parents[1] / "data" / "onnx-node"
KINDS = ("fifo", "folder", "dev-zero", "dangling")

#: (name, code): the code calls one public function or command with the path ``P``;
#: ``G`` is a good test case folder (``G/model.onnx``, ``G/test_data_set_0``), ``N`` a
#: path where nothing is. Every path argument of every public name is here.
LIBRARY = [
    ("load", "onnxdata.load(P)"),
    ("read", "onnxdata.read(P)"),
    ("read copy", "onnxdata.read(P, copy=True)"),
    ("explore", "onnxdata.explore(P)"),
    ("save", "onnxdata.save(onnxdata.TensorProto(dims=[1]), P)"),
    ("write", "onnxdata.write(np.zeros(2), P)"),
    ("to_numpy base_dir", "onnxdata.to_numpy(EXTERNAL, base_dir=P)"),
    ("load_test_data_set", "load_test_data_set(P)"),
    ("load_test_data_set model", "load_test_data_set(G / 'test_data_set_0', model=P)"),
    ("save_test_data_set", "save_test_data_set(P, [np.zeros(2)], [])"),
    ("save_test_data_set model", "save_test_data_set(N, [np.zeros(2)], [], model=P)"),
    ("make_test_data_sets", "make_test_data_sets(P, 1)"),
    ("make_test_data_sets out", "make_test_data_sets(G / 'model.onnx', 1, out=P)"),
    ("run_test_data_set", "run_test_data_set(P, G / 'test_data_set_0')"),
    ("run_test_data_set folder", "check(run_test_data_set(G / 'model.onnx', P))"),
    ("Backend ort", "get_backend('ort').prepare(P)"),
    ("Backend reference", "get_backend('reference').prepare(P)"),
    ("locate", "locate(P)"),
    ("locate reduce", "locate(G, reduce=P)"),
]
CLI = [
    ("explore", "explore P"),
    ("explore --html", "explore GFILE --html P"),
    ("validate", "validate P"),
    ("validate --model", "validate GFILE --model P"),
    ("show", "show P"),
    ("diff", "diff P GFILE"),
    ("diff second", "diff GFILE P"),
    ("run", "run P"),
    ("run --expectations", "run G --expectations P"),
    ("run --report", "run G --report P"),
    ("run --write-outputs", "run G --write-outputs P"),
    ("make", "make P -n 1"),
    ("make --out", "make G/model.onnx -n 1 --out P"),
    ("locate", "locate P"),
    ("locate --reduce", "locate G --reduce P"),
    ("locate --report", "locate G --report P"),
    ("locate --expectations", "locate G --expectations P"),
]

CHILD = textwrap.dedent("""
    import contextlib, io, json, os, signal, sys, time
    from pathlib import Path
    import numpy as np
    import onnxruntime  # imported before any call, so no call's memory holds it
    import onnx.reference
    import onnxdata
    from onnxdata import OnnxDataError
    from onnxdata.cases import (get_backend, load_test_data_set, locate, make_test_data_sets,
                                run_test_data_set, save_test_data_set)
    from onnxdata.cli.main import main
    from onnxdata.wire.source import set_stream_limit

    calls, P, G, N, GFILE, out = json.loads(sys.argv[1])
    P, G, N = P, Path(G), Path(N)
    set_stream_limit(64 << 20)
    EXTERNAL = onnxdata.TensorProto(dims=[2], data_type=1, data_location=1)
    EXTERNAL.external_data.add(key="location", value="w.bin")

    class Hang(BaseException):
        pass

    def alarm(*_):
        raise Hang("no answer in 20 s")

    def check(results):  # a set that cannot be read is a result with status "error"
        errors = [r.error for r in results if r.status == "error"]
        if errors:
            raise OnnxDataError(errors[0])

    def status(field):
        with open("/proc/self/status") as fh:
            line = next(x for x in fh if x.startswith(field + ":"))
        return int(line.split()[1]) / 1024

    signal.signal(signal.SIGALRM, alarm)
    results = []
    for name, cli, code in calls:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")  # the peak RSS from here
        before = status("VmRSS")
        got = {"name": name, "cli": cli}
        started = time.monotonic()
        err, std = io.StringIO(), io.StringIO()
        got["error"] = None
        signal.alarm(20)
        try:
            if cli:
                argv = [P if a == "P" else GFILE if a == "GFILE" else
                        str(G) + a[1:] if a.startswith("G") else a for a in code.split()]
                with contextlib.redirect_stderr(err), contextlib.redirect_stdout(std):
                    got["status"] = main([*argv, "--max-bytes", "64M"])
            else:
                exec(code, dict(globals(), P=P))
        except Hang as exc:
            got["error"] = ["Hang", str(exc), False]
        except BaseException as exc:
            got["error"] = [type(exc).__name__, str(exc),
                            isinstance(exc, (OnnxDataError, OSError))]
        finally:
            signal.alarm(0)
        got["stderr"], got["stdout"] = err.getvalue(), std.getvalue()
        got["seconds"] = time.monotonic() - started
        got["mib"] = status("VmHWM") - before
        results.append(got)
    with open(out, "w") as fh:
        json.dump(results, fh)
""")


def _paths(tmp_path: Path) -> dict[str, str]:
    fifo = tmp_path / "fifo.pb"
    os.mkfifo(fifo)
    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / "x").write_bytes(b"")
    zero = tmp_path / "zero.pb"
    os.symlink("/dev/zero", zero)
    dangling = tmp_path / "dangling.pb"
    os.symlink(tmp_path / "gone" / "x.pb", dangling)
    return {"fifo": str(fifo), "folder": str(folder), "dev-zero": str(zero),
            "dangling": str(dangling)}


def test_every_path_taking_name_is_walked() -> None:
    """The lists above cover every public name that takes a path."""
    takes_path = {"load", "read", "explore", "save", "write", "to_numpy"}
    named = {code.split("(")[0].split(".")[-1] for _, code in LIBRARY}
    assert takes_path <= named
    assert set(onnxdata.cases.__all__) - {"OutputResult"} <= named | {"get_backend",
                                                                      "Backend"}
    assert {"load", "read", "explore", "save", "write"} <= set(onnxdata.__all__)


@pytest.mark.parametrize("kind", KINDS)
def test_every_path_taker_refuses_in_time_and_memory(tmp_path: Path, kind: str) -> None:
    pytest.importorskip("onnxruntime", reason="onnxruntime is the optional extra [ort]")
    pytest.importorskip("onnx", reason="the reference backend is onnx's")
    good = tmp_path / "good"
    shutil.copytree(NODE / "test_abs", good)
    path = _paths(tmp_path)[kind]
    out = tmp_path / "results.json"
    calls = [(n, False, c) for n, c in LIBRARY] + [(n, True, c) for n, c in CLI]
    arg = json.dumps([calls, path, str(good), str(tmp_path / "new"),
                      str(good / "test_data_set_0" / "input_0.pb"), str(out)])
    done = subprocess.run([sys.executable, "-c", CHILD, arg], capture_output=True,
                          text=True, timeout=900, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    results: list[dict[str, Any]] = json.loads(out.read_text())
    shown = os.path.basename(path)
    bad = []
    for r in results:
        what = f"{r['name']}{' (cli)' if r['cli'] else ''}"
        said = r["stderr"] + r["stdout"]
        if r["cli"]:
            ok = r["error"] is None and r["status"] == 2 and "Traceback" not in said and \
                shown in said and r["stderr"].count("\n") <= 1 and \
                "cannot read: cannot read" not in said  # once, not each layer's prefix
        else:
            ok = r["error"] is not None and r["error"][2] and (
                shown in r["error"][1] or os.path.realpath(path) in r["error"][1])
        if not ok:
            bad.append(f"{what}: {r['error'] or (r.get('status'), said[-300:])}")
        elif r["seconds"] >= 2 or r["mib"] >= 200:
            bad.append(f"{what}: {r['seconds']:.2f} s, {r['mib']:.0f} MiB")
    assert not bad, f"{kind}:\n" + "\n".join(bad)
