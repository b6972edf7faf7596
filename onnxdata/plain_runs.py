"""A sequence's many plain tensors of one layout, read in bulk.

``read`` of a sequence of 100,000 small tensors (or a map's 1,000,000 scalar
values) would cost one Python call per tensor (``Engine.plain``). Such tensors
usually differ only in their ``raw_data`` bytes. When the first one is plain
and valid, and every other one has the same length, sits at the same stride,
and has the same bytes before its payload, every one is that tensor with other
payload bytes: the same fields (dims, data type, name, raw_data length), so the
same verdict. Their arrays are then one strided view of the buffer, split into
rows.

Why equal prefixes prove it: the first tensor's raw_data payload ends its bytes
(checked: its array is the view of its last bytes), so its bytes are
``prefix + payload``, the prefix ending with raw_data's tag and length. Another
element of the same length whose first ``len(prefix)`` bytes are the prefix
parses field by field as the first one does, up to that tag and length, and
then holds exactly that many payload bytes: nothing else fits.
"""

from __future__ import annotations

from typing import Any, Final

import numpy as np
import numpy.typing as npt

from onnxdata.source import Source
from onnxdata.walk import RangeStore

__all__ = ["MIN_RUN", "plain_run_arrays", "same_layout"]

#: Fewer tensors than this are cheaper one by one.
MIN_RUN: Final = 32
#: Prefix bytes compared per numpy call (bounds the temporaries).
_BLOCK_BYTES: Final = 1 << 22
#: Elements this many times longer than their prefix have each prefix read alone (one
#: small read each) rather than a block of whole elements (2,000 tensors of 40 KB: 2,000
#: reads of 20 bytes, not 76 MB).
_SPARSE_STRIDE: Final = 256


def plain_run_arrays(src: Source, ranges: RangeStore | list[tuple[int, int]],
                     first: npt.NDArray[Any]) -> list[Any] | None:
    """The arrays of every tensor in ``ranges`` when each is the first one (whose array,
    a view of the buffer made by ``Engine.plain``, is ``first``) but for its payload;
    None when that does not hold or cannot be shown cheaply (check them one by one)."""
    n = len(ranges)
    whole = src.whole()
    nbytes = first.nbytes
    if n < MIN_RUN or whole is None or nbytes == 0 or not first.flags.c_contiguous:
        return None
    a0, b0 = ranges[0]
    length = b0 - a0
    at = first.__array_interface__["data"][0] - whole.__array_interface__["data"][0]
    if at != b0 - nbytes:
        return None  # the payload does not end the first tensor's bytes
    if isinstance(ranges, RangeStore):
        starts = np.frombuffer(ranges.starts, np.int64).copy()  # (offsets are < 2**63)
        ends = np.frombuffer(ranges.ends, np.int64).copy()
    else:
        starts, ends = np.array(ranges, np.int64).reshape(n, 2).T
    stride = int(starts[1] - starts[0])
    if stride < length or not bool((ends - starts == length).all()) or \
            not bool((np.diff(starts) == stride).all()):
        return None
    src.check()  # the prefixes are read from the mapping
    prefix = length - nbytes
    heads = np.lib.stride_tricks.as_strided(whole[a0:], shape=(n, prefix), strides=(stride, 1),
                                            writeable=False)
    block = max(1, _BLOCK_BYTES // max(prefix, 1))
    head = heads[0]
    for i in range(1, n, block):
        if not bool((heads[i:i + block] == head).all()):
            return None
    rows = np.ndarray((n, *first.shape), dtype=first.dtype, buffer=whole, offset=a0 + prefix,
                      strides=(stride, *first.strides))
    rows.flags.writeable = False
    if first.ndim == 0:  # scalars: 0-d views, as Engine.plain makes
        return [rows[i, ...] for i in range(n)]
    return list(rows)


def same_layout(src: Source, ranges: RangeStore | list[tuple[int, int]], prefix: int) -> bool:
    """True when every message in ``ranges`` has the first one's length, sits at one stride,
    and starts with the first one's ``prefix`` bytes: the check ``plain_run_arrays`` makes,
    for a walk that validates without a mapping (read a block of elements at a time with
    ``Source.read``, so memory stays bounded)."""
    n = len(ranges)
    if n < MIN_RUN or prefix <= 0:
        return False
    if isinstance(ranges, RangeStore):
        starts = np.frombuffer(ranges.starts, np.int64)
        ends = np.frombuffer(ranges.ends, np.int64)
    else:
        starts, ends = np.array(ranges, np.int64).reshape(n, 2).T
    a0 = int(starts[0])
    length = int(ends[0]) - a0
    stride = int(starts[1] - starts[0])
    if prefix > length or stride < length or not bool((ends - starts == length).all()) or \
            not bool((np.diff(starts) == stride).all()):
        return False
    head = np.frombuffer(src.read(a0, a0 + prefix), np.uint8)
    if stride >= _SPARSE_STRIDE * prefix:  # mostly payload: read the prefixes alone
        want = bytes(head)
        return all(src.peek(a, a + prefix) == want
                   for a in range(a0 + stride, a0 + n * stride, stride))
    block = max(1, _BLOCK_BYTES // stride)
    for i in range(1, n, block):
        j = min(n, i + block)
        a = a0 + i * stride
        data = np.frombuffer(src.read(a, a + (j - i - 1) * stride + prefix), np.uint8)
        heads = np.lib.stride_tricks.as_strided(data, shape=(j - i, prefix),
                                                strides=(stride, 1), writeable=False)
        if not bool((heads == head).all()):
            return False
    return True
