"""Test data sets generated from a model: ``make_test_data_sets`` and ``onnxdata make``.

The inputs are drawn for the model's declared input types (``cases.draw``,
answered by a numpy ``Generator`` seeded from ``seed`` and the set's number, so
the same call writes the same bytes); the outputs are what a backend
(``onnxdata.cases.backends``: ONNX Runtime, onnx's ReferenceEvaluator, or
``module:attr``) computes for them. Each set is written atomically, typed by
the model, with ``onnxdata-make.json`` beside its ``.pb`` files recording the
seed, the named dims drawn and the backend, so the run repeats
(``load_test_data_set``, ``diff`` and ``run`` read only ``input_K.pb`` and
``output_K.pb``).

A model input that cannot be generated (an opaque type, a tensor whose rank or
a dim nothing fixes) is refused before anything is drawn, with an error naming
the input and saying why; ``shapes={"x": (2, "N")}`` (``--shape x=2,N``) fixes
one. Nothing is written until every set has been drawn and run.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from onnxdata.cases.backends import Backend, get_backend
from onnxdata.cases.draw import (
    Dim,
    GenerationError,
    NumpyChoices,
    Plan,
    Style,
    check_generable,
    generate,
)
from onnxdata.cases.load import load_test_data_set
from onnxdata.cases.save import ModelArg, as_model, read_model, save_test_data_set
from onnxdata.errors import OnnxDataError
from onnxdata.io.atomic import atomic_writer, staged_folder
from onnxdata.model.types import DeclaredType, declared_type

__all__ = ["RECORD", "make_test_data_sets"]

#: The file in each generated set that says how it was made.
RECORD = "onnxdata-make.json"


@dataclass(frozen=True)
class _Set:
    inputs: list[Any]
    outputs: list[Any]
    record: dict[str, Any]


def _input_types(model: Any, shapes: Mapping[str, Sequence[Dim]], plan: Plan
                 ) -> list[tuple[str, DeclaredType]]:
    """The model's inputs, each checked to be one ``generate`` can draw."""
    out = []
    names = [v.name for v in model.graph.input]
    unknown = [n for n in shapes if n not in names]
    if unknown:
        raise OnnxDataError(f"--shape/shapes= names {', '.join(map(repr, unknown))}, which the "
                            f"model has no input called (its inputs: "
                            f"{', '.join(map(repr, names)) or 'none'})")
    for i, v in enumerate(model.graph.input):
        where = f"input {i} {v.name!r}"
        try:
            t = declared_type(v.type)
        except ValueError as exc:
            raise GenerationError(f"{where}: cannot be generated: {exc}") from None
        plan.shape = tuple(shapes[v.name]) if v.name in shapes else None
        plan.name = v.name
        check_generable(t, plan, f"{where} ({t})")
        out.append((v.name, t))
    return out


def _check_output_types(model: Any) -> None:
    """Each output has a type to write its file by, or GenerationError saying how to give
    one (onnxscript leaves a function's outputs untyped without a return annotation)."""
    for k, v in enumerate(model.graph.output):
        try:
            declared_type(v.type)
        except ValueError as exc:
            raise GenerationError(
                f"output {k} {v.name!r}: the model declares no type for it ({exc}), and "
                "each expected output is written by its declared type; give the outputs "
                "types: onnx's shape inference fills them where it can (m = onnx.load(PATH); "
                "onnx.save(onnx.shape_inference.infer_shapes(m), PATH)), or in onnxscript "
                "annotate the function's return (-> FLOAT[2, 3]); or pass --inputs-only"
            ) from None


