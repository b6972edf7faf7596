"""The test loop: ONNX test cases (a folder with ``model.onnx`` and ``test_data_set_N``
folders of ``input_N.pb`` / ``output_N.pb``) loaded, saved, made, run on backends and
compared; a pool of worker processes, shards, Dask, a scoreboard page and the pytest plugin
are built on the one run path here (``case_run.run_set``).

Each name is imported from its module on first use (PEP 562): the pytest plugin's process
imports ``onnxdata.cases.worker`` without the backends, numpy or protobuf."""

from importlib import import_module as _import_module
from typing import TYPE_CHECKING as _TYPE_CHECKING
from typing import Any as _Any

if _TYPE_CHECKING:
    from onnxdata.cases.backends import Backend, get_backend
    from onnxdata.cases.divergence import locate
    from onnxdata.cases.load import load_test_data_set
    from onnxdata.cases.make import make_test_data_sets
    from onnxdata.cases.runner import OutputResult, run_test_data_set
    from onnxdata.cases.save import save_test_data_set

__all__ = [
    # one set's files
    "load_test_data_set",
    "save_test_data_set",
    "make_test_data_sets",
    # running a set on a backend
    "Backend",
    "OutputResult",
    "get_backend",
    "run_test_data_set",
    # the first node where two backends diverge
    "locate",
]

_WHERE = {
    **dict.fromkeys(("Backend", "get_backend"), "onnxdata.cases.backends"),
    "load_test_data_set": "onnxdata.cases.load",
    "locate": "onnxdata.cases.divergence",
    "make_test_data_sets": "onnxdata.cases.make",
    **dict.fromkeys(("OutputResult", "run_test_data_set"), "onnxdata.cases.runner"),
    "save_test_data_set": "onnxdata.cases.save",
}


def __getattr__(name: str) -> _Any:
    """A public name, imported from its module on first use."""
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module 'onnxdata.cases' has no attribute {name!r}")
    value = getattr(_import_module(where), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_WHERE})
