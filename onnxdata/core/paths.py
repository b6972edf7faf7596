"""The one wording of where a value is: ``seq[2]['k'].dims`` (a path from the root)."""

from __future__ import annotations

__all__ = ["join_path"]


def join_path(path: str, name: str) -> str:
    """``name`` (a field, or an index such as ``[3]``) under ``path``; ``name`` alone at
    the root."""
    if not path:
        return name
    return f"{path}{name}" if name.startswith("[") else f"{path}.{name}"
