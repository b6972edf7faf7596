"""Run a model on a backend with onnxdata's values in and out.

``get_backend(name, providers=None)`` returns a ``Backend``:

* ``"ort"`` (or ``"onnxruntime"``): ONNX Runtime, with ``providers`` naming
  execution providers in order (default ``["CPUExecutionProvider"]``);
* ``"reference"``: onnx's ``ReferenceEvaluator`` (``pip install onnx``);
* ``"module:attr"``: any ``onnx.backend.base.Backend`` (a class or an object
  with ``prepare(model, device)``), e.g. ``"onnxruntime.backend:backend"``.

``backend.run(model, inputs)`` takes a model (a path, onnxdata's or onnx's
ModelProto) and a list of inputs as onnxdata has values (numpy arrays, lists
for sequences, dicts for maps, None for an empty optional, STRING elements as
bytes or str) and returns the outputs the same way, each converted to the
type the model declares for it (strings as bytes, map values as arrays of the
declared element type). ``backend.prepare(model)`` returns a ``Prepared``
whose ``run(inputs)`` can be called once per data set. The inputs are checked against
the model's declared inputs first (``feeds.fit_inputs``): too few or too many, a value of
another kind, a tensor of another element type raise ``FeedError``, naming the input.

A backend that cannot run here (not installed, a provider missing) raises
``BackendUnavailable`` (a reason to skip, not a failure); a value a backend
cannot take raises ``BackendCannotTake``; a model it cannot load raises
``OnnxDataError`` with its message.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from onnxdata.cases.backend_errors import BackendCannotTake, BackendUnavailable
from onnxdata.cases.feeds import fit_inputs
from onnxdata.cases.ort_bridge import (
    as_ort_value,
    needs_ort_value,
    read_ort_value,
    strings_as_text,
    text,
    to_ort,
)
from onnxdata.cases.save import as_model, read_model
from onnxdata.core.dtypes import DATA_TYPES, STRING
from onnxdata.errors import OnnxDataError
from onnxdata.generated.onnx_ml_pb2 import ModelProto
from onnxdata.model.types import DeclaredType, declared_type

__all__ = ["ORT_LOG_ENV", "Backend", "Prepared", "get_backend", "ort_log_level",
           "to_declared"]

ORT_MISSING = ("the ort backend needs ONNX Runtime, an optional extra: "
               "pip install 'onnxdata[ort]' (or pip install onnxruntime)")


class Prepared(Protocol):
    """A model made ready on a backend."""

    def run(self, inputs: Sequence[Any]) -> list[Any]:
        """The outputs for ``inputs``, as the model declares them."""
        ...


class Backend(Protocol):
    """A runtime to run models on; ``get_backend`` makes one."""

    name: str

    def prepare(self, model: Any) -> Prepared:
        """``model`` (a path or a ModelProto) loaded, ready to run many times."""
        ...

    def run(self, model: Any, inputs: Sequence[Any]) -> list[Any]:
        """``prepare(model).run(inputs)``."""
        ...

    def versions(self) -> dict[str, str]:
        """What this backend is: package versions and providers, for reports."""
        ...


def get_backend(name: str, providers: Sequence[str] | None = None) -> Backend:
    """The backend called ``name``: "ort", "reference" or "module:attr".

    ``providers`` is for "ort" only (execution providers, in order). A name that
    is none of these raises ValueError; one that cannot run here raises
    ``BackendUnavailable``.
    """
    if name in ("ort", "onnxruntime"):
        return OrtBackend(providers)
    if providers:
        raise ValueError(f"providers are for the ort backend, not {name!r}")
    if name == "reference":
        return ReferenceBackend()
    if ":" in name:
        return ModuleBackend(name)
    raise ValueError(f"backend must be 'ort', 'reference' or 'module:attr', not {name!r}")


# ---------------------------------------------------------------- the model and its types

class _Model:
    """A model's path (None for a message), our ModelProto, and its declared types."""

    def __init__(self, model: Any) -> None:
        self.path: Path | None = None
        #: The model file's bytes, read once (``read_model``): what every backend is given,
        #: never the path, which another process may change (or a name ORT cannot take).
        self.data: bytes | None = None
        self.proto: ModelProto
        if isinstance(model, (str, os.PathLike)):
            self.path = Path(model)
            if self.path.is_dir():
                self.path = self.path / "model.onnx"
            self.data, self.proto = read_model(self.path)
        else:
            self.proto = as_model(model)
        self.inputs = [(v.name, declared_type(v.type)) for v in self.proto.graph.input]
        self.outputs = [(v.name, declared_type(v.type)) for v in self.proto.graph.output]
        self.shown = os.fspath(self.path) if self.path is not None else "the model"

    def feeds(self, inputs: Sequence[Any]) -> list[tuple[str, DeclaredType, Any]]:
        """``(name, declared type, value)`` of each input, checked against the declared
        inputs before any backend sees them (``fit_inputs``: FeedError)."""
        return fit_inputs(inputs, self.inputs, self.shown, self.initializers)

    def initializers(self) -> set[str]:
        """The names of the graph's initializers: the inputs that may be left out."""
        graph = self.proto.graph
        return {t.name for t in graph.initializer} | \
            {t.values.name for t in graph.sparse_initializer}

    def serialized(self) -> bytes:
        """The model's bytes: as read from its file, or serialized from the message."""
        return self.data if self.data is not None else self.proto.SerializeToString()

    def onnx_model(self) -> Any:
        import onnx  # only the reference and module backends need it
        from onnx.external_data_helper import load_external_data_for_model

        model = onnx.ModelProto.FromString(self.serialized())
        if self.path is not None:  # as onnx.load does: external data beside the model
            load_external_data_for_model(model, os.fspath(self.path.parent))
        return model


