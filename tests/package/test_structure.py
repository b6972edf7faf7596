"""The package's shape: its layers, in the one order written here, with no import upward,
no import cycle, no private name imported from another module, every name imported from
the module that defines it (no internal re-exports), the compiled loops loaded in one
module, and no module over 800 lines.

Imports are read with ``ast`` from every module, function-level ones included, so an
import hidden in a function to dodge a cycle is caught as well.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "onnxdata"

#: The layers, lowest first. A module may import from its own layer and the ones before.
LAYERS: list[tuple[str, ...]] = [
    ("onnxdata.errors", "onnxdata.generated"),
    ("onnxdata.core",),
    ("onnxdata.wire",),
    ("onnxdata.rules",),
    ("onnxdata.model",),
    ("onnxdata.convert",),
    ("onnxdata.engine",),
    ("onnxdata.explorer",),
    ("onnxdata.io",),
    ("onnxdata.page",),
    ("onnxdata.cases",),
    ("onnxdata.cli",),
    ("onnxdata", "onnxdata.__main__", "onnxdata.strategies", "onnxdata.pytest_plugin"),
]

#: One job a module; past this a module is split by job, not by length.
MAX_LINES = 800


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def layer_of(name: str) -> int:
    """The index in LAYERS of the longest prefix that names ``name``'s layer."""
    best, length = -1, -1
    for i, layer in enumerate(LAYERS):
        for prefix in layer:
            if (name == prefix or name.startswith(prefix + ".")) and len(prefix) > length:
                best, length = i, len(prefix)
    assert best >= 0, f"{name} is in no layer: add it to LAYERS"
    return best


