"""``Engine.run``'s compiled twin of its walk of a small optional or sequence of plain
tensors (``_walk.plain_container`` and ``Engine._plain_root``) gives what the engine's own
walk gives with the twin off: the value (dtypes, shapes, bytes, read-only flags), the data
type, the nested type, the problems, the state a caller reads after ``run`` (``last_seq``,
``strays``, ``merged``), and ``read``'s value or error, for ``values`` and not, any
``max_depth`` and ``strings``. On hypothesis-made containers (valid ones, and ones with
unknown fields, another elem_type, two data types, merged singular fields, a field given
twice, multi-byte tags, external data, invalid tensors, many tensors, mutated bytes), on
every bundled node-case file and every file under tests/data read as each of the two kinds,
and on the cases it must decline. (That the Python engine's walk itself is what the pure
Python build gives is ``tests/wire/test_walk_differential.py``'s.)"""

from __future__ import annotations

from collections.abc import Iterator
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
from onnxdata.engine.tensor import PLAIN_LIMITS
from onnxdata.wire import loops
from onnxdata.wire.source import Source
from tests.engine.test_plain_tensors import dataless_tensors, string_tensors, typed_tensors
from tests.walk_digest import error, outcome, value
from tests.wire.test_wire_differential import message_bytes, mutated
from tests.wire_bytes import ld, vint

needs_loop = pytest.mark.skipif(not loops.COMPILED, reason="the compiled walk is not built "
                                "(tests/wire/test_walk_compiled.py::test_the_loop_is_built)")
SETTINGS = settings(max_examples=300, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow,
                                           HealthCheck.function_scoped_fixture])
DATA = Path(__file__).resolve().parents[1] / "data"
KINDS = ("optional", "sequence")


def _float(n: int, code: int = TensorProto.FLOAT) -> bytes:
    """A valid plain tensor of ``n`` elements (FLOAT: 4 bytes each, else 8)."""
    return vint(1, n) + vint(2, code) + ld(9, bytes(n * (4 if code == TensorProto.FLOAT else 8)))


EXTERNAL_TENSOR = vint(1, 1) + vint(2, 1) + ld(13, ld(1, b"location") + ld(2, b"x.bin")) \
    + vint(14, 1)
SHORT_TENSOR = vint(1, 2) + vint(2, 1) + ld(9, bytes(7))


@st.composite
def tensors(draw: Any) -> bytes:
    """Most a valid float tensor; some of another storage, external, invalid, or any bytes."""
    return draw(st.one_of(
        st.integers(0, 3).map(_float), st.integers(0, 3).map(_float),
        st.integers(0, 3).map(lambda n: _float(n, TensorProto.INT64)),
        typed_tensors(), string_tensors(), dataless_tensors(),
        st.just(EXTERNAL_TENSOR), st.just(SHORT_TENSOR), message_bytes("TensorProto")))


@st.composite
def sequences(draw: Any) -> bytes:
    """A SequenceProto: most elem_type TENSOR and a few tensors; some another elem_type or
    none or two, a name (or two), another element field, an unknown field, a tag written in
    two bytes, the fields in another order, MIN_GROUPED tensors or one fewer."""
    count = draw(st.sampled_from([0, 1, 1, 2, 3, 5, MIN_GROUPED - 1, MIN_GROUPED]))
    if count >= MIN_GROUPED - 1:
        parts = [ld(3, _float(1))] * count
    else:
        parts = [ld(3, draw(tensors())) for _ in range(count)]
    elem_type = draw(st.sampled_from([1] * 8 + [0, 2, 3, None, 1 << 32 | 1]))
    if elem_type is not None:
        parts.insert(0, vint(2, elem_type))
        if draw(st.integers(0, 9)) == 0:
            parts.append(vint(2, elem_type))  # given twice
    extra = draw(st.sampled_from([None] * 6 + ["name", "names", "map", "unknown", "two-byte"]))
    if extra == "name":
        parts.insert(0, ld(1, b"seq"))
    elif extra == "names":
        parts += [ld(1, b"a"), ld(1, b"b")]
    elif extra == "map":
        parts.append(ld(6, b""))
    elif extra == "unknown":
        parts.append(vint(99, 1))
    elif extra == "two-byte" and parts:  # tensor_values' tag written in two bytes
        parts.append(b"\x9a\x00" + ld(3, _float(1))[1:])
    if draw(st.integers(0, 5)) == 0:
        parts = draw(st.permutations(parts))
    return b"".join(parts)