def _along(value: Any, t: DeclaredType, where: str,
           leaf: Callable[[Any, DeclaredType, str], Any],
           key: Callable[[Any, str], Any]) -> Any:
    """``value`` rebuilt along its declared type ``t``: None stays None, an optional is its
    value, a list and a dict are rebuilt, each map key through ``key`` and each tensor or
    sparse tensor through ``leaf`` (value, its declared type, its path)."""
    if value is None:
        return None
    if t.kind == "tensor" or t.kind == "sparse_tensor":
        return leaf(value, t, where)
    assert t.element is not None
    if t.kind == "optional":
        return _along(value, t.element, where, leaf, key)
    if t.kind == "sequence":
        return [_along(v, t.element, f"{where}[{i}]", leaf, key) for i, v in enumerate(value)]
    return {key(k, where): _along(v, t.element, f"{where}[{k!r}]", leaf, key)
            for k, v in value.items()}


def to_declared(value: Any, t: DeclaredType, where: str = "") -> Any:
    """A backend's output as onnxdata's value of declared type ``t``.

    Strings become bytes, string map keys bytes, Python scalars (a map's
    values) arrays of the declared element type, and raw bits a backend gave
    for a float8 type (ORT's uint8) that type. Anything else (a list where a tensor
    is declared, say) is left for the comparison to report.
    """
    return _along(value, t, where, _declared_leaf,
                  lambda k, _: k.encode("utf-8") if isinstance(k, str) else k)


def _declared_leaf(value: Any, t: DeclaredType, where: str) -> Any:
    if isinstance(value, (list, tuple)):
        # a (nested) list where the model declares a tensor: a difference of type for the
        # comparison to report; np.asarray would make it a float64 or stacked array and
        # the report a dtype or shape difference
        return value
    dt = DATA_TYPES.get(t.elem_type)
    arr = np.asarray(value)
    if dt is None:
        return arr
    if dt.code == STRING:
        if arr.dtype.kind in "OU":
            flat = [x.encode("utf-8") if isinstance(x, str) else x
                    for x in arr.reshape(-1).tolist()]
            return np.array(flat, dtype=object).reshape(arr.shape)
        return arr
    if arr.dtype == dt.dtype:
        return arr
    if arr.ndim == 0 and arr.dtype.kind in "biufc":
        return arr.astype(dt.dtype)  # a map's Python scalar
    if (arr.dtype.kind == "u" and not dt.sub_byte and arr.dtype.itemsize == dt.dtype.itemsize
            and dt.dtype.type.__module__.split(".")[0] == "ml_dtypes"):
        return arr.view(dt.dtype)  # the bits of a type numpy knows only through ml_dtypes
    return arr


# ---------------------------------------------------------------- ONNX Runtime

def _ort() -> Any:
    try:
        return importlib.import_module("onnxruntime")  # untyped, and an optional extra
    except ImportError as exc:
        raise BackendUnavailable(ORT_MISSING) from exc


#: ONNX Runtime's log severity for its sessions (0 verbose ... 4 fatal only), when set.
ORT_LOG_ENV = "ONNXDATA_ORT_LOG_LEVEL"


