"""The limits every walk shares, written once."""

from __future__ import annotations

from typing import Final

__all__ = ["MAX_DEPTH"]

#: protobuf's own recursion limit: the deepest nesting of messages (or groups) that
#: protobuf parses, so the deepest the engine walks and the default ``max_depth`` of
#: validation, reading and exploring.
MAX_DEPTH: Final = 100