def make_test_data_sets(model: ModelArg, n: int = 3, *, seed: int = 0,
                        backend: str | Backend = "reference", out: str | os.PathLike[str]
                        | None = None, inputs_only: bool = False,
                        shapes: Mapping[str, Sequence[Dim]] | None = None,
                        dims: Mapping[str, int] | None = None, length: int | None = None,
                        budget: int = 4096, style: Style = "small",
                        overwrite: bool = False) -> list[Path]:
    """Write ``n`` test data sets for ``model``; the paths of the sets written.

    ``model`` is a ``model.onnx`` path (or its folder). The sets go beside it as
    ``test_data_set_0..n-1`` (existing ones are replaced only with
    ``overwrite=True``), or, with ``out``, into a new test case folder with a
    copy of the model. ``backend`` computes the outputs ("reference", "ort",
    "module:attr" or a Backend); ``inputs_only`` writes no outputs, for a runtime
    that is itself under test. ``shapes`` gives an input's shape where the model
    leaves it open, ``dims`` fixes named dims (others are drawn once per set,
    shared by every input). ``length`` makes every sequence and map that long
    (else 0 to 3, drawn each time). ``budget`` bounds the elements of one set;
    ``style="small"`` draws small integers and quarter-step floats, ``"any"``
    every bit pattern. Errors: ``GenerationError`` naming the input that cannot
    be generated; ``OnnxDataError`` when the backend fails on a set; ValueError for
    ``n`` < 1 or a negative ``seed``, ``length`` or ``budget``.
    """
    for name, value, least in (("n", n, 1), ("seed", seed, 0), ("budget", budget, 0)):
        if value < least:
            made = " (a call that makes no set)" if name == "n" else ""
            raise ValueError(f"{name} must be >= {least}{made}, not {value}")
    if length is not None and length < 0:
        raise ValueError(f"length must be >= 0 or None, not {length}")
    path = Path(model) if isinstance(model, (str, os.PathLike)) else None
    if path is not None and path.is_dir():
        path = path / "model.onnx"
    data, proto = read_model(path) if path is not None else (None, as_model(model))
    plan = Plan(budget=budget, style=style, utf8=True, open_dims="refuse", min_named_dim=1)
    types = _input_types(proto, dict(shapes or {}), plan)
    if not inputs_only:
        _check_output_types(proto)
    target = Path(out) if out is not None else (path.parent if path is not None else None)
    if target is None:
        raise OnnxDataError("a model given as a message needs out= (a folder to write to)")
    if out is not None and target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise OnnxDataError(f"{target} exists and is not empty: --out needs a new folder")
    names = [f"test_data_set_{i}" for i in range(n)]
    if out is None and not overwrite:
        taken = [s for s in names if (target / s).exists()]
        if taken:
            raise OnnxDataError(f"{target / taken[0]} exists: pass --overwrite (overwrite=True) "
                                "to replace it, or --out DIR for a new test case")
    runner = None if inputs_only else (
        get_backend(backend) if isinstance(backend, str) else backend)
    prepared = runner.prepare(path if path is not None else proto) if runner else None
    plan = Plan(budget=budget, style=style, utf8=True, open_dims="refuse", min_named_dim=1,
                length=length, dims=dict(dims or {}))
    sets = [_draw(i, seed, types, shapes or {}, plan, prepared, runner) for i in range(n)]
    if out is None:
        assert path is not None
        return [_write_set(target / s, made, proto, path, overwrite)
                for s, made in zip(names, sets, strict=True)]
    return _write_case(target, data, proto, names, sets)


def _draw(i: int, seed: int, types: list[tuple[str, DeclaredType]],
          shapes: Mapping[str, Sequence[Dim]], base: Plan, prepared: Any,
          runner: Backend | None) -> _Set:
    choices = NumpyChoices(np.random.default_rng([seed, i]))
    plan = dataclasses.replace(base, dims=dict(base.dims))  # named dims: one size per set
    inputs = []
    for k, (name, t) in enumerate(types):
        plan.shape = tuple(shapes[name]) if name in shapes else None
        plan.name = name
        inputs.append(generate(t, choices, plan, f"input {k} {name!r}"))
    outputs: list[Any] = []
    if prepared is not None:
        try:
            outputs = prepared.run(inputs)
        except OnnxDataError as exc:
            raise OnnxDataError(f"test_data_set_{i} (seed {seed}): the {runner and runner.name}"
                                f" backend failed on the generated inputs: {exc}") from exc
        except Exception as exc:  # a backend's own error type (the reference's, say)
            raise OnnxDataError(f"test_data_set_{i} (seed {seed}): the {runner and runner.name}"
                                f" backend failed on the generated inputs: "
                                f"{type(exc).__name__}: {exc}") from exc
    from onnxdata.core.version import VERSION

    record = {"made_by": f"onnxdata {VERSION} make", "seed": seed, "set": i,
              "rng": f"numpy.random.default_rng([{seed}, {i}])", "style": plan.style,
              "budget": plan.budget, "length": plan.length, "dims": plan.dims,
              "shapes": {k: list(v) for k, v in shapes.items()},
              "backend": runner.versions() if runner is not None else None,
              "inputs_only": runner is None}
    return _Set(inputs, outputs, record)


def _write_set(folder: Path, made: _Set, proto: Any, model_path: Path, overwrite: bool
               ) -> Path:
    """One set, atomically: written into a hidden sibling with its record, read back with
    the model's types (a backend's output that does not fit its declared type, a list
    where a tensor is declared, is refused here, not written), then renamed into place."""
    with staged_folder(folder, replace=overwrite) as stage:
        try:  # the inputs were drawn by their declared types: what does not fit is an output
            save_test_data_set(stage, made.inputs, made.outputs, model=proto)
            load_test_data_set(stage, model=model_path)
        except OnnxDataError as exc:
            backend = made.record["backend"] or {}
            shown = re.sub(r"\S*/((?:in|out)put_\d+\.pb)", r"\1", str(exc))
            raise OnnxDataError(f"{folder.name} (seed {made.record['seed']}): the "
                                f"{backend.get('backend', '')} backend's outputs do not fit "
                                f"the model's declared types: {shown}") from exc
        with atomic_writer(stage / RECORD) as f:
            f.write((json.dumps(made.record, indent=2) + "\n").encode())
    return folder


def _write_case(target: Path, data: bytes | None, proto: Any, names: list[str],
                sets: list[_Set]) -> list[Path]:
    """A new test case folder, atomically: the model (the bytes read once, or the message)
    and every set, then one rename."""
    with staged_folder(target, replace=False) as stage:  # target is none, or empty
        with atomic_writer(stage / "model.onnx") as f:
            f.write(data if data is not None else proto.SerializeToString())
        for name, made in zip(names, sets, strict=True):
            _write_set(stage / name, made, proto, stage / "model.onnx", False)
    return [target / name for name in names]


# ---------------------------------------------------------------- the command


