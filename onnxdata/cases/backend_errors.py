"""What a backend says when it cannot run a case: reasons to skip, not failures.

Defined apart from ``backends`` so that ``ort_bridge`` (which ``backends`` uses)
can raise them too; both are re-exported by ``onnxdata.cases.backends``.
"""

from __future__ import annotations

from onnxdata.errors import OnnxDataError

__all__ = ["BackendCannotTake", "BackendUnavailable"]


class BackendUnavailable(OnnxDataError):
    """The backend cannot run on this machine (not installed, a provider missing): a skip."""


class BackendCannotTake(OnnxDataError):
    """A value or type the backend cannot take (a sparse input, say): a skip with the reason."""
