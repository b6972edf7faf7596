"""The test loop: ONNX test cases (a folder with ``model.onnx`` and ``test_data_set_N``
folders of ``input_N.pb`` / ``output_N.pb``) loaded, saved, made, run on backends and
compared; a pool of worker processes, shards, Dask, a scoreboard page and the pytest plugin
are built on the one run path here (``case_run.run_set``)."""

from onnxdata.cases.backends import Backend, get_backend
from onnxdata.cases.load import load_test_data_set
from onnxdata.cases.locate import locate
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
