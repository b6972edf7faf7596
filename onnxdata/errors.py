"""The one error family: everything onnxdata raises for bad input is an OnnxDataError."""

from __future__ import annotations

import errno
import functools
import inspect
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import ParamSpec, TypeVar, cast

__all__ = ["DecodeError", "OnnxDataError", "PathError", "Problem", "UnknownFieldsWarning",
           "ValidationError", "path_error"]


class OnnxDataError(Exception):
    """Base class of every error onnxdata raises for bad input."""


class DecodeError(OnnxDataError):
    """Bytes that are not a message of the kind asked for.

    ``source`` names the file (or ``<bytes>``), ``kind`` the message expected,
    ``offset`` the byte where reading failed when it is known.
    """

    def __init__(self, message: str, *, source: str = "<bytes>", kind: str = "",
                 offset: int | None = None) -> None:
        where = source if offset is None else f"{source} at byte {offset}"
        what = f" as {kind}" if kind else ""
        super().__init__(f"cannot read {where}{what}: {message}")
        self.source = source
        self.kind = kind
        self.offset = offset
        self.reason = message


class PathError(OnnxDataError, OSError):
    """A path onnxdata cannot use: missing, a folder where a file is wanted or a file where
    a folder is, not permitted (``path_error`` makes every one of them).

    Each is also the OSError subclass Python raises for it (``FileNotFoundError``,
    ``IsADirectoryError``, ``NotADirectoryError``, ``PermissionError``), with the OS's
    ``errno``, ``strerror`` and ``filename``: ``except FileNotFoundError`` still catches
    it. A path that is read gives a ``DecodeError`` as well (``ReadPathError``).
    """

    def __str__(self) -> str:  # ours: OSError's would be "[Errno 2] ... 'x.pb'"
        return str(self.args[0]) if self.args else ""

    def __reduce__(self) -> tuple[object, ...]:  # OSError's would call __init__ with its errno
        return _remade, (type(self), self.args, self.__dict__, self.errno, self.strerror,
                         self.filename)


class ReadPathError(DecodeError, PathError):
    """A path that cannot be read: "cannot read x.pb: no such file"."""


class SavePathError(PathError):
    """A path that cannot be written: "cannot save to out/x.pb: no such folder (out)"."""


# One class per side and OSError subclass, so that ``except FileNotFoundError`` (say)
# catches ours as it caught the OS's.
class MissingPathReadError(ReadPathError, FileNotFoundError):
    """A path to read that does not exist."""


class FolderReadError(ReadPathError, IsADirectoryError):
    """A folder where a file is to be read."""


class NotFolderReadError(ReadPathError, NotADirectoryError):
    """A file where a folder is to be read (or a file as a part of the path)."""


class DeniedReadError(ReadPathError, PermissionError):
    """A path the process may not read."""


class MissingPathSaveError(SavePathError, FileNotFoundError):
    """A path to save to whose folder does not exist."""


class FolderSaveError(SavePathError, IsADirectoryError):
    """A folder where a file is to be saved."""


class NotFolderSaveError(SavePathError, NotADirectoryError):
    """A path to save to with a file as a part of it."""


class DeniedSaveError(SavePathError, PermissionError):
    """A path the process may not write."""


#: The words of a path that is not there, by every reader and the CLI (``cli.args``).
MISSING = "no such file or folder"
#: ... of a folder where a file is wanted
FOLDER = "a folder, not a file"
#: ... of a file where a folder is wanted
NOT_FOLDER = "a file, not a folder"

_CLASSES: dict[tuple[bool, type[OSError]], type[PathError]] = {
    (False, FileNotFoundError): MissingPathReadError, (False, IsADirectoryError): FolderReadError,
    (False, NotADirectoryError): NotFolderReadError, (False, PermissionError): DeniedReadError,
    (True, FileNotFoundError): MissingPathSaveError, (True, IsADirectoryError): FolderSaveError,
    (True, NotADirectoryError): NotFolderSaveError, (True, PermissionError): DeniedSaveError,
}


