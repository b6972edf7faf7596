# The compiled loop of onnxdata/wire/_walk.pyx (see walk.scan).
from typing import Any

def scan(buf: Any, base: int, pos: int, end: int, kinds: Any, names: list[str | None],
         out: Any, limit: int) -> int: ...
def scan_many(buf: Any, base: int, starts: Any, ends: Any, kinds: Any,
              names: list[str | None], out: Any, limit: int) -> bool: ...
