"""``onnxdata.cli.console.message_lines``: a message of several lines printed as indented
lines, with control characters escaped, a name's line break included."""

from __future__ import annotations

from onnxdata.cli.console import message_lines


def test_one_line_is_printable_as_before() -> None:
    assert message_lines("plain") == "plain"
    assert message_lines("a\x1b[31mred") == "a\\x1b[31mred"


def test_later_lines_are_indented_under_the_first_and_blank_ones_dropped() -> None:
    problems = "f.pb: 2 problems:\n  - dims: wrong\n  - data_type: wrong"
    assert message_lines(problems) == problems
    ort = "Got invalid dimensions\n index: 0 Got: 2\n Please fix it.\n"
    assert message_lines(ort) == "Got invalid dimensions\n  index: 0 Got: 2\n  Please fix it."
    assert message_lines("a\n\tb\x07") == "a\n  b\\x07"


def test_a_line_break_in_a_name_is_the_names_and_stays_escaped() -> None:
    name = "/tmp/odd\ncase/test_data_set_0"
    message = f"cannot read the set: {name}/input_0.pb: 1 problem:\n  - dims: wrong"
    assert message_lines(message, [name, "/tmp/odd\ncase"]) == \
        "cannot read the set: /tmp/odd\\ncase/test_data_set_0/input_0.pb: 1 problem:\n" \
        "  - dims: wrong"
    assert message_lines(message).startswith("cannot read the set: /tmp/odd\n  case/")
