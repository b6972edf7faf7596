"""A differential fuzz of random mutants: our readings against upb, and the compiled walk
against the Python walk (issue 43).

    python tests/fuzz/upb_diff.py --mutants 100000 --seed 1 --out compiled.jsonl
    ONNXDATA_PURE_PYTHON=1 python tests/fuzz/upb_diff.py --mutants 100000 --seed 1 --out pure.jsonl
    python tests/fuzz/upb_diff.py --compare pure.jsonl compiled.jsonl

Mutants are made from the fuzz seeds (``run.seeds()``: every .pb of tests/data up to
64 KiB, and a few made values) by a seeded random mutator: byte flips, sets, inserts,
deletes, truncations and duplications, and edits aimed at upb's checks (a varint or a
length padded to 2 to 10 bytes, a field-0 tag, a stray or mismatched end-group, groups
around some fields or nested 90 to 101 deep, wire types 6 and 7). The same seed gives
the same mutants in any process. For each mutant: every reading (``as_json``), upb's
parse of each kind, ``read`` of each kind and ``load`` + ``validate`` of each kind
(value digest, or error class and text), and for one mutant in 8 ``explore``'s JSON.

Counted, and printed on the last line: readings well formed where upb refuses their
kind (``wire_model.check_well_formed``'s rule; upb 7's field 0 in a group aside),
readings not well formed where upb takes their kind, and foreign exceptions (anything
but onnxdata's family out of read, load, validate and explore; anything at all out of
readings). ``--out`` writes one digest per mutant; ``--compare`` says whether two runs
(the Python walk and the compiled one) gave the same digests, errors included.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
import tempfile
import traceback
import warnings
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent), str(HERE.parents[1])]

import onnxdata  # noqa: E402
from onnxdata.errors import OnnxDataError, UnknownFieldsWarning  # noqa: E402

warnings.filterwarnings("ignore", category=UnknownFieldsWarning)
KINDS = ("sequence", "optional", "map", "tensor", "sparse_tensor")
MAX_SEED = 1 << 16


def mutate(rng: random.Random, seed: bytes) -> bytes:
    data = bytearray(seed)
    for _ in range(rng.choice((1, 1, 1, 2, 2, 3, 4))):
        i = rng.randint(0, len(data))
        op = rng.choice(("flip", "set", "insert", "delete", "truncate", "dup", "length",
                         "pad", "zero", "egroup", "group", "deep", "wt67"))
        if op == "insert" or not data:
            data[i:i] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 4)))
        elif op == "flip":
            data[min(i, len(data) - 1)] ^= 1 << rng.randrange(8)
        elif op == "set":
            data[min(i, len(data) - 1)] = rng.choice((0, 1, 0x7F, 0x80, 0xFF, 0x0A, 3, 4))
        elif op == "delete":
            del data[i:i + rng.randint(1, 4)]
        elif op == "truncate":
            del data[i:]
        elif op == "dup":
            j = rng.randint(i, len(data))
            data[j:j] = data[i:j]
        elif op in ("length", "pad"):  # a one-byte length after a LEN tag, or any varint
            j = next((j for j in range(i, len(data) - 1) if data[j] & 7 == 2
                      and data[j] < 0x80 and data[j + 1] < 0x80), None) if op == "length" \
                else next((j - 1 for j in range(i, len(data)) if data[j] < 0x80), None)
            if j is not None:
                value, width = data[j + 1], rng.randint(2, 10)
                data[j + 1:j + 2] = bytes([value | 0x80]) + b"\x80" * (width - 2) + b"\0"
        elif op == "zero":
            data[i:i] = rng.choice((b"\x00\x01", b"\x02\x00", b"\x03\x04", b"\x05\0\0\0\0"))
        elif op in ("group", "deep"):
            j = rng.randint(i, len(data))
            n = rng.randint(1, 20)
            depth = 1 if op == "group" else rng.randint(90, 101)
            close = n if rng.randrange(4) else n + 1
            data[j:j] = bytes([close << 3 | 4]) * depth
            data[i:i] = bytes([n << 3 | 3]) * depth
        elif op == "egroup":
            data[i:i] = bytes([rng.randint(1, 15) << 3 | 4])
        else:
            data[i:i] = bytes([rng.choice((6, 7, 14, 15))])
    return bytes(data)


class Foreign(Exception):
    """An exception from outside onnxdata's family came out of a public call."""


