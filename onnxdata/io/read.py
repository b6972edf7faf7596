"""Zero-copy reading: ``read`` walks a file with the wire engine and returns numpy values.

``read(path, kind)`` returns what ``to_numpy(load(path, kind))`` returns, and
raises what ``validate(load(path, kind))`` finds, problem for problem (the
engine applies the same rules in the same order), but never parses the file
into messages. Nothing depends on protobuf, so files over 2 GiB read the same
way as small ones.

Two modes:

- default (``copy=False``): the file is memory-mapped read-only; ``raw_data``
  and packed ``float_data``/``double_data`` become read-only views of the
  mapping, which lives as long as any array refers to it. The walk itself
  (tags, lengths, varints, strings) reads with ``os.pread``, never from the
  mapping, and checks the file's size before decoding any mapped payload, so a
  file truncated during the call gives ``DecodeError``, not SIGBUS, save for a
  truncation in the microseconds between that check and the payload's decode.
  After the call the arrays reflect the file as it is: truncating it then
  makes touching them raise SIGBUS, and rewriting it changes them. A file of
  at most 64 KiB (``source.SMALL``) is read as ``copy=True`` reads it: its
  first pread takes all of it anyway, and the copy costs less than a mapping.
  One of at most 2 MiB (``source.WHOLE``) that the walk reads on past its
  first window is read whole by one pread, and the arrays made after it view
  that read, not the mapping (which would hold the file's bytes a second time).
- ``copy=True``: the file is read into one buffer and the arrays view that
  buffer (about 1x the file's size in memory); later changes to the file
  cannot affect them. The buffer is the file as it was at one instant: a read
  that a write overlapped is retried, and a file that keeps changing raises
  ``DecodeError("... file changed while reading")`` (``source.read_settled``).
  The CLI reads this way.

The mmap mode compares the file's size and mtime before and after the walk and
raises ``DecodeError("... file changed while reading")`` when they differ; a file
of at most 64 KiB, read as one copy, is retried as ``copy=True`` retries (up to
8 reads, about 30 ms, against a writer that never stops).

Descriptors: the file's own descriptor is closed before ``read`` returns. On
Python >= 3.13 the mapping is made with ``trackfd=False`` and holds none; on
older Pythons ``mmap`` keeps one duplicate descriptor per live mapping (one
per live result of ``read``): use ``copy=True`` to hold none.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

from onnxdata.core.budget import close_budget, densify_budget, get_densify_limit, open_budget
from onnxdata.core.limits import MAX_DEPTH
from onnxdata.core.messages import Kind, KindName, kind_name
from onnxdata.core.strings import Strings, convert_strings
from onnxdata.engine.engine import Engine, densify_deferred, message_name
from onnxdata.errors import DecodeError, ValidationError, no_memory_error, path_error
from onnxdata.io.gc_pause import gc_paused
from onnxdata.io.load_save import kind_when_not_given
from onnxdata.rules.common import MAX_PROBLEMS
from onnxdata.wire.format import WireError
from onnxdata.wire.source import SMALL, Mode, Source

__all__ = ["open_source", "read", "read_source"]

#: The nesting protobuf's parser allows; deeper values are refused the same way.


def _open(name: str, mode: Mode) -> Source:
    return Source.of_file(name, mode)


#: Called with the path and mode; tests replace it to change the file after opening.
_mapped: Callable[[str, Mode], Source] = _open


@functools.lru_cache(maxsize=64)
def _folder_of(dirname: str) -> Path:
    """The folder ``read`` looks in for external data, by the file's dirname (a Path made
    once per folder: a test-data set's files share one)."""
    return Path(dirname or ".")


#: ``_folder_of`` each file's folder, by the file's name (a read of a small file paid
#: 0.8 us for dirname and the cache); emptied when full.
_FOLDERS: dict[str, Path] = {}
_MOST_FOLDERS: Final = 4096


def _folder(name: str) -> Path:
    got = _FOLDERS.get(name)
    if got is None:
        if len(_FOLDERS) >= _MOST_FOLDERS:
            _FOLDERS.clear()
        got = _FOLDERS[name] = _folder_of(os.path.dirname(name))
    return got


