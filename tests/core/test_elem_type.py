"""``core.messages.ElemType`` is SequenceProto's and OptionalProto's DataType enum, name for
name and number for number, and the kind tables are keyed by it."""

from __future__ import annotations

import pytest

from onnxdata.core.messages import (
    ELEM_FIELDS,
    ELEM_TYPE_OF_KIND,
    KIND_OF_ELEM_TYPE,
    OPTIONAL_FIELDS,
    ElemType,
    MapProto,
    OptionalProto,
    SequenceProto,
    elem_type_name,
)


@pytest.mark.parametrize("message", [SequenceProto, OptionalProto])
def test_elem_type_is_the_generated_enum(message: type[SequenceProto | OptionalProto]) -> None:
    generated = {v.name: v.number for v in message.DESCRIPTOR.enum_types_by_name["DataType"].values}
    assert {e.name: e.value for e in ElemType} == generated


def test_kind_tables_cover_every_code_but_undefined() -> None:
    assert set(KIND_OF_ELEM_TYPE) == set(ElemType) - {ElemType.UNDEFINED}
    assert all(type(code) is ElemType for code in ELEM_TYPE_OF_KIND.values())
    assert {ELEM_TYPE_OF_KIND[k]: k for k in ELEM_TYPE_OF_KIND} == KIND_OF_ELEM_TYPE
    assert KIND_OF_ELEM_TYPE[ElemType.MAP] == "map"


def test_a_message_elem_type_compares_equal() -> None:
    s = SequenceProto(elem_type=ElemType.MAP)
    assert s.elem_type == ElemType.MAP
    assert int(ElemType.MAP) == 4
    assert MapProto().values.elem_type == ElemType.UNDEFINED


def test_elem_type_name() -> None:
    assert elem_type_name(2) == "SPARSE_TENSOR"
    assert elem_type_name(0) == "UNDEFINED"
    assert elem_type_name(9) == "9"
    assert elem_type_name(-1) == "-1"


def test_field_tables_name_real_fields() -> None:
    for code, kind in KIND_OF_ELEM_TYPE.items():
        assert SequenceProto.DESCRIPTOR.fields_by_name[ELEM_FIELDS[code]].message_type.name \
            == OptionalProto.DESCRIPTOR.fields_by_name[OPTIONAL_FIELDS[code]].message_type.name
        assert ELEM_FIELDS[code] == f"{kind}_values"