@st.composite
def optionals(draw: Any) -> bytes:
    """An OptionalProto: most elem_type TENSOR with a tensor, SEQUENCE with a sequence, or
    empty; some another or no elem_type, two values (merged, or of two kinds), a name, an
    unknown field, a map or optional value."""
    how = draw(st.sampled_from(["tensor", "tensor", "sequence", "sequence", "sequence",
                                "empty", "two", "other"]))
    parts: list[bytes] = []
    if how == "tensor":
        parts.append(ld(3, draw(tensors())))
    elif how == "sequence":
        parts.append(ld(5, draw(sequences())))
    elif how == "two":
        parts += [ld(draw(st.sampled_from([3, 5])), draw(tensors())),
                  ld(draw(st.sampled_from([3, 5])), draw(sequences()))]
    elif how == "other":
        parts.append(ld(draw(st.sampled_from([4, 6, 7])), b""))
    declared = {"tensor": 1, "sequence": 3}.get(how, draw(st.integers(0, 6)))
    if draw(st.integers(0, 6)) == 0:
        declared = draw(st.sampled_from([0, 1, 2, 3, 4, 5, 6, 99, -1, None]))
    if declared is not None:
        parts.insert(0, vint(2, declared & 0xFFFFFFFFFFFFFFFF))
    extra = draw(st.sampled_from([None] * 6 + ["name", "unknown"]))
    if extra == "name":
        parts.append(ld(1, b"opt"))
    elif extra == "unknown":
        parts.append(vint(99, 1))
    if draw(st.integers(0, 5)) == 0:
        parts = draw(st.permutations(parts))
    return b"".join(parts)


def _walk(data: bytes, kind: str, **engine: Any) -> dict[str, Any]:
    """What ``Engine.run`` of ``data`` as ``kind`` gives, and what it leaves behind."""
    eng = Engine(Source.of_buffer(data), **engine)
    try:
        got = eng.run(kind)
    except Exception as exc:  # the error is part of the answer
        return error(exc)
    return {"value": value(got.value), "code": got.code, "ntype": got.ntype,
            "summary": got.summary, "problems": [[p.path, p.message]
                                                 for p in eng.problems.result()],
            "last_seq": eng.last_seq, "strays": eng.strays, "merged": eng.merged,
            "merged_count": eng.merged_count, "deferred": eng.deferred}


def _everything(data: bytes, kind: str, folder: Path) -> dict[str, Any]:
    path = folder / "value.pb"
    path.write_bytes(data)
    out: dict[str, Any] = {}
    for values in (True, False):
        for max_depth in (100, 2, 1):
            out[f"run {values} {max_depth}"] = _walk(data, kind, values=values,
                                                     max_depth=max_depth)
    out["summaries"] = _walk(data, kind, values=True, summaries=True)
    out["capped"] = _walk(data, kind, values=True, max_problems=1)
    out["read"] = outcome(lambda: onnxdata.read(path, kind))
    out["read str"] = outcome(lambda: onnxdata.read(path, kind, strings="str"))
    out["read copy"] = outcome(lambda: onnxdata.read(path, kind, copy=True))
    return out


@pytest.fixture
def taken(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[bool]]:
    """Whether each ``Engine._plain_root`` call answered (True) or declined."""
    seen: list[bool] = []
    real = Engine._plain_root

    def spy(self: Engine, optional: bool) -> Any:
        got = real(self, optional)
        seen.append(got is not None)
        return got

    monkeypatch.setattr(Engine, "_plain_root", spy)
    yield seen


def _compare(data: bytes, kind: str, folder: Path) -> None:
    with_twin = _everything(data, kind, folder)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(engine_module, "_plain_container", None)
        without = _everything(data, kind, folder)
    assert with_twin == without


@needs_loop
@SETTINGS
@given(st.one_of(sequences(), sequences(), mutated(sequences())))
def test_a_sequence_reads_as_the_engine_reads_it(tmp_path: Path, data: bytes) -> None:
    _compare(data, "sequence", tmp_path)


@needs_loop
@SETTINGS
@given(st.one_of(optionals(), optionals(), mutated(optionals())))
def test_an_optional_reads_as_the_engine_reads_it(tmp_path: Path, data: bytes) -> None:
    _compare(data, "optional", tmp_path)


@needs_loop
@SETTINGS
@given(st.one_of(message_bytes("SequenceProto"), message_bytes("OptionalProto"),
                 st.binary(max_size=64)))
def test_any_bytes_read_as_the_engine_reads_them(tmp_path: Path, data: bytes) -> None:
    for kind in KINDS:
        _compare(data, kind, tmp_path)


@needs_loop
def test_every_file_under_tests_data(tmp_path: Path, taken: list[bool]) -> None:
    """Every bundled node case and every corpus file (hostile, fuzz regressions, dtypes,
    ORT's), read as an optional and as a sequence."""
    files = sorted(p for p in DATA.rglob("*.pb") if p.stat().st_size <= 1 << 16)
    assert len(files) > 400
    for path in files:
        for kind in KINDS:
            _compare(path.read_bytes(), kind, tmp_path)
    assert taken.count(True) > 100  # (the node cases' optionals and sequences)


