"""onnxdata locate: the first node where ONNX Runtime, rewritten at one node by
tests/locate_backends.py, and onnx's reference diverge, in chains of tensors, sequences,
optionals and maps; the reduced case run again by ``onnxdata run --against``; halving
when fewer values may be exposed at once or a run fails; a crash isolated; the page."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from onnxdata.cases import locate, save_test_data_set
from onnxdata.cases.backends import get_backend
from onnxdata.cases.divergence import Located
from onnxdata.cases.expectations import read_expectations
from onnxdata.cli.main import main
from tests.conftest import CORPUS

pytest.importorskip("onnxruntime", reason="onnxruntime is the optional extra [ort]")
onnx = pytest.importorskip("onnx", reason="locate edits the model with onnx")
h = onnx.helper
F = onnx.TensorProto.FLOAT
PERTURBED = "tests.locate_backends:perturbed"
X = np.array([[1, -2, 3], [-4, 5, -6]], np.float32)
Y = np.array([[0.5, 1, -1], [2, 2, 1]], np.float32)


def _seq() -> Any:
    return h.make_sequence_type_proto(h.make_tensor_type_proto(F, None))


def _case(folder: Path, nodes: list[Any], outputs: list[Any], target: str = "",
          inits: tuple[Any, ...] = (), opsets: tuple[tuple[str, int], ...] = (("", 18),),
          doc: dict[str, str] | None = None, expected_by: str = "reference") -> Path:
    """A test case of ``nodes`` (inputs x, y: float [2, 3]), the node named ``target``
    marked for the perturbed backend, expected outputs from ``expected_by``."""
    for n in nodes:
        if n.name == target:
            n.doc_string = "target"
        if doc and n.name in doc:
            n.doc_string = doc[n.name]
    g = h.make_graph(nodes, "g", [h.make_tensor_value_info("x", F, [2, 3]),
                                  h.make_tensor_value_info("y", F, [2, 3])],
                     outputs, list(inits))
    model = h.make_model(g, opset_imports=[h.make_opsetid(d, v) for d, v in opsets])
    folder.mkdir(parents=True)
    onnx.save(model, str(folder / "model.onnx"))
    outs = get_backend(expected_by).run(folder / "model.onnx", [X, Y])
    save_test_data_set(folder / "test_data_set_0", [X, Y], outs, model=folder / "model.onnx")
    return folder


def _chain(folder: Path, target: str, doc: dict[str, str] | None = None) -> Path:
    """Eleven nodes, tensors and sequences mixed."""
    nodes = [
        h.make_node("Add", ["x", "y"], ["a"], name="add"),
        h.make_node("Mul", ["a", "x"], ["b"], name="mul"),
        h.make_node("SequenceConstruct", ["a", "b"], ["s"], name="construct"),
        h.make_node("SequenceAt", ["s", "zero"], ["t"], name="at"),
        h.make_node("Relu", ["t"], ["r"], name="relu"),
        h.make_node("SequenceInsert", ["s", "r"], ["s2"], name="insert"),
        h.make_node("SequenceLength", ["s2"], ["n"], name="length"),
        h.make_node("ConcatFromSequence", ["s2"], ["c"], name="concat", axis=0),
        h.make_node("ReduceSum", ["c"], ["total"], name="sum", keepdims=0),
        h.make_node("Cast", ["n"], ["nf"], name="cast", to=F),
        h.make_node("Mul", ["total", "nf"], ["out"], name="scale"),
    ]
    return _case(folder, nodes, [h.make_tensor_value_info("out", F, []),
                                 h.make_value_info("s2", _seq())], target,
                 (h.make_tensor("zero", onnx.TensorProto.INT64, [], [0]),), doc=doc)


def _located(found: Located, name: str, op: str, output: str, path: str,
             domain: str = "") -> None:
    assert found.status == "located", found.lines()
    assert found.node is not None
    assert (found.node.name, found.node.op_type, found.node.domain, found.output,
            found.path) == (name, op, domain, output, path), found.lines()


def _run_reduced(folder: Path, capsys: pytest.CaptureFixture[str], against: str = "reference"
                 ) -> dict[str, Any]:
    capsys.readouterr()
    code = main(["run", str(folder), "--backend", PERTURBED, "--against", against, "--json"])
    out: dict[str, Any] = json.loads(capsys.readouterr().out)
    assert code == 1
    return out


def test_the_rewritten_relu_of_a_chain_of_tensors_and_sequences_is_named_and_reduced(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    case = _chain(tmp_path / "chain", "relu")
    found = locate(case, backend=PERTURBED, isolate=False, reduce=tmp_path / "small")
    # Relu -> LeakyRelu(0.5): the first negative input, a[0, 1] = -1, gives -0.5 vs 0
    _located(found, "relu", "Relu", "r", "[0, 1]")
    assert (found.max_abs, found.differences[0].count) == (2.5, 3)
    assert [n.name for n in found.spread] == ["insert", "concat", "sum", "scale"]
    assert found.outputs_differ == ("out", "s2")
    assert [n.name for n in found.graph_path] == ["add", "construct", "at", "relu"]
    assert found.checked == 11 and not found.unseen and not found.notes
    assert found.reproduced and found.reproduced[0].message == found.differences[0].message
    small = onnx.load(str(tmp_path / "small" / "model.onnx"))
    onnx.checker.check_model(small, full_check=True)
    assert [n.op_type for n in small.graph.node] == ["Relu"]  # the rest of the model is gone
    assert [i.name for i in small.graph.input] == ["t"]
    (s,) = _run_reduced(tmp_path / "small", capsys)["sets"]
    (o,) = s["outputs"]
    assert o["name"] == "r" and o["against"][0]["message"] == found.differences[0].message


def test_a_sequence_ops_perturbed_output_is_located_with_the_path_inside_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    case = _chain(tmp_path / "chain", "insert")
    found = locate(case, backend=PERTURBED, isolate=False, reduce=tmp_path / "small")
    _located(found, "insert", "SequenceInsert", "s2", "[1][0, 0]")  # element 1 got + 1
    assert found.max_abs == 1.0
    assert [n.name for n in found.spread] == ["concat", "sum", "scale"]
    small = onnx.load(str(tmp_path / "small" / "model.onnx"))
    assert [n.op_type for n in small.graph.node] == ["SequenceInsert"]
    assert [i.name for i in small.graph.input] == ["s", "r"]
    (s,) = _run_reduced(tmp_path / "small", capsys)["sets"]
    assert s["outputs"][0]["against"][0]["path"] == "[1]"


def test_a_difference_inside_an_optional_is_located(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    nodes = [
        h.make_node("Add", ["x", "y"], ["a"], name="add"),
        h.make_node("SequenceConstruct", ["a", "x", "y"], ["s"], name="construct"),
        h.make_node("Optional", ["s"], ["o"], name="wrap"),
        h.make_node("OptionalHasElement", ["o"], ["has"], name="has"),
        h.make_node("OptionalGetElement", ["o"], ["s2"], name="unwrap"),
        h.make_node("ConcatFromSequence", ["s2"], ["c"], name="concat", axis=0),
        h.make_node("Relu", ["c"], ["out"], name="relu"),
    ]
    opt = h.make_optional_type_proto(_seq())
    case = _case(tmp_path / "opt", nodes,
                 [h.make_tensor_value_info("out", F, None), h.make_value_info("o", opt),
                  h.make_tensor_value_info("has", onnx.TensorProto.BOOL, [])], "wrap",
                 expected_by="ort")
    # against ORT itself: onnx's reference gives Optional(s) as [s] (op_optional.py returns
    # ([x],)), a one-element sequence holding the stacked tensors: locate finds that too (the
    # expected outputs are ORT's: save_test_data_set refuses the reference's [s] as the
    # model's declared optional(seq(tensor)))
    assert locate(case, isolate=False).node.name == "wrap"  # type: ignore[union-attr]
    found = locate(case, backend=PERTURBED, against="ort", isolate=False,
                   reduce=tmp_path / "small")
    _located(found, "wrap", "Optional", "o", "[1][0, 0]")  # the optional's sequence, [1]
    assert [n.name for n in found.spread] == ["unwrap", "concat", "relu"]
    assert found.outputs_differ == ("out", "o")
    small = onnx.load(str(tmp_path / "small" / "model.onnx"))
    assert [n.op_type for n in small.graph.node] == ["Optional"]
    (s,) = _run_reduced(tmp_path / "small", capsys, "ort")["sets"]
    assert s["outputs"][0]["against"][0]["path"] == "[1]"


def test_a_difference_inside_a_map_value_is_located(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    nodes = [
        h.make_node("Add", ["x", "y"], ["a"], name="add"),
        h.make_node("Softmax", ["a"], ["p"], name="softmax", axis=1),
        h.make_node("ZipMap", ["p"], ["maps"], name="zipmap", domain="ai.onnx.ml",
                    classlabels_strings=["a", "b", "c"]),
        h.make_node("ReduceMax", ["p"], ["top"], name="top", keepdims=0),
    ]
    maps = h.make_sequence_type_proto(h.make_map_type_proto(
        onnx.TensorProto.STRING, h.make_tensor_type_proto(F, [])))
    case = _case(tmp_path / "zip", nodes,
                 [h.make_value_info("maps", maps), h.make_tensor_value_info("top", F, None)],
                 "zipmap", opsets=(("", 18), ("ai.onnx.ml", 3)), expected_by="ort")
    # onnx's reference has no ZipMap: against ONNX Runtime itself
    found = locate(case, backend=PERTURBED, against="ort", isolate=False,
                   reduce=tmp_path / "small")
    # labels b and c swapped: the first map's values of 'b' and 'c' differ
    _located(found, "zipmap", "ZipMap", "maps", "[0]['b']", domain="ai.onnx.ml")
    assert found.pictures is not None and found.pictures[0].shape == ()  # the map's value
    assert not found.spread and found.outputs_differ == ("maps",)
    small = onnx.load(str(tmp_path / "small" / "model.onnx"))
    assert [n.op_type for n in small.graph.node] == ["ZipMap"]
    (s,) = _run_reduced(tmp_path / "small", capsys, "ort")["sets"]
    assert s["outputs"][0]["against"][0]["path"] == "[0]['b']"


def test_fewer_values_exposed_at_once_halves_the_candidates_and_finds_the_same_node(
        tmp_path: Path) -> None:
    case = _chain(tmp_path / "chain", "relu")
    whole = locate(case, backend=PERTURBED, isolate=False)
    halved = locate(case, backend=PERTURBED, isolate=False, max_outputs=2)
    _located(halved, "relu", "Relu", "r", "[0, 1]")
    assert whole.largest_run == 11 and whole.runs == 2  # the model as it is, then all at once
    # 11 candidates halved to parts of at most 2: 6 (3 + 3) and 5 (3 + 2), each 3 as 2 + 1:
    # seven parts, after the model's own run
    assert halved.largest_run == 2 and halved.runs == 8
    assert [n.name for n in halved.spread] == [n.name for n in whole.spread]


def test_a_value_the_backend_cannot_return_is_unseen_and_the_search_goes_on(
        tmp_path: Path) -> None:
    case = _chain(tmp_path / "chain", "relu", doc={"mul": "refuse"})
    found = locate(case, backend=PERTURBED, isolate=False)
    _located(found, "relu", "Relu", "r", "[0, 1]")
    assert list(found.unseen) == ["b"]
    assert "cannot return 'b'" in found.unseen["b"]
    assert found.checked == 10
    assert any(line.startswith("  unseen: 'b': ") for line in found.lines())


def test_a_backend_crash_on_one_exposed_value_is_isolated(tmp_path: Path) -> None:
    case = _chain(tmp_path / "chain", "relu", doc={"mul": "crash"})
    found = locate(case, backend=PERTURBED, timeout=120)
    _located(found, "relu", "Relu", "r", "[0, 1]")
    assert list(found.unseen) == ["b"]
    assert "process died" in found.unseen["b"] and "signal 11" in found.unseen["b"]


def _if_case(folder: Path) -> Path:
    then = h.make_graph([h.make_node("Relu", ["a"], ["r"], name="inner", doc_string="target")],
                        "then", [], [h.make_tensor_value_info("r", F, None)])
    other = h.make_graph([h.make_node("Neg", ["a"], ["r2"])], "else", [],
                         [h.make_tensor_value_info("r2", F, None)])
    nodes = [
        h.make_node("Add", ["x", "y"], ["a"], name="add"),
        h.make_node("ReduceSum", ["x"], ["sx"], name="sum", keepdims=0),
        h.make_node("Less", ["sx", "big"], ["cond"], name="less"),
        h.make_node("If", ["cond"], ["picked"], name="choose", then_branch=then,
                    else_branch=other),
        h.make_node("Abs", ["picked"], ["out"], name="abs"),
    ]
    return _case(folder, nodes, [h.make_tensor_value_info("out", F, None)],
                 inits=(h.make_tensor("big", F, [], [100.0]),))


@pytest.mark.slow
def test_a_backend_hang_on_one_exposed_value_is_killed_after_the_timeout(
        tmp_path: Path) -> None:
    case = _chain(tmp_path / "chain", "relu", doc={"mul": "hang"})
    found = locate(case, backend=PERTURBED, timeout=5, max_outputs=4)
    _located(found, "relu", "Relu", "r", "[0, 1]")
    assert found.unseen == {"b": f"backend {PERTURBED}: timed out after 5 s"}


def test_outputs_that_differ_only_when_no_value_is_exposed_are_said_so(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    case = _chain(tmp_path / "chain", "mul", doc={"mul": "fused"})
    found = locate(case, backend=PERTURBED, isolate=False)
    assert (found.status, found.node, found.outputs_differ) == ("hidden", None, ("out", "s2"))
    assert "no value does when the values are exposed" in found.message
    assert main(["locate", str(case), "--backend", PERTURBED, "--in-process"]) == 1


def test_a_difference_inside_an_if_body_is_located_at_the_if(tmp_path: Path) -> None:
    case = _if_case(tmp_path / "if")
    found = locate(case, backend=PERTURBED, isolate=False, reduce=tmp_path / "small")
    _located(found, "choose", "If", "picked", "[0, 1]")
    assert found.node is not None and found.node.inputs == ("cond", "a")  # 'a' from outside
    assert any("2 nodes inside the subgraphs of 'choose' (If)" in n for n in found.notes)
    assert found.reproduced  # the If alone, 'a' a graph input of the reduced case


def test_the_expectations_tolerance_applies_to_intermediate_values_by_name(
        tmp_path: Path) -> None:
    case = _chain(tmp_path / "chain", "relu")
    rules = tmp_path / "exp.json"
    rules.write_text(json.dumps({"tolerance": [{"case": "chain", "output": "r",
                                                "atol": 10}]}))
    found = locate(case, backend=PERTURBED, isolate=False,
                   expectations=read_expectations(rules))
    _located(found, "insert", "SequenceInsert", "s2", "[2][0, 1]")  # r is let off; s2 not
    rules.write_text(json.dumps({"atol": 100}))  # the file's own default, as run reads it
    assert main(["locate", str(case), "--backend", PERTURBED, "--in-process",
                 "--expectations", str(rules)]) == 0
    assert main(["locate", str(case), "--backend", PERTURBED, "--in-process",
                 "--expectations", str(rules), "--atol", "1e-6"]) == 1  # given: it wins


def test_the_command_prints_one_json_object_writes_a_page_and_exits_by_what_it_found(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    case = _chain(tmp_path / "chain", "relu")
    page = tmp_path / "where.html"
    assert main(["locate", str(case), "--backend", PERTURBED, "--in-process", "--json",
                 "--report", str(page)]) == 1
    got = json.loads(capsys.readouterr().out)
    assert (got["node"]["name"], got["node"]["op_type"], got["output"], got["path"],
            got["spread"], got["error"]) == ("relu", "Relu", "r", "[0, 1]", 4, None)
    text = page.read_text()
    assert "<li class=here>&#x27;relu&#x27; (Relu)</li>" in text
    assert text.count("<figure") == 2  # both backends' values of r drawn
    assert main(["locate", str(case), "--backend", "ort", "--in-process"]) == 0
    assert "agree on every value" in capsys.readouterr().out
    assert main(["locate", str(tmp_path / "nowhere"), "--json"]) == 2
    assert json.loads(capsys.readouterr().out)["status"] == "error"
    with pytest.raises(SystemExit) as usage:
        main(["locate", str(case), "--in-process", "--timeout", "5"])
    assert usage.value.code == 2
    assert "cannot go with --in-process" in capsys.readouterr().err


def test_into_subgraphs_names_the_node_inside_the_if_branch(tmp_path: Path) -> None:
    found = locate(_if_case(tmp_path / "if"), backend=PERTURBED, isolate=False,
                   into_subgraphs=True)
    _located(found, "inner", "Relu", "r", "[0, 1]")
    assert found.enclosing is not None and found.enclosing.name == "choose"
    assert found.subgraph == "then_branch"
    assert [n.name for n in found.graph_path] == ["sum", "less", "choose", "inner"]
    assert "choose/r" not in found.unseen and found.unseen == {}


def test_into_subgraphs_names_the_node_inside_a_loop_body_and_the_iteration(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    body = h.make_graph(
        [h.make_node("Identity", ["cond_in"], ["cond_out"], name="keep"),
         h.make_node("Sub", ["prev", "step"], ["next"], name="minus"),
         h.make_node("Relu", ["next"], ["kept"], name="inner_relu", doc_string="target"),
         h.make_node("Neg", ["kept"], ["scanned"], name="neg")],
        "body", [h.make_tensor_value_info("i", onnx.TensorProto.INT64, []),
                 h.make_tensor_value_info("cond_in", onnx.TensorProto.BOOL, []),
                 h.make_tensor_value_info("prev", F, [2, 3])],
        [h.make_tensor_value_info("cond_out", onnx.TensorProto.BOOL, []),
         h.make_tensor_value_info("next", F, [2, 3]),
         h.make_tensor_value_info("scanned", F, [2, 3])])
    nodes = [h.make_node("Add", ["x", "y"], ["a"], name="add"),
             h.make_node("Loop", ["three", "yes", "a"], ["last", "all"], name="loop", body=body),
             h.make_node("ReduceSum", ["all"], ["out"], name="sum", keepdims=0)]
    case = _case(tmp_path / "loop", nodes, [h.make_tensor_value_info("out", F, None)],
                 inits=(h.make_tensor("three", onnx.TensorProto.INT64, [], [3]),
                        h.make_tensor("yes", onnx.TensorProto.BOOL, [], [True]),
                        h.make_tensor("step", F, [], [1.0])), expected_by="ort")
    # against ORT itself: onnx's reference concatenates a Loop's scan outputs (vstack of
    # atleast_2d: [6, 3] for three [2, 3]) where ORT stacks them ([3, 2, 3])
    reference = locate(case, backend="ort", isolate=False, reduce=tmp_path / "small")
    _located(reference, "loop", "Loop", "all", "")
    assert "actual shape [3, 2, 3], expected [6, 3]" in reference.differences[0].message
    # the reduced case declares the reference's shapes: its [6, 3] is read, and differs
    # (onnx's shape inference would say rank 3: so the checker, without full_check)
    onnx.checker.check_model(onnx.load(str(tmp_path / "small" / "model.onnx")))
    assert main(["run", str(tmp_path / "small"), "--against", "reference", "--json"]) == 1
    (s,) = json.loads(capsys.readouterr().out)["sets"]
    assert s["outputs"][1]["against"][0]["message"] == \
        "actual shape [3, 2, 3], expected [6, 3]"
    plain = locate(case, backend=PERTURBED, against="ort", isolate=False)
    _located(plain, "loop", "Loop", "all", "[0, 0, 1]")
    found = locate(case, backend=PERTURBED, against="ort", isolate=False,
                   into_subgraphs=True)
    # a - 1 = [[0.5, -2, 1], [-3, 6, -6]]: iteration 0, element [0, 1] is the first negative
    _located(found, "inner_relu", "Relu", "kept", "[0, 0, 1]")
    assert found.enclosing is not None and found.subgraph == "body"
    assert any("first index is the iteration" in n for n in found.notes)


def test_a_reduce_folder_in_use_is_refused_before_the_search(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    case = _chain(tmp_path / "chain", "relu")
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "keep.txt").write_text("mine")
    assert main(["locate", str(case), "--backend", PERTURBED, "--in-process", "--reduce",
                 str(tmp_path / "busy")]) == 2
    assert "exists and is not empty" in capsys.readouterr().err
    assert sorted(p.name for p in (tmp_path / "busy").iterdir()) == ["keep.txt"]


def test_onnx_node_case_if_opt_is_located_at_the_optional_inside_its_else_branch() -> None:
    # ORT and onnx's reference differ on test_if_opt: the reference's Optional gives [x]
    found = locate(CORPUS / "test_if_opt", isolate=False)
    _located(found, "", "If", "sequence", "[0]")
    inside = locate(CORPUS / "test_if_opt", isolate=False, into_subgraphs=True)
    _located(inside, "", "Optional", "else_opt", "[0]")
    assert inside.enclosing is not None and inside.enclosing.op_type == "If"
    assert inside.subgraph == "else_branch" and inside.unseen == {}
    # the reference's Optional gives [x]: a type difference since issue 43's item 11
    assert inside.differences[0].message == "actual is an array float32 (5,), expected a list of 1"


def test_a_difference_only_while_values_are_exposed_is_said_so(tmp_path: Path) -> None:
    # "exposed": relu is rewritten only while its output is a graph output, as a backend
    # whose optimizations change when values are asked for
    case = _chain(tmp_path / "chain", "", doc={"relu": "exposed"})
    found = locate(case, backend=PERTURBED, isolate=False)
    _located(found, "relu", "Relu", "r", "[0, 1]")
    assert any(n.startswith("run as it is (no value exposed), the model's outputs agree")
               for n in found.notes)
