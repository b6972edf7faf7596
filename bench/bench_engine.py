"""Timing (not a test): the CLI's ``validate`` and ``explore --json`` on big files, against
``read()`` of the same file, each in its own process (time and peak RSS from wait4).

Files, built in a temporary folder (or --dir) and deleted after:

- ``seq-1m-int64``: a sequence of 1,000,000 ``[2]`` int64 tensors (onnxdata.write);
- ``seq-2000-float``: a sequence of 2,000 ``[10, 1000]`` float32 tensors (onnxdata.write);
- ``string-10mb``: one STRING tensor of 10 MB (1.1 million strings);
- ``optionals-5mb``: a sequence of 1.25 million empty optionals (5 MB);
- ``seq-64-vectors``: a sequence of 64 float32 vectors of 16 MiB (1 GiB): the bogus
  readings see the tensors' bytes as packed dims and must not decode them all;
- ``seq-3gib``: a sequence of 3,072 float32 tensors of 1 MiB, only with --big or
  ONNXDATA_BIG=1 (it writes 3 GiB).

Targets (issue 9): exit 0 and valid, peak RSS < 200 MiB, time within 2x read();
the STRING tensor's explore < 3 s; the optionals' readings < 5 s with output < 1 MB.

    .venv/bin/python bench/bench_engine.py [--big] [--dir DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

import onnxdata
from onnxdata.core.messages import SequenceProto, TensorProto
from onnxdata.wire.format import encode_varint

MIB = 1 << 20


def write_value(value: Any, path: Path) -> None:
    """onnxdata.write, in one place (its argument order is changing)."""
    onnxdata.write(value, path)


def build_seq_1m(path: Path) -> None:
    write_value([np.arange(2, dtype=np.int64)] * 1_000_000, path)


def build_seq_2000(path: Path) -> None:
    write_value([np.ones((10, 1000), np.float32)] * 2000, path)


def build_strings(path: Path) -> None:
    t = TensorProto(data_type=TensorProto.STRING, name="s")
    n = 1_100_000
    t.dims.append(n)
    t.string_data.extend([b"word%04d" % (i % 10000) for i in range(n)])
    path.write_bytes(t.SerializeToString())


def build_optionals(path: Path) -> None:
    empty = b"\x10\x00"  # OptionalProto(elem_type=UNDEFINED)
    element = b"\x3a" + encode_varint(len(empty)) + empty  # optional_values
    n = 5 * 1_000_000 // len(element)
    with open(path, "wb") as fh:
        fh.write(b"\x10\x05")  # elem_type OPTIONAL
        fh.write(element * n)


def build_vectors(path: Path) -> None:
    with open(path, "wb") as fh:  # written a tensor at a time: the builder stays small
        fh.write(SequenceProto(elem_type=SequenceProto.TENSOR).SerializeToString())
        vector = np.random.default_rng(0).random(4 * MIB, dtype=np.float32)  # in [0, 1)
        for _ in range(64):
            tensor = TensorProto(data_type=TensorProto.FLOAT, raw_data=vector.tobytes())
            tensor.dims.append(vector.size)
            body = tensor.SerializeToString()
            fh.write(b"\x1a" + encode_varint(len(body)) + body)


def build_3gib(path: Path) -> None:
    each = MIB
    head = SequenceProto(name="big", elem_type=SequenceProto.TENSOR).SerializeToString()
    tensor = TensorProto(data_type=TensorProto.FLOAT)
    tensor.dims.append(each // 4)
    header = tensor.SerializeToString() + b"\x4a" + encode_varint(each)
    block = np.ones(each // 4, np.float32).tobytes()
    element = b"\x1a" + encode_varint(len(header) + each) + header + block
    with open(path, "wb") as fh:
        fh.write(head)
        for _ in range(3 * 1024):
            fh.write(element)


READ = "import sys, onnxdata; v = onnxdata.read(sys.argv[1], sys.argv[2]); print('read')"
READINGS = ("import sys, onnxdata; from onnxdata.explorer.readings import open_buffer; "
            "rs = onnxdata.readings(open_buffer(sys.argv[1])); "
            "print(sum(len(str(r.as_json())) for r in rs))")


def run(args: list[str]) -> tuple[int, float, float, str]:
    """Exit code, seconds, peak RSS (MiB) and stdout of one child process."""
    start = time.perf_counter()
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - start
        out.seek(0)
        text = out.read().decode("utf-8", "replace")
    code = os.waitstatus_to_exitcode(status)
    return code, seconds, usage.ru_maxrss / 1024, text


def verdict_of(command: str, code: int, text: str) -> str:
    if command == "validate":
        return "valid" if ": valid" in text else "invalid" if "invalid" in text else "unreadable"
    if command == "explore":
        try:
            result = json.loads(text)
        except ValueError:
            return "no JSON"
        chosen = next((r for r in result["readings"] if r["valid"]), None)
        return f"valid {chosen['kind']}" if chosen else "no valid reading"
    return "ok" if code == 0 else "error"


CASES: list[tuple[str, Callable[[Path], None], str]] = [
    ("seq-1m-int64", build_seq_1m, "sequence"),
    ("seq-2000-float", build_seq_2000, "sequence"),
    ("string-10mb", build_strings, "tensor"),
    ("optionals-5mb", build_optionals, "sequence"),
    ("seq-64-vectors", build_vectors, "sequence"),
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dir", help="folder for the files (default: a temporary one)")
    parser.add_argument("--big", action="store_true",
                        help="also the 3 GiB sequence (or ONNXDATA_BIG=1)")
    parser.add_argument("--only", help="run only the case with this name")
    parser.add_argument("--build", nargs=2, metavar=("NAME", "PATH"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    builders = {name: build for name, build, _ in [*CASES, ("seq-3gib", build_3gib, "")]}
    if args.build:  # in a child of its own, so the children timed later do not inherit its RSS
        builders[args.build[0]](Path(args.build[1]))
        return 0
    cases = list(CASES)
    if args.big or os.environ.get("ONNXDATA_BIG") == "1":
        cases.append(("seq-3gib", build_3gib, "sequence"))
    if args.only:
        cases = [c for c in cases if c[0] == args.only]
    folder = Path(tempfile.mkdtemp(prefix="bench_engine_", dir=args.dir))
    py = sys.executable
    print(f"{'file':16} {'size':>9} {'command':16} {'exit':>4} {'verdict':22} {'RSS MiB':>8} "
          f"{'s':>7} {'x read':>7}")
    try:
        for name, _build, kind in cases:
            path = folder / f"{name}.pb"
            subprocess.run([py, __file__, "--build", name, str(path)], check=True)
            size = f"{path.stat().st_size / MIB:.1f}M"
            code, read_s, read_rss, _ = run([py, "-c", READ, str(path), kind])
            print(f"{name:16} {size:>9} {'read()':16} {code:>4} {'':22} {read_rss:8.0f} "
                  f"{read_s:7.2f} {1:7.2f}", flush=True)
            commands = [("validate", [py, "-m", "onnxdata", "validate", str(path)]),
                        ("explore", [py, "-m", "onnxdata", "explore", "--json", str(path)]),
                        ("readings", [py, "-c", READINGS, str(path)])]
            for label, argv in commands:
                code, seconds, rss, text = run(argv)
                verdict = verdict_of(label, code, text)
                if label == "readings":
                    verdict = f"{int(text.strip().splitlines()[-1]) / 1e6:.2f} MB as JSON" \
                        if code == 0 else "error"
                print(f"{'':16} {'':>9} {label:16} {code:>4} {verdict:22} {rss:8.0f} "
                      f"{seconds:7.2f} {seconds / read_s:7.2f}", flush=True)
            path.unlink()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
