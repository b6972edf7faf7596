"""What each fuzz harness does with one input, as plain functions.

Every target takes the fuzzer's bytes and either returns or raises. The only
exceptions a target may let out are onnxdata's own (``OnnxDataError``); the
runner (``run.py``) treats anything else as a crash. ``readings`` promises
never to raise at all, so its target lets nothing out. The same functions
replay ``tests/data/fuzz-regressions/`` under pytest (``tests/io/test_hostile_inputs.py``),
so they import nothing that is absent from either venv.

Besides crashing, a target fails (``Mismatch``, an AssertionError) when two
readers of the same bytes disagree:

- ``readings``: each reading's ``well_formed`` against upb's parse of its kind
  (``wire_model.check_well_formed``);
- ``read``: ``onnxdata.read`` (the mmap wire walker) against
  ``to_numpy(load(...))`` (protobuf's parser): both accept with equal values,
  or both refuse.
- ``wire``: the explorer's ``fit`` and ``wire.iter_fields`` against protobuf's
  parser; see ``tests/wire_model.py`` for the rules compared.
"""

from __future__ import annotations

import atexit
import contextlib
import shutil
import sys
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # tests/, for wire_model

import numpy as np  # noqa: E402

import onnxdata  # noqa: E402
from onnxdata.core.messages import KIND_NAMES  # noqa: E402
from onnxdata.errors import OnnxDataError, UnknownFieldsWarning  # noqa: E402

# Fuzzed bytes parse with unknown fields all the time; the hint is for people.
warnings.filterwarnings("ignore", category=UnknownFieldsWarning)

KINDS: tuple[str, ...] = tuple(KIND_NAMES)


class Mismatch(AssertionError):
    """Two readers of the same bytes disagree."""


def load_target(kind: str) -> Callable[[bytes], None]:
    """load -> problems -> validate (default and a small depth cap) -> to_numpy."""

    def target(data: bytes) -> None:
        try:
            message = onnxdata.load(data, kind)
        except OnnxDataError:
            return
        found = onnxdata.problems(message)
        onnxdata.problems(message, max_depth=3)
        try:
            onnxdata.validate(message)
        except OnnxDataError:
            if not found:
                raise Mismatch("validate raised but problems() found nothing") from None
        else:
            if found:
                raise Mismatch(f"problems() found {found[:3]} but validate passed")
        try:
            onnxdata.to_numpy(message)
        except OnnxDataError:
            return
        if found:
            raise Mismatch(f"to_numpy converted a value with problems {found[:3]}")

    target.__name__ = f"load_{kind}"
    return target


def readings_target(data: bytes) -> None:
    """The five readings, and the byte table of every well-formed one; never raises. Each
    reading is well formed exactly where upb parses the bytes as its kind (where upb is
    protobuf's parser: ``wire_model.check_well_formed``)."""
    import wire_model

    for r in onnxdata.readings(data):
        r.as_json()
        if r.well_formed:
            onnxdata.byte_table(data, r)
    onnxdata.readings(memoryview(data), max_depth=3)
    if wire_model.UPB:
        wire_model.check_well_formed(data)


_WORK = Path(tempfile.mkdtemp(prefix="onnxdata-fuzz-read-"))
atexit.register(shutil.rmtree, _WORK, ignore_errors=True)  # libFuzzer's exit skips it


def _slow(path: Path, kind: str) -> tuple[str, Any]:
    try:
        return "ok", onnxdata.to_numpy(onnxdata.load(path, kind), base_dir=path.parent)
    except OnnxDataError as exc:
        return type(exc).__name__, exc


def _fast(path: Path, kind: str) -> tuple[str, Any]:
    try:
        return "ok", onnxdata.read(path, kind)
    except OnnxDataError as exc:
        return type(exc).__name__, exc


