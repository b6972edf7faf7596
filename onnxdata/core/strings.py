"""STRING values as bytes (the format's own) or as ``str`` (what ONNX Runtime wants).

onnxdata reads STRING tensors and string map keys as ``bytes``, because the format
does not promise UTF-8. ONNX Runtime turns a bytes element into the text
``"b'abc'"`` and refuses bytes map keys, so ``to_numpy``, ``read`` and
``load_test_data_set`` take ``strings="str"``: this module's one function,
applied to the finished value, decodes every string as UTF-8 and names the
first one that is not.
"""

from __future__ import annotations

from typing import Any, Literal, TypeAlias

import numpy as np

from onnxdata.errors import Problem, ValidationError

__all__ = ["Strings", "convert_strings", "json_text"]

Strings: TypeAlias = Literal["bytes", "str"]


def convert_strings(value: Any, strings: Strings, source: str | None = None) -> Any:
    """``value`` with every bytes string (tensor element or map key) decoded as UTF-8 when
    ``strings`` is "str"; as it is for "bytes". ValidationError names the first string
    that is not UTF-8 by its path in the value (``[2]['key'][0, 1]``) and ``source``."""
    if strings == "bytes":
        return value
    if strings != "str":
        raise ValueError(f"strings={strings!r}: expected 'bytes' or 'str'")
    return _decode(value, "", source)


def json_text(b: bytes) -> str:
    """A STRING element or key as JSON text, exactly: UTF-8 as it reads, each byte that is
    not UTF-8 a lone surrogate (``surrogateescape``, as Python spells such file names),
    which ``json.dumps`` writes as ``"\\udcff"``; ``s.encode("utf-8", "surrogateescape")``
    gives the bytes back. (``backslashreplace`` wrote b"\\xff" and the four characters
    ``\\xff`` alike.)"""
    return b.decode("utf-8", "surrogateescape")


def _text(b: bytes, path: str, source: str | None) -> str:
    try:
        return b.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValidationError([Problem(path or "value", f"string {b[:32]!r} is not UTF-8 "
                                       f"({exc.reason} at byte {exc.start}); read it with "
                                       "strings='bytes'")], source=source) from None


def _decode(value: Any, path: str, source: str | None) -> Any:
    if isinstance(value, np.ndarray):
        if value.dtype != object:
            return value
        flat = value.reshape(-1)
        out = np.empty(flat.shape, dtype=object)
        for i, item in enumerate(flat.tolist()):
            if isinstance(item, bytes):
                index = np.unravel_index(i, value.shape) if value.ndim else ()
                where = f"{path}[{', '.join(map(str, index))}]" if value.ndim else path
                item = _text(item, where, source)
            out[i] = item
        return out.reshape(value.shape)
    if isinstance(value, list):
        return [_decode(v, f"{path}[{i}]", source) for i, v in enumerate(value)]
    if isinstance(value, dict):
        return {(_text(k, f"{path}[{k!r}] (key)", source) if isinstance(k, bytes) else k):
                _decode(v, f"{path}[{k!r}]", source) for k, v in value.items()}
    return value
