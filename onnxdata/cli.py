"""The ``onnxdata`` command line."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from onnxdata.errors import OnnxDataError
from onnxdata.files import load
from onnxdata.messages import KIND_NAMES


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="onnxdata", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    show = sub.add_parser("show", help="print a message file as protobuf text")
    show.add_argument("file")
    show.add_argument("--kind", choices=KIND_NAMES, default="sequence")
    args = parser.parse_args(argv)
    try:
        message = load(args.file, args.kind)
    except (OnnxDataError, OSError) as exc:
        print(f"onnxdata: {exc}", file=sys.stderr)
        return 2
    print(message)
    return 0
