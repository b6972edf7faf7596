"""Types of the compiled module ``_float_rows.pyx`` (show's text of float32 rows)."""

from typing import Any

def float32_rows(rows: Any, suffix: bytes, width: int) -> list[str | None]: ...