def guarded(what: str, fn: Any, allowed: tuple[type[BaseException], ...] = (OnnxDataError,)
            ) -> Any:
    import walk_digest

    try:
        return walk_digest.value(fn())
    except allowed as exc:
        return walk_digest.error(exc)
    except Exception as exc:
        raise Foreign(f"{what}: {type(exc).__name__}: {exc}\n{traceback.format_exc()}") from exc


def one(data: bytes, path: Path, index: int) -> tuple[dict[str, Any], list[str], list[str]]:
    """The digest of one mutant, the disagreements with upb, and the foreign exceptions."""
    import wire_model

    out: dict[str, Any] = {}
    upb_refuses, foreign = [], []
    try:
        found = onnxdata.readings(data)
        out["readings"] = [r.as_json() for r in found]
    except Exception as exc:  # readings promises never to raise
        return out, [], [f"readings: {type(exc).__name__}: {exc}"]
    path.write_bytes(data)
    for r in found:
        takes = wire_model.proto_parse(data, wire_model.kind_class(r.kind_name)) is not None
        if takes != r.well_formed and not (takes and wire_model.upb7_zero_in_group(data)):
            upb_refuses.append(f"{r.kind_name}: upb {'takes' if takes else 'refuses'}, "
                               f"reading {'' if r.well_formed else 'not '}well formed")
    for kind in KINDS:
        for name, fn in ((f"read[{kind}]", lambda k=kind: onnxdata.read(path, k)),
                         (f"validate[{kind}]",
                          lambda k=kind: onnxdata.validate(onnxdata.load(data, k)))):
            try:
                out[name] = guarded(name, fn)
            except Foreign as exc:
                foreign.append(str(exc))
    if index % 8 == 0:
        try:
            out["explore"] = guarded("explore", lambda: onnxdata.explore(path).as_json())
        except Foreign as exc:
            foreign.append(str(exc))
    return out, upb_refuses, foreign


def run(mutants: int, seed: int, out_path: Path | None) -> int:
    import run as fuzz_run

    seeds = [s for s in fuzz_run.seeds() if len(s) <= MAX_SEED]
    rng = random.Random(seed)
    folder = Path(tempfile.mkdtemp(prefix="onnxdata-upb-diff-"))
    path = folder / "input.pb"
    refused = taken = foreign = formed = values = 0
    sink = out_path.open("w") if out_path else None
    for index in range(mutants):
        data = mutate(rng, rng.choice(seeds))
        digest, disagreements, exceptions = one(data, path, index)
        formed += any(r["well_formed"] for r in digest.get("readings", ()))
        values += any(k.startswith("read[") and not (isinstance(v, dict) and "error" in v)
                      for k, v in digest.items())
        for d in disagreements:
            if "upb refuses" in d:
                refused += 1
            else:
                taken += 1
            print(f"mutant {index}: {d}: {data[:80].hex()}", flush=True)
        for e in exceptions:
            foreign += 1
            print(f"mutant {index}: foreign exception {e}: {data[:80].hex()}", flush=True)
        if sink:
            body = json.dumps(digest, sort_keys=True).replace(str(path), "<input>").encode()
            sink.write(f"{index} {hashlib.sha1(data).hexdigest()} "
                       f"{hashlib.sha1(body).hexdigest()}\n")
        if index and index % 10000 == 0:
            print(f"... {index} mutants", flush=True)
    if sink:
        sink.close()
    path.unlink(missing_ok=True)
    folder.rmdir()
    print(f"{mutants} mutants (seed {seed}, {len(seeds)} seeds; {formed} with a well-formed "
          f"reading, {values} with a value read): {refused} readings well formed where upb "
          f"refuses, {taken} not well formed where upb takes, {foreign} foreign exceptions")
    return 1 if refused or taken or foreign else 0


def compare(a: Path, b: Path) -> int:
    left, right = a.read_text().splitlines(), b.read_text().splitlines()
    differ = [x.split()[0] for x, y in zip(left, right, strict=False) if x != y]
    print(f"{a.name} vs {b.name}: {len(left)} and {len(right)} mutants, "
          f"{len(differ)} digests differ{': ' + ', '.join(differ[:20]) if differ else ''}")
    return 1 if differ or len(left) != len(right) else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mutants", type=int, default=10000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--compare", nargs=2, type=Path)
    args = ap.parse_args()
    if args.compare:
        return compare(*args.compare)
    return run(args.mutants, args.seed, args.out)


if __name__ == "__main__":
    sys.exit(main())
