"""``Engine._plain_tensors``, the short way through a sequence of a few plain tensors: for
any sequence it gives what ``Engine.sequence``'s whole walk gives (values, problems,
summaries, the declared-type check that reads its element type, errors), and it is what
runs for the common valid one. And ``Engine.optional``, which checks its elem_type only
where it may be wrong, finds what validate finds."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import onnxdata
from onnxdata import TensorProto
from onnxdata.engine import engine as engine_module
from onnxdata.engine.by_layout import MIN_GROUPED
from onnxdata.engine.engine import Engine
from onnxdata.explorer.readings import reading
from onnxdata.io import message_checks, message_values
from onnxdata.rules import validation
from tests.walk_digest import outcome
from tests.wire_bytes import ld, vint

SETTINGS = settings(max_examples=200, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow,
                                           HealthCheck.function_scoped_fixture])


def _tensor(code: int, n: int, good: bool = True) -> bytes:
    """A plain tensor of ``n`` elements of data type ``code`` (FLOAT, INT64 or STRING);
    ``good=False``: one value or byte too many."""
    if code == TensorProto.STRING:
        return vint(1, n) + vint(2, code) + b"".join(ld(6, b"s") for _ in range(n + (not good)))
    width = 4 if code == TensorProto.FLOAT else 8
    return vint(1, n) + vint(2, code) + ld(9, bytes(n * width + (not good)))


@st.composite
def sequences(draw: Any) -> bytes:
    """Sequences of tensors: most a few valid plain ones of one data type; some of two
    data types, an invalid one, another elem_type, a name, another element field, a field
    no sequence has, many elements, none."""
    codes = draw(st.lists(st.sampled_from([TensorProto.FLOAT] * 4 + [TensorProto.INT64,
                                                                      TensorProto.STRING]),
                          min_size=1, max_size=2, unique=True))
    count = draw(st.sampled_from([0, 1, 2, 3, 5, MIN_GROUPED]))
    parts = [ld(3, _tensor(draw(st.sampled_from(codes)), draw(st.integers(0, 3)),
                           draw(st.sampled_from([True] * 9 + [False]))))
             for _ in range(count)]
    elem_type = draw(st.sampled_from([1] * 6 + [2, 0, None]))
    if elem_type is not None:
        parts.insert(0, vint(2, elem_type))
    extra = draw(st.sampled_from([None] * 5 + ["name", "map", "unknown"]))
    if extra == "name":
        parts.insert(0, ld(1, b"seq"))
    elif extra == "map":
        parts.append(ld(6, b""))
    elif extra == "unknown":
        parts.append(vint(99, 1))
    return b"".join(parts)


def _everything(data: bytes, folder: Path) -> dict[str, Any]:
    path = folder / "value.pb"
    path.write_bytes(data)
    opt = folder / "value.opt"
    opt.write_bytes(vint(2, 3) + ld(5, data))  # the sequence inside an optional
    r = reading(data, "sequence")
    message: Any = None
    with contextlib.suppress(onnxdata.DecodeError):
        message = onnxdata.load(data, "sequence")
    return {"reading": (r.well_formed, r.valid, r.summary, [str(p) for p in r.problems]),
            "read": outcome(lambda: onnxdata.read(path, "sequence")),
            "deep": outcome(lambda: onnxdata.read(path, "sequence", max_depth=0)),
            "optional": outcome(lambda: onnxdata.read(opt, "optional")),
            "to_numpy": None if message is None else
            outcome(lambda: message_values.to_numpy(message))}


@SETTINGS
@given(sequences())
def test_the_short_way_says_what_the_whole_walk_says(tmp_path: Path, data: bytes) -> None:
    fast = _everything(data, tmp_path)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(Engine, "_plain_tensors", lambda *args: None)
        m.setattr(engine_module, "_plain_container", None)  # (its twin, at the root)
        slow = _everything(data, tmp_path)
    assert fast == slow


def test_the_short_way_reads_the_common_sequence(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    taken: list[bool] = []
    real = Engine._plain_tensors

    def spy(self: Engine, *args: Any) -> Any:
        got = real(self, *args)
        taken.append(got is not None)
        return got

    monkeypatch.setattr(Engine, "_plain_tensors", spy)
    monkeypatch.setattr(engine_module, "_plain_container", None)  # (else its twin reads it)
    path = tmp_path / "s.pb"
    path.write_bytes(vint(2, 1) + ld(3, _tensor(TensorProto.FLOAT, 2)) * 3)
    got = onnxdata.read(path, "sequence")
    assert [a.tolist() for a in got] == [[0.0, 0.0]] * 3
    assert not any(a.flags.writeable for a in got)
    path.write_bytes(vint(2, 1) + ld(3, _tensor(TensorProto.FLOAT, 2))
                     + ld(3, _tensor(TensorProto.INT64, 2)))  # two data types: the walk says
    with pytest.raises(onnxdata.ValidationError, match="INT64 differs from FLOAT"):
        onnxdata.read(path, "sequence")
    assert taken == [True, False]


@st.composite
def optionals(draw: Any) -> bytes:
    """Optionals: any elem_type (or none), none, one or two value fields, of any kind, some
    given twice (merged), some with an unknown field."""
    values = {3: ld(3, _tensor(TensorProto.FLOAT, 2)), 5: ld(5, vint(2, 1)),
              6: ld(6, vint(1, 7)), 7: ld(7, vint(2, 0))}
    fields = draw(st.lists(st.sampled_from(sorted(values)), max_size=3))
    parts = [values[n] for n in fields]
    elem_type = draw(st.sampled_from([None, 0, 1, 2, 3, 4, 5, 6, 99]))
    if elem_type is not None:
        parts.insert(0, vint(2, elem_type))
    if draw(st.booleans()):
        parts.append(vint(99, 1))
    return b"".join(parts)


@SETTINGS
@given(optionals())
def test_an_optional_says_what_validate_says(data: bytes) -> None:
    message = onnxdata.load(data, "optional")
    assert message_checks.problems(message) == validation.problems_reference(message)
    assert message_checks.problems(message, max_problems=1) == \
        validation.problems_reference(message, max_problems=1)