def ort_log_level() -> int:
    """ORT's own log lines are quiet (4: fatal only) unless ``$ONNXDATA_ORT_LOG_LEVEL``
    (``onnxdata run --verbose``: 2) asks for them: a load or run error reaches the
    results as the set's message, so ORT's copy on stderr only repeats it."""
    value = os.environ.get(ORT_LOG_ENV, "").strip()
    if value.isdigit() and 0 <= int(value) <= 4:
        return int(value)
    if value:
        raise OnnxDataError(f"${ORT_LOG_ENV} takes 0 (verbose) to 4 (fatal only), "
                            f"not {value!r}")
    return 4


class OrtBackend:
    """ONNX Runtime, one InferenceSession per prepared model."""

    name = "ort"

    def __init__(self, providers: Sequence[str] | None = None) -> None:
        self.ort = _ort()
        self.providers = list(providers or ["CPUExecutionProvider"])
        have = list(self.ort.get_available_providers())
        missing = [p for p in self.providers if p not in have]
        if missing:
            raise BackendUnavailable(f"execution provider {', '.join(missing)} is not "
                                     f"available here (ONNX Runtime {self.ort.__version__} "
                                     f"has {', '.join(have)})")

    def prepare(self, model: Any) -> _OrtPrepared:
        return _OrtPrepared(self, _Model(model))

    def run(self, model: Any, inputs: Sequence[Any]) -> list[Any]:
        return self.prepare(model).run(inputs)

    def versions(self) -> dict[str, str]:
        return {"backend": "ort", "onnxruntime": str(self.ort.__version__),
                "providers": ", ".join(self.providers)}


class _OrtPrepared:
    def __init__(self, backend: OrtBackend, model: _Model) -> None:
        self.ort = backend.ort
        self.model = model
        options = self.ort.SessionOptions()
        options.log_severity_level = ort_log_level()
        # Idle threads do not spin between runs: a test loop waits between a case's sets
        # (reading, comparing, pytest's reports), and spinning threads took a third of
        # `run --jobs 2`'s CPU over the node cases (8.2 s -> 6.3 s, the same verdicts).
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        folder = os.fspath(model.path.parent.absolute()) if model.path is not None else ""
        if folder.isprintable() and folder.encode("utf-8", "replace").decode() == folder:
            # external data is found beside the model's file (ORT takes a folder in UTF-8)
            options.add_session_config_entry(
                "session.model_external_initializers_file_folder_path", folder)
        source = model.serialized()
        try:
            self.session = self.ort.InferenceSession(source, options,
                                                     providers=backend.providers)
        except Exception as exc:  # ORT raises its own Fail/NotImplemented/... types
            raise OnnxDataError(f"ONNX Runtime cannot load {model.shown}: {exc}") from exc

    def run(self, inputs: Sequence[Any]) -> list[Any]:
        feed = {name: to_ort(self.ort, v, t, f"input {i} {name!r}")
                for i, (name, t, v) in enumerate(self.model.feeds(inputs))}
        names = [name for name, _ in self.model.outputs]
        try:
            if any(needs_ort_value(t) for _, t in self.model.outputs):
                fed = {k: as_ort_value(self.ort, v, f"input {k!r}") for k, v in feed.items()}
                values = self.session.run_with_ort_values(names, fed)
                return [read_ort_value(v, t, f"output {k} {n!r}") if needs_ort_value(t)
                        else to_declared(_ort_value_plain(v, t, n), t)
                        for k, (v, (n, t)) in enumerate(zip(values, self.model.outputs,
                                                            strict=True))]
            raw = self.session.run(names, feed)
        except OnnxDataError:
            raise
        except Exception as exc:  # ORT's run errors
            raise OnnxDataError(f"ONNX Runtime failed: {exc}") from exc
        return [to_declared(v, t) for v, (_, t) in zip(raw, self.model.outputs, strict=True)]


def _ort_value_plain(value: Any, t: DeclaredType, name: str) -> Any:
    if not value.is_tensor():
        raise OnnxDataError(f"output {name!r} ({t}): ONNX Runtime's Python API cannot return "
                            "a sequence or map as an OrtValue, and a bfloat16, float8 or "
                            "sub-byte output of the same model needs one")
    return value.numpy()


# ---------------------------------------------------------------- onnx's reference

