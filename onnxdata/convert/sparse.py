"""Sparse tensors as numpy: their parts (values, indices, dense shape), densifying them
within the densify cap, and ``to_numpy``'s reader of a SparseTensorProto."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from onnxdata.convert.common import MAX_INTP, Array, SparseParts, StrPath, check_message, fail_at
from onnxdata.convert.tensor import checked_shape, plain_raw, read_tensor
from onnxdata.core.budget import get_densify_limit, spend
from onnxdata.core.limits import MAX_DEPTH
from onnxdata.core.paths import join_path
from onnxdata.errors import OnnxDataError
from onnxdata.rules.validation import quick_tensor

__all__ = ["densify", "densify_cost"]


# ---------------------------------------------------------------- parts and densify

def read_sparse_parts(sp: Any, path: str, base_dir: StrPath | None, *,
                  known: dict[str, Array] | None = None, checked: bool = False) -> SparseParts:
    """Values, indices and shape; ``known`` holds parts already read, and ``checked`` says
    the indices were found inside dims (``validate``'s rules) so are not looked at again."""
    known = known or {}
    shape, total = checked_shape(sp.dims, path)
    vpath, ipath = join_path(path, "values"), join_path(path, "indices")
    if not sp.HasField("values"):
        raise fail_at(vpath, "a sparse tensor needs values")
    values = known.get("values")
    if values is None:
        values = read_tensor(sp.values, vpath, base_dir)
    if values.ndim != 1:
        raise fail_at(join_path(vpath, "dims"), f"values must be 1-D, not {values.ndim}-D")
    nnz = values.shape[0]
    if not sp.HasField("indices"):
        if nnz:
            raise fail_at(ipath, f"{nnz} values but no indices")
        return SparseParts(values, np.zeros((0,), dtype=np.int64), shape)
    if sp.indices.data_type != 7:
        raise fail_at(join_path(ipath, "data_type"), f"indices must be INT64 (7), not "
                    f"{sp.indices.data_type}")
    indices = known.get("indices")
    if indices is None:
        indices = read_tensor(sp.indices, ipath, base_dir)
    rank = len(shape)
    if indices.ndim == 1 and indices.shape[0] == nnz:
        bounds: Any = total
    elif indices.ndim == 2 and indices.shape == (nnz, rank):
        bounds = np.asarray(shape, dtype=np.int64)
    else:
        raise fail_at(join_path(ipath, "dims"), f"indices must be [{nnz}] or [{nnz}, {rank}] for "
                    f"{nnz} values in dims {list(shape)}, not {list(indices.shape)}")
    bad = np.zeros((0, 1)) if checked else np.argwhere((indices < 0) | (indices >= bounds))
    if bad.size:
        where = "[" + ", ".join(str(int(i)) for i in bad[0]) + "]"
        raise fail_at(f"{ipath}{where}", f"index {indices[tuple(bad[0])]} lies outside dims "
                    f"{list(shape)}")
    return SparseParts(values, indices, shape)


def densify_cost(parts: SparseParts) -> tuple[int, str]:
    """The bytes densifying ``parts`` allocates, and what they are for the budget's message."""
    values, _, shape = parts
    return math.prod(shape) * values.dtype.itemsize, f"dims {list(shape)} of {values.dtype}"


def densify(parts: SparseParts, path: str, *, spent: bool = False,
            checked: bool = False) -> Array:
    """The dense array of ``parts``; ``spent`` when the caller already took its bytes from
    the call's budget (``read`` does, for every sparse tensor, before densifying any);
    ``checked`` when the indices were found ascending and inside dims (``validate``'s
    rules: ``to_numpy`` and ``read`` check them first), so they are not looked at again."""
    values, indices, shape = parts
    total = math.prod(shape)
    itemsize = values.dtype.itemsize
    nbytes, what = densify_cost(parts)
    if not spent:
        spend(nbytes, get_densify_limit(), path, what)
    if math.prod(d for d in shape if d) * itemsize > MAX_INTP:  # a 0 among huge dims
        raise fail_at(join_path(path, "dims"),
                      f"dims {list(shape)} are too large for a numpy array "
                    f"of {values.dtype}")
    try:
        if values.dtype == object:
            out = np.full(total, b"", dtype=object)
        else:
            out = np.zeros(total, dtype=values.dtype)
    except MemoryError as exc:
        raise OnnxDataError(f"{path or 'sparse tensor'}: out of memory densifying "
                            f"{list(shape)} of {values.dtype} ({nbytes} bytes)") from exc
    if indices.ndim == 2:
        if shape and indices.size and not checked and (bool((indices < 0).any())
                                       or bool((indices >= np.array(shape)).any())):
            raise fail_at(join_path(path, "indices"), f"an index lies outside dims {list(shape)}")
        linear = (np.ravel_multi_index(tuple(indices.T), shape) if shape
                  else np.zeros(len(indices), dtype=np.intp))
    else:
        linear = indices
    # The rule is strictly ascending (lexicographic rows are ascending linear indices),
    # which rules out duplicates too: one comparison pass, not a sort.
    if not checked and linear.size > 1 and not bool((linear[1:] > linear[:-1]).all()):
        raise fail_at(join_path(path, "indices"), "indices must be ascending without duplicates")
    if not checked and linear.size and (int(linear[0]) < 0 or int(linear[-1]) >= total):
        raise fail_at(join_path(path, "indices"), f"an index lies outside [0, {total})")
    out[linear] = values
    return out.reshape(shape)


def read_sparse(sp: Any, path: str, base_dir: StrPath | None, depth: int = 0) -> Array:
    """A sparse tensor checked as ``validate`` checks it (its index rules included), then
    densified without checking its indices again; parts the check read are used as read."""
    check_message(path, sp, base_dir, depth)
    known: dict[str, Array] = {}
    for field in ("values", "indices"):
        if sp.HasField(field):
            child = getattr(sp, field)
            plain = quick_tensor(child) if depth + 1 <= MAX_DEPTH else None
            if plain is None:
                check_message(join_path(path, field), child, base_dir, depth + 1)
            elif (fast := plain_raw(plain)) is not None:
                known[field] = fast
    return densify(read_sparse_parts(sp, path, base_dir, known=known, checked=True), path,
                   checked=True)