def same_value(a: Any, b: Any, where: str = "value") -> None:
    """Raise Mismatch unless ``a`` and ``b`` are the same value: types, dtypes, shapes, bits."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)):
            raise Mismatch(f"{where}: {type(a).__name__} vs {type(b).__name__}")
        if a.dtype != b.dtype or a.shape != b.shape:
            raise Mismatch(f"{where}: {a.dtype}{a.shape} vs {b.dtype}{b.shape}")
        if a.dtype == object:
            if a.tolist() != b.tolist():
                raise Mismatch(f"{where}: strings differ")
        elif a.tobytes() != b.tobytes():
            raise Mismatch(f"{where}: {a.dtype} bits differ")
        return
    if type(a) is not type(b):
        raise Mismatch(f"{where}: {type(a).__name__} vs {type(b).__name__}")
    if isinstance(a, list):
        if len(a) != len(b):
            raise Mismatch(f"{where}: {len(a)} vs {len(b)} elements")
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            same_value(x, y, f"{where}[{i}]")
    elif isinstance(a, dict):
        if list(a) != list(b):
            raise Mismatch(f"{where}: keys {list(a)[:5]} vs {list(b)[:5]}")
        for k in a:
            same_value(a[k], b[k], f"{where}[{k!r}]")
    elif a != b:
        raise Mismatch(f"{where}: {a!r} vs {b!r}")


def _upb7_quirk(data: bytes) -> bool:
    import wire_model

    return wire_model.upb7_zero_in_group(data)


def read_compare(path: Path, kind: str) -> None:
    """``read`` and ``to_numpy(load())`` of one file agree: both succeed with equal values,
    or both refuse the bytes (DecodeError), or both refuse the value (another error)."""
    slow_status, slow = _slow(path, kind)
    fast_status, fast = _fast(path, kind)
    if (slow_status == "ok") != (fast_status == "ok"):
        raise Mismatch(f"as {kind}: to_numpy(load()) {slow_status} "
                       f"{'' if slow_status == 'ok' else slow}, read {fast_status} "
                       f"{'' if fast_status == 'ok' else fast}")
    if slow_status == "ok":
        same_value(slow, fast, kind)
    elif (slow_status == "DecodeError") != (fast_status == "DecodeError") and not (
            fast_status == "DecodeError" and _upb7_quirk(path.read_bytes())):
        # Bad bytes are a DecodeError for both; bad values some other error of ours.
        raise Mismatch(f"as {kind}: to_numpy(load()) raised {slow_status} ({slow}) but read "
                       f"{fast_status} ({fast})")


def read_target(data: bytes) -> None:
    """Write the bytes to a file and read it as every kind, compared with the slow path."""
    path = _WORK / "input.pb"
    path.write_bytes(data)
    for kind in KINDS:
        read_compare(path, kind)
    # kind=None: chosen as the explorer chooses; only our errors may come out, and so
    # from explore (of the path, with its byte table).
    with contextlib.suppress(OnnxDataError):
        onnxdata.read(path)
    with contextlib.suppress(OnnxDataError):
        onnxdata.explore(path).as_json()


def wire_target(data: bytes) -> None:
    """The explorer's fit and wire.iter_fields agree with protobuf on every kind."""
    import wire_model

    wire_model.check_iter_fields(data)
    for kind in KINDS:
        wire_model.check_fit(data, kind)


TARGETS: dict[str, Callable[[bytes], None]] = {
    **{f"load_{k}": load_target(k) for k in KINDS},
    "readings": readings_target,
    "read": read_target,
    "wire": wire_target,
}

#: Exceptions a target may raise for bad input; everything else is a finding.
ALLOWED: dict[str, tuple[type[BaseException], ...]] = {
    name: (OnnxDataError,) for name in TARGETS
}
ALLOWED["readings"] = ()
ALLOWED["wire"] = ()
ALLOWED["read"] = ()  # read_compare catches our errors itself; a leak is a finding


#: Bugs found, reported to their module's owners and not yet fixed: (name, test of the
#: exception and the input), e.g. ("numpy-shape", lambda exc, data: isinstance(exc,
#: ValueError) and "array is too big" in str(exc)).
#: The runner counts their hits apart from unexpected exceptions; delete an entry
#: once its fix lands, and the fuzzers and the replay then demand the fix.
#: Fixed so far: numpy's ValueError for shapes it cannot hold (convert d6bdf36,
#: fast_read 3a0b61d), overlong varints refused by wire.read_varint and
#: wire.decode.decode_varints.
KNOWN_BUGS: list[tuple[str, Callable[[BaseException, bytes], bool]]] = []


def known_bug(exc: BaseException, data: bytes) -> str | None:
    """The name of the reported, unfixed bug ``exc`` on ``data`` is, or None."""
    for name, test in KNOWN_BUGS:
        if test(exc, data):
            return name
    return None


#: The densify cap while fuzzing. The default (1 GiB) lets a 30-byte sparse tensor
#: densify to 1 GiB, twice in ``read`` (both readers) and again when compared, which
#: trips libFuzzer's RSS limit without being a bug; the cap's own refusal is the same
#: code path at any size.
DENSIFY_LIMIT = 16 << 20


def run_one(name: str, data: bytes) -> str | None:
    """Run target ``name`` on ``data``, swallowing only the exceptions it is allowed.

    Returns the name of the known bug it hit, if any; anything else unexpected raises.
    """
    previous = onnxdata.set_densify_limit(DENSIFY_LIMIT)
    try:
        TARGETS[name](data)
    except ALLOWED[name]:
        pass
    except Exception as exc:
        bug = known_bug(exc, data)
        if bug is None:
            raise
        return bug
    finally:
        onnxdata.set_densify_limit(previous)
    return None
