# The compiled loop of onnxdata/wire/_varints.pyx (see decode.decode_varints).
from typing import Any

import numpy as np
import numpy.typing as npt

def decode(data: npt.NDArray[np.uint8], out: npt.NDArray[Any]) -> int: ...
def scan(data: npt.NDArray[np.uint8]) -> tuple[int, bool, bool, bool]: ...
def join(window: npt.NDArray[np.uint8], base: int, starts: npt.NDArray[np.int64],
         ends: npt.NDArray[np.int64], out: npt.NDArray[np.uint8]) -> int: ...
