"""A long byte table as aligned plain lines, laid out as the rich table of a short one.

rich lays a table out cell by cell, measuring and wrapping each: about a millisecond a
row, so ``onnxdata explore FILE --limit all`` of a 1 MB file (160,000 rows) took minutes.
Past :data:`PLAIN_ROWS` rows the CLI prints the table with this instead: each column
padded to its widest cell, three spaces between columns (rich's SIMPLE_HEAD table with
``pad_edge=False``), the header and its rule as rich draws them, no colour and no wrapping
(a long value runs on, one row a line). Every cell goes through ``console.printable``, line
breaks included, so a row is one line whatever the file holds.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from onnxdata.cli.console import printable, write_text

__all__ = ["PLAIN_ROWS", "plain_table_lines", "print_plain_table"]

#: Tables of more rows than this are printed as plain lines (fewer: rich, with colour).
PLAIN_ROWS = 1000
_GAP = "   "
#: Lines written at a time: the output streams while a long table is formatted.
_BATCH = 10_000


def plain_table_lines(header: Sequence[str], rows: Sequence[Sequence[str]]) -> Iterable[str]:
    """``header``, its rule and ``rows`` as lines (no line ends), columns aligned."""
    cells = [[printable(c) for c in row] for row in rows]
    widths = [max([len(h), *(len(row[i]) for row in cells)]) for i, h in enumerate(header)]
    last = len(header) - 1

    def line(values: Sequence[str]) -> str:
        padded = [v.ljust(widths[i]) if i < last else v for i, v in enumerate(values)]
        return _GAP.join(padded).rstrip()

    yield line(header)
    yield "─" * (sum(widths) + len(_GAP) * last)
    for row in cells:
        yield line(row)


def print_plain_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    """Write the table to stdout a batch of lines at a time (quiet once a pipe closes)."""
    batch: list[str] = []
    for text in plain_table_lines(header, rows):
        batch.append(text)
        if len(batch) >= _BATCH:
            write_text("\n".join(batch) + "\n")
            batch.clear()
    if batch:
        write_text("\n".join(batch) + "\n")