@no_memory_error("path")
def read(path: str | os.PathLike[str], kind: Kind | None = None, *,
         base_dir: str | os.PathLike[str] | None = None, max_depth: int = MAX_DEPTH,
         copy: bool = False, max_problems: int = MAX_PROBLEMS,
         strings: Strings = "bytes") -> Any:
    """The numpy value in the file at ``path``, as ``to_numpy(load(path, kind))`` gives it.

    Tensor data comes back as read-only views of the file's mapping wherever its
    bytes are the array's bytes (or, with ``copy=True`` or for a file of at most
    64 KiB, of one private copy of the file). ``kind`` is "tensor",
    "sparse_tensor", "sequence", "optional", "map" or the message class; when it
    is None the kind is chosen as the explorer chooses it (the model's declared
    type in the test-data layout, else the only valid reading). External data is
    looked up in ``base_dir``, by default the file's folder, and must stay
    inside it. Messages nest at most ``max_depth`` deep (100, as protobuf's
    parser allows). Bad bytes raise ``DecodeError``, bad values
    ``ValidationError`` with every problem found (at most ``max_problems``, then
    a count). ``strings="str"`` gives STRING values as ``str`` (UTF-8) instead
    of ``bytes``, as ``to_numpy`` does. Sparse tensors share one densify budget
    for the whole call (``set_densify_limit``).
    """
    name = os.fspath(path)
    src = open_source(name, copy=copy)
    try:
        chosen = kind_name(kind) if kind is not None else kind_when_not_given(name, src)
        return _walked(src, chosen, base_dir, max_depth, max_problems, strings)
    finally:
        src.close()


def open_source(path: str | os.PathLike[str], *, copy: bool = False) -> Source:
    """The file at ``path`` opened for ``read_source`` (mapped, or one copy); a pipe or FIFO
    is read once to its end, so open it once and hand the Source to everything."""
    name = os.fspath(path)
    try:
        return _mapped(name, "copy" if copy else "mmap")
    except OSError as exc:  # (open_checked's are path_error's already)
        raise path_error(exc, name) from exc


def read_source(src: Source, kind: Kind | None = None, *,
                base_dir: str | os.PathLike[str] | None = None, max_depth: int = MAX_DEPTH,
                max_problems: int = MAX_PROBLEMS, strings: Strings = "bytes") -> Any:
    """``read`` of an open Source (``open_source``); the caller closes it."""
    chosen = kind_name(kind) if kind is not None else kind_when_not_given(src.name, src)
    return _walked(src, chosen, base_dir, max_depth, max_problems, strings)


_paused: Final = gc_paused()


def _walked(src: Source, chosen: KindName, base_dir: str | os.PathLike[str] | None,
            max_depth: int, max_problems: int, strings: Strings) -> Any:
    """The value of ``src`` read as ``chosen``. A container's value (a list or dict per
    element) is built with the collector paused (``gc_pause``), and its sparse tensors and
    external data share one densify budget (issue 10, P8); a tensor's value is one array,
    and its external data, all it can spend, is checked against the limit as one budget
    would check it. A small file's container (``source.SMALL``) is built without the pause."""
    if chosen == "tensor":
        return _walk(src, chosen, base_dir, max_depth, max_problems, strings)
    if src.size <= SMALL:  # (a few thousand objects at most: the pause costs more than it saves)
        token = open_budget(get_densify_limit())  # (densify_budget's, without its object)
        try:
            return _walk(src, chosen, base_dir, max_depth, max_problems, strings)
        finally:
            close_budget(token)
    with _paused, densify_budget(get_densify_limit()):
        return _walk(src, chosen, base_dir, max_depth, max_problems, strings)


def _walk(src: Source, chosen: KindName, base_dir: str | os.PathLike[str] | None,
          max_depth: int, max_problems: int, strings: Strings) -> Any:
    name = src.name
    folder = Path(base_dir) if base_dir is not None else _folder(name)
    engine = Engine(src, base_dir=folder, max_depth=max_depth, values=True,
                    max_problems=max_problems)
    try:
        value = engine.run(chosen).value
    except WireError as exc:
        src.finish()  # bytes that changed under the walk: say so, not that they are bad
        raise DecodeError(exc.reason, source=name, kind=message_name(chosen),
                          offset=exc.offset) from exc
    except ValidationError as exc:  # over the budget: say which file
        if exc.source is not None:
            raise
        raise ValidationError(exc.problems, source=name) from exc
    src.check()
    src.finish()
    if engine.problems:
        raise ValidationError(engine.problems.result(), source=name)
    if engine.deferred:
        value = densify_deferred(value)
    return convert_strings(value, strings, name)