class ReferenceBackend:
    """onnx's ``onnx.reference.ReferenceEvaluator``."""

    name = "reference"

    def __init__(self) -> None:
        try:
            self.onnx = importlib.import_module("onnx")
            self.reference = importlib.import_module("onnx.reference")
        except ImportError as exc:
            raise BackendUnavailable("the reference backend is onnx's ReferenceEvaluator: "
                                     "pip install onnx") from exc

    def prepare(self, model: Any) -> _ReferencePrepared:
        m = _Model(model)
        try:
            evaluator = self.reference.ReferenceEvaluator(m.onnx_model())
        except Exception as exc:  # onnx raises many kinds for models it cannot run
            raise OnnxDataError(f"onnx's ReferenceEvaluator cannot load {m.shown}: "
                                f"{type(exc).__name__}: {exc}") from exc
        return _ReferencePrepared(m, evaluator)

    def run(self, model: Any, inputs: Sequence[Any]) -> list[Any]:
        return self.prepare(model).run(inputs)

    def versions(self) -> dict[str, str]:
        return {"backend": "reference", "onnx": str(self.onnx.__version__)}


class _ReferencePrepared:
    def __init__(self, model: _Model, evaluator: Any) -> None:
        self.model = model
        self.evaluator = evaluator

    def run(self, inputs: Sequence[Any]) -> list[Any]:
        feed = {name: _plain(v, t, f"input {i} {name!r}")
                for i, (name, t, v) in enumerate(self.model.feeds(inputs))}
        try:
            raw = self.evaluator.run(None, feed)
        except Exception as exc:  # whatever an operator's implementation raises
            raise OnnxDataError(f"onnx's ReferenceEvaluator failed: {type(exc).__name__}: "
                                f"{exc}") from exc
        return _outputs(raw, self.model)


def _plain(value: Any, t: DeclaredType, where: str) -> Any:
    """A value with str for strings (as onnx's reference and most backends take them)."""
    return _along(value, t, where, _plain_leaf,
                  lambda k, at: text(k, at) if isinstance(k, bytes) else k)


def _plain_leaf(value: Any, t: DeclaredType, where: str) -> Any:
    if t.kind == "sparse_tensor":
        raise BackendCannotTake(f"{where}: a sparse tensor input")
    arr = np.asarray(value)
    return strings_as_text(arr, where) if arr.dtype.kind in "OS" else arr


def _outputs(raw: Sequence[Any], model: _Model) -> list[Any]:
    raw = list(raw)
    if len(raw) != len(model.outputs):
        raise OnnxDataError(f"the backend returned {len(raw)} outputs; {model.shown} "
                            f"declares {len(model.outputs)}")
    return [to_declared(v, t) for v, (_, t) in zip(raw, model.outputs, strict=True)]


# ---------------------------------------------------------------- any onnx Backend

class ModuleBackend:
    """Any ``onnx.backend.base.Backend``, named ``module:attr``."""

    def __init__(self, spec: str, device: str = "CPU") -> None:
        module, _, attr = spec.partition(":")
        if not module or not attr:
            raise ValueError(f"a backend named module:attr, not {spec!r}")
        try:
            found: Any = importlib.import_module(module)
        except ImportError as exc:
            raise BackendUnavailable(f"cannot import {module} for backend {spec}: {exc}") \
                from exc
        for part in attr.split("."):
            if not hasattr(found, part):
                raise ValueError(f"backend {spec}: {module} has no {attr}")
            found = getattr(found, part)
        if not hasattr(found, "prepare"):
            raise ValueError(f"backend {spec} is not an onnx Backend (it has no prepare)")
        self.name = spec
        self.backend = found
        self.device = device
        self.module = module

    def prepare(self, model: Any) -> _ModulePrepared:
        m = _Model(model)
        try:
            rep = self.backend.prepare(m.onnx_model(), self.device)
        except Exception as exc:  # the user's backend may raise anything
            raise OnnxDataError(f"backend {self.name} cannot load {m.shown}: "
                                f"{type(exc).__name__}: {exc}") from exc
        return _ModulePrepared(m, rep, self.name)

    def run(self, model: Any, inputs: Sequence[Any]) -> list[Any]:
        return self.prepare(model).run(inputs)

    def versions(self) -> dict[str, str]:
        top = importlib.import_module(self.module.split(".")[0])
        return {"backend": self.name, self.module.split(".")[0]:
                str(getattr(top, "__version__", "unknown"))}


class _ModulePrepared:
    def __init__(self, model: _Model, rep: Any, name: str) -> None:
        self.model = model
        self.rep = rep
        self.name = name

    def run(self, inputs: Sequence[Any]) -> list[Any]:
        feed = [_plain(v, t, f"input {i} {n!r}")
                for i, (n, t, v) in enumerate(self.model.feeds(inputs))]
        try:
            raw = self.rep.run(feed)
        except Exception as exc:  # the user's backend may raise anything
            raise OnnxDataError(f"backend {self.name} failed: {type(exc).__name__}: "
                                f"{exc}") from exc
        return _outputs(raw, self.model)