def imports(path: Path) -> Iterator[tuple[int, str, list[str]]]:
    """(line, module imported, names taken) for every import of onnxdata in ``path``."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and \
                node.module.split(".")[0] == "onnxdata":
            names = [a.name for a in node.names]
            if node.module == "onnxdata":  # from onnxdata import errors: a module, or a name
                for a in names:
                    full = f"onnxdata.{a}"
                    yield node.lineno, full if full in MODULES else "onnxdata", [a]
            else:
                yield node.lineno, node.module, names
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] == "onnxdata":
                    yield node.lineno, a.name, []


def is_module(name: str) -> bool:
    """A module of ours, Python or compiled (``from onnxdata.wire import _walk`` takes a
    module, not a private name)."""
    path = PACKAGE.parent.joinpath(*name.split("."))
    return name in MODULES or path.with_suffix(".pyx").is_file()


def graph() -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for name, path in MODULES.items():
        out[name] = {m for _, m, _ in imports(path) if m in MODULES and m != name}
    return out


def test_every_module_is_in_a_layer() -> None:
    for name in MODULES:
        layer_of(name)  # asserts, naming the module
    assert len(MODULES) > 60  # the walk found the package, not an empty folder


@pytest.mark.parametrize("name", sorted(MODULES))
def test_no_import_from_a_higher_layer(name: str) -> None:
    mine = layer_of(name)
    upward = [f"line {line}: {target} ({LAYERS[layer_of(target)][0]})"
              for line, target, _ in imports(MODULES[name]) if layer_of(target) > mine]
    assert upward == [], f"{name} ({LAYERS[mine][0]}) imports upward: {upward}"


@pytest.mark.parametrize("name", sorted(MODULES))
def test_no_private_name_from_another_module(name: str) -> None:
    private = [f"line {line}: {target}.{n}" for line, target, names in imports(MODULES[name])
               for n in names if n.startswith("_") and not n.startswith("__")
               and not is_module(f"{target}.{n}")]
    assert private == [], f"{name} imports private names: {private}"


def cycles_in(edges: dict[str, set[str]]) -> list[list[str]]:
    """Every cycle a depth-first walk of ``edges`` closes, each as a path back to its start."""
    cycles: list[list[str]] = []
    state: dict[str, int] = {}  # 1 on the stack, 2 done
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                cycles.append([*stack[stack.index(nxt):], nxt])
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(edges):
        if node not in state:
            visit(node)
    return cycles


@functools.cache
def defined_names(path: Path) -> frozenset[str]:
    """The names a module's own top-level code binds: functions, classes and assignments
    (in ``if``/``try`` blocks too), not the names it imports, but for the generated
    classes it imports (their one home in our code: ``core.messages``)."""
    names: set[str] = set()

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                    "onnxdata.generated"):
                names.update(a.asname or a.name for a in node.names)
            elif isinstance(node, ast.If):
                visit(node.body)
                visit(node.orelse)
            elif isinstance(node, ast.Try):
                visit(node.body)
                for handler in node.handlers:
                    visit(handler.body)
                visit(node.orelse)
    visit(ast.parse(path.read_text(encoding="utf-8")).body)
    return frozenset(names)


def is_package(name: str) -> bool:
    return name in MODULES and MODULES[name].name == "__init__.py"


@pytest.mark.parametrize("name", sorted(MODULES))
def test_names_come_from_the_module_that_defines_them(name: str) -> None:
    """``from onnxdata.a import f`` only where ``a`` defines ``f``: no module passes on a
    name it imported, so a reader finds a name's home from the import line. A package's
    ``__init__`` is a public surface and may gather names; nothing inside imports from one."""
    passed_on = []
    for line, target, names in imports(MODULES[name]):
        if target not in MODULES or target == "onnxdata.generated" or \
                target.startswith("onnxdata.generated."):
            continue
        if is_package(target):
            if not is_package(name) and names and not all(is_module(f"{target}.{n}")
                                                          for n in names):
                passed_on.append(f"line {line}: {target} is a package surface")
            continue
        home = defined_names(MODULES[target])
        passed_on += [f"line {line}: {target}.{n}" for n in names
                      if n not in home and not is_module(f"{target}.{n}")]
    assert passed_on == [], f"{name} imports names their module does not define: {passed_on}"


def test_one_module_loads_the_compiled_loops() -> None:
    """``wire/loops.py`` alone imports ``_walk``, ``_layouts`` and ``_varints`` and reads
    ONNXDATA_PURE_PYTHON: the one switch every other module asks."""
    loaders, readers = set(), set()
    for name, path in MODULES.items():
        text = path.read_text(encoding="utf-8")
        if "ONNXDATA_PURE_PYTHON" in text and "environ" in text:
            readers.add(name)
        for _, target, names in imports(path):
            if any(t.split(".")[-1] in {"_walk", "_layouts", "_varints", "_float_rows"}
                   for t in [target, *(f"{target}.{n}" for n in names)]):
                loaders.add(name)
        if "import_module(" in text and ("_walk" in text or "_float_rows" in text):
            loaders.add(name)
    assert readers == {"onnxdata.wire.loops"}
    assert loaders == {"onnxdata.wire.loops"}


def test_a_name_passed_on_is_seen(tmp_path: Path) -> None:
    """The re-export check sees a name a module only imports, and takes the names it binds."""
    fake = tmp_path / "mod.py"
    fake.write_text("from onnxdata.wire.format import LEN\nfrom onnxdata.generated.onnx_ml_pb2 "
                    "import TensorProto\nX: int = 1\ndef f(): pass\nclass C: pass\n"
                    "try:\n    Y = 2\nexcept ImportError:\n    Y = 3\n", encoding="utf-8")
    assert defined_names(fake) == {"TensorProto", "X", "f", "C", "Y"}
    assert "RangeStore" not in defined_names(MODULES["onnxdata.wire.walk"])


def test_no_import_cycle() -> None:
    found = cycles_in(graph())
    assert found == [], "import cycles: " + "; ".join(" -> ".join(c) for c in found)


@pytest.mark.parametrize("name", sorted(MODULES))
def test_module_is_at_most_800_lines(name: str) -> None:
    lines = len(MODULES[name].read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_LINES, f"{name} has {lines} lines"


CYTHON = sorted(p for ext in ("*.pyx", "*.pxd") for p in PACKAGE.rglob(ext))


@pytest.mark.parametrize("path", CYTHON, ids=lambda p: p.name)
def test_cython_source_is_at_most_800_lines(path: Path) -> None:
    """The compiled loops keep the same limit as the Python modules."""
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_LINES, f"{path.name} has {lines} lines"


def test_cython_sources_are_found() -> None:
    assert {p.name for p in CYTHON} >= {"_walk.pyx", "_layouts.pyx", "_wire.pxd", "_seen.pxd"}


def test_the_checks_catch_what_they_check(tmp_path: Path) -> None:
    """The parser sees a function-level import, an import from a layer above, a private
    name and a cycle: the checks above cannot pass by seeing nothing."""
    fake = tmp_path / "mod.py"
    fake.write_text("def f():\n    from onnxdata.cli.main import _run\n"
                    "from onnxdata import errors\n", encoding="utf-8")
    found = sorted(imports(fake))
    assert found == [(2, "onnxdata.cli.main", ["_run"]), (3, "onnxdata.errors", ["errors"])]
    assert layer_of("onnxdata.cli.main") > layer_of("onnxdata.wire.walk")
    assert layer_of("onnxdata.explorer.table") == LAYERS.index(("onnxdata.explorer",))
    edges = graph()
    assert "onnxdata.wire.format" in edges["onnxdata.wire.walk"]  # imports are seen
    assert cycles_in({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c", "a"]]
    assert is_module("onnxdata.wire._walk") and not is_module("onnxdata.cli.main._run")