NO_TWIN = [
    pytest.param(vint(2, 1) + ld(3, _float(1)) + vint(99, 1), "sequence", id="unknown-field"),
    pytest.param(vint(2, 2) + ld(3, _float(1)), "sequence", id="another-elem-type"),
    pytest.param(ld(3, _float(1)), "sequence", id="no-elem-type"),
    pytest.param(vint(2, 1) + vint(2, 1) + ld(3, _float(1)), "sequence", id="elem-type-twice"),
    pytest.param(vint(2, 1) + ld(3, _float(1)) + ld(3, _float(1, TensorProto.INT64)),
                 "sequence", id="two-data-types"),
    pytest.param(vint(2, 1) + ld(3, _float(1)) * MIN_GROUPED, "sequence", id="grouped"),
    pytest.param(vint(2, 1) + ld(3, EXTERNAL_TENSOR), "sequence", id="external"),
    pytest.param(vint(2, 1) + ld(3, SHORT_TENSOR), "sequence", id="invalid-tensor"),
    pytest.param(vint(2, 1) + b"\x9a\x00" + ld(3, _float(1))[1:], "sequence", id="two-byte-tag"),
    pytest.param(vint(2, 1) + ld(3, _float(1))[:-1], "sequence", id="cut-off"),
    pytest.param(vint(2, 3) + ld(5, vint(2, 1) + ld(3, _float(1))) * 2, "optional",
                 id="merged-sequence"),
    pytest.param(vint(2, 1) + ld(3, _float(1)) * 2, "optional", id="merged-tensor"),
    pytest.param(vint(2, 1) + ld(5, vint(2, 1)), "optional", id="elem-type-not-its-value"),
    pytest.param(vint(2, 3) + ld(3, _float(1)) + ld(5, vint(2, 1)), "optional", id="two-values"),
    pytest.param(ld(3, _float(1)), "optional", id="optional-no-elem-type"),
    pytest.param(vint(2, 0), "optional", id="undefined-elem-type"),
    pytest.param(vint(2, 6), "optional", id="elem-type-out-of-range"),
    pytest.param(vint(2, 5) + ld(7, vint(2, 1)), "optional", id="optional-of-optional"),
    pytest.param(vint(2, 1) + ld(3, EXTERNAL_TENSOR), "optional", id="optional-external"),
    pytest.param(vint(2, 3) + ld(5, vint(2, 1) + ld(3, SHORT_TENSOR)), "optional",
                 id="optional-invalid-tensor"),
]


@needs_loop
@pytest.mark.parametrize(("data", "kind"), NO_TWIN)
def test_what_the_twin_declines(data: bytes, kind: str, tmp_path: Path,
                                taken: list[bool]) -> None:
    _compare(data, kind, tmp_path)
    assert taken and not any(taken)


TWIN = [
    pytest.param(vint(2, 1) + ld(3, _float(2)) * 3, "sequence", id="three-tensors"),
    pytest.param(ld(1, b"s") + vint(2, 1), "sequence", id="empty-named"),
    pytest.param(vint(2, 1) + ld(3, _float(1)) * (MIN_GROUPED - 1), "sequence", id="most"),
    pytest.param(vint(2, 1) + ld(3, vint(1, 1) + vint(2, 8) + ld(6, b"\xff")), "sequence",
                 id="a-string"),
    pytest.param(vint(2, 3) + ld(5, vint(2, 1) + ld(3, _float(1))), "optional",
                 id="optional-sequence"),
    pytest.param(vint(2, 1) + ld(3, _float(4)), "optional", id="optional-tensor"),
    pytest.param(vint(2, 4), "optional", id="empty-optional"),
]


@needs_loop
@pytest.mark.parametrize(("data", "kind"), TWIN)
def test_what_the_twin_reads(data: bytes, kind: str, tmp_path: Path,
                             taken: list[bool]) -> None:
    _compare(data, kind, tmp_path)
    assert True in taken
    with pytest.MonkeyPatch.context() as m:  # not where the walk must say what it found
        m.setattr(Engine, "_plain_root", lambda *args: pytest.fail("the twin ran"))
        for engine in ({"summaries": True}, {"max_depth": 1}):
            Engine(Source.of_buffer(data), values=True, **engine).run(kind)


@needs_loop
def test_the_twin_reads_only_bytes_in_memory(tmp_path: Path) -> None:
    path = tmp_path / "s.pb"
    path.write_bytes(vint(2, 1) + ld(3, _float(1)))
    with Source.of_file(str(path), "pread") as src:
        assert src.in_memory() is None
        assert Engine(src, values=True)._plain_root(False) is None
    assert loops.walk_loop is not None
    data = path.read_bytes()
    limits = (MIN_GROUPED - 1, *PLAIN_LIMITS)
    assert loops.walk_loop.plain_container(data, len(data) + 1, False, *limits) is None
    assert loops.walk_loop.plain_container(data + b"\xff", len(data), False, *limits) \
        == loops.walk_loop.plain_container(data, len(data), False, *limits) is not None