def path_error(exc: OSError, path: str | os.PathLike[str], *, kind: str = "",
               folder: bool = False, saving: bool = False, hint: str = "") -> PathError:
    """The one error and wording for a path onnxdata cannot use, from the OSError the OS
    gave (chain it: ``raise path_error(exc, path) from exc``).

    ``kind`` names what the path should hold ("ModelProto", "test data set"); ``folder``:
    a folder is wanted there, not a file; ``saving``: the path is written, not read;
    ``hint``: what to do, after the reason. An OSError that is a PathError already is
    returned as it is.
    """
    if isinstance(exc, PathError):
        return exc
    name = os.fspath(path)
    parent = os.path.dirname(name) or "."
    if isinstance(exc, FileNotFoundError) and not (saving and os.path.isdir(parent)):
        reason = (f"no such folder ({parent})" if saving else "no such folder" if folder
                  else MISSING)
    elif isinstance(exc, IsADirectoryError):
        reason = FOLDER
    elif isinstance(exc, NotADirectoryError):
        reason = (NOT_FOLDER if folder and os.path.isfile(name)
                  else "a part of the path is a file, not a folder")
    elif isinstance(exc, PermissionError):
        reason = "permission denied"
    else:
        reason = exc.strerror or str(exc)  # (EIO, ENOSPC, ELOOP, ...: the OS's words)
    if hint:
        reason = f"{reason}; {hint}"
    cls = _CLASSES.get((saving, _os_class(exc)), SavePathError if saving else ReadPathError)
    error: PathError
    if saving:
        error = cls(f"cannot save to {name}: {reason}")
    else:
        error = cast("type[ReadPathError]", cls)(reason, source=name, kind=kind)
    error.errno = exc.errno if exc.errno is not None else _ERRNOS.get(_os_class(exc))
    error.strerror = exc.strerror or (os.strerror(error.errno) if error.errno else None)
    error.filename = name
    return error


_ERRNOS: dict[type[OSError], int] = {
    FileNotFoundError: errno.ENOENT, IsADirectoryError: errno.EISDIR,
    NotADirectoryError: errno.ENOTDIR, PermissionError: errno.EACCES,
}


def _os_class(exc: OSError) -> type[OSError]:
    for cls in _ERRNOS:
        if isinstance(exc, cls):
            return cls
    return OSError


def _remade(cls: type[PathError], args: tuple[object, ...], state: dict[str, object],
            err: int | None, strerror: str | None, filename: object) -> PathError:
    """A PathError back from a pickle (a worker process's error), as it was."""
    error = cls.__new__(cls)
    error.args = args
    error.__dict__.update(state)
    error.errno, error.strerror, error.filename = err, strerror, filename
    return error


#: A problem's message is cut to about this many characters (its middle elided with "…").
MESSAGE_LIMIT = 200


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a value: where it is (``path``) and what (``message``).

    A message longer than ``MESSAGE_LIMIT`` characters keeps its start and end
    around "…", so one problem never carries megabytes of dims or values.
    """

    path: str
    message: str

    def __post_init__(self) -> None:
        if len(self.message) > MESSAGE_LIMIT:
            object.__setattr__(self, "message", _elide(self.message))

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


def _elide(message: str) -> str:
    """The start and end of a long message around " … ", cut between words where a space
    is near (never in the middle of a number or a field name)."""
    head = message[:MESSAGE_LIMIT - 50]
    tail = message[-47:]
    space = head.rfind(" ", len(head) - 30)
    if space > 0:
        head = head[:space]
    space = tail.find(" ", 0, 20)
    if space >= 0:
        tail = tail[space + 1:]
    return f"{head} … {tail}"


class ValidationError(OnnxDataError, ValueError):
    """A value breaks the rules of the format; ``problems`` lists every fault found."""

    def __init__(self, problems: Iterable[Problem], *, source: str | None = None) -> None:
        self.problems: list[Problem] = list(problems)
        self.source = source
        head = f"{source}: " if source else ""
        n = len(self.problems)
        lines = "\n".join(f"  - {p}" for p in self.problems)
        super().__init__(f"{head}{n} problem{'s' if n != 1 else ''}:\n{lines}")


_P = ParamSpec("_P")
_R = TypeVar("_R")


def no_memory_error(source: str) -> Callable[[Callable[_P, _R]], Callable[_P, _R]]:
    """Make an entry point raise OnnxDataError, naming its ``source`` argument (the file, or
    the kind of value), where it runs out of memory, with the MemoryError chained.

    A value may claim more memory than the process may use; the caller gets our
    error, and the CLI its exit code, not a bare MemoryError.
    """
    def wrap(func: Callable[_P, _R]) -> Callable[_P, _R]:
        signature = inspect.signature(func)

        @functools.wraps(func)
        def guarded(*args: _P.args, **kwargs: _P.kwargs) -> _R:
            try:
                return func(*args, **kwargs)
            except MemoryError as exc:
                try:
                    value = signature.bind_partial(*args, **kwargs).arguments.get(source)
                except TypeError:
                    value = None
                raise OnnxDataError(f"{_describe(value)}: out of memory in {func.__name__}; "
                                    "the value needs more memory than this process may "
                                    "use") from exc
        return guarded
    return wrap


def _describe(value: object) -> str:
    if isinstance(value, (str, os.PathLike)):
        return str(os.fspath(value))
    if isinstance(value, (bytes, bytearray, memoryview)):
        return "<bytes>"
    kind = getattr(getattr(value, "DESCRIPTOR", None), "name", None)
    return f"<{kind or type(value).__name__}>"


class UnknownFieldsWarning(UserWarning):
    """``load`` parsed the bytes as the kind asked only by keeping fields aside as unknown.

    Usually the file holds another message (a tensor read as a sequence gives
    ``elem_type`` 1 and little else); ``onnxdata explore FILE`` shows what it can be.
    """
