"""convert folds an If whose condition the declared shapes decide (ort_dml_ops/converter/rules/fold_if.py).

The reference is ONNX Runtime's CPU EP on the model as given (it runs the If), never the
converted model; the real TorchScript exports are in models/real/ (tests/real_models.py).
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from ort_dml_ops import convert

from ._util import run_cpu

F = TensorProto.FLOAT


def _rank_if_model(x_shape, *, out_shape):
    """y = Relu(If(Size(Shape(x)) == 0) then Reshape(x, [-1]) else Identity(x)), as TorchScript
    writes scatter_reduce's rank-0 guard."""
    const = helper.make_tensor("zero", TensorProto.INT64, [], [0])
    minus1 = helper.make_tensor("m1", TensorProto.INT64, [1], [-1])
    then = helper.make_graph(
        [
            helper.make_node("Constant", [], ["flat"], value=minus1),
            helper.make_node("Reshape", ["x", "flat"], ["t_out"]),
        ],
        "then",
        [],
        [helper.make_tensor_value_info("t_out", F, None)],
    )
    els = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["e_out"])],
        "else",
        [],
        [helper.make_tensor_value_info("e_out", F, None)],
    )
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"], name="shape"),
        helper.make_node("Size", ["shape"], ["rank"], name="rank"),
        helper.make_node("Constant", [], ["zero"], value=const, name="zero"),
        helper.make_node("Equal", ["rank", "zero"], ["is0"], name="is0"),
        helper.make_node(
            "If", ["is0"], ["z"], then_branch=then, else_branch=els, name="guard"
        ),
        helper.make_node("Relu", ["z"], ["y"], name="relu"),
    ]
    g = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", F, x_shape)],
        [helper.make_tensor_value_info("y", F, out_shape)],
    )
    return helper.make_model(
        g, opset_imports=[helper.make_opsetid("", 17)], ir_version=9
    )


def test_if_decided_by_the_declared_rank_is_folded():
    model = _rank_if_model(["n", 3], out_shape=["n", 3])
    x = np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32)
    r = convert(model, "dml")
    ops = [n.op_type for n in r.model.graph.node]
    assert "If" not in ops and "Equal" not in ops and "Size" not in ops, ops
    assert any("guard: If folded" in line for line in r.report.normalized), (
        r.report.normalized
    )
    onnx.checker.check_model(r.model, full_check=True)
    np.testing.assert_array_equal(
        run_cpu(r.model, {"x": x})[0], run_cpu(model, {"x": x})[0]
    )
    # a declaration that agrees with the taken branch is kept as given
    assert r.model.graph.output[0] == model.graph.output[0]


def test_then_branch_taken_for_a_rank_0_input():
    model = _rank_if_model([], out_shape=[1])
    x = np.array(2.5, dtype=np.float32)
    r = convert(model, "dml")
    assert "If" not in [n.op_type for n in r.model.graph.node]
    assert any("condition is True" in line for line in r.report.normalized)
    np.testing.assert_array_equal(
        run_cpu(r.model, {"x": x})[0], run_cpu(model, {"x": x})[0]
    )


def test_a_condition_the_shapes_do_not_decide_is_left_alone():
    model = _rank_if_model(["n", 3], out_shape=["n", 3])
    # the condition now reads a symbolic dim: Gather(Shape(x), 0) == 0
    g = model.graph
    idx = helper.make_tensor("i0", TensorProto.INT64, [], [0])
    g.node[1].CopyFrom(
        helper.make_node("Gather", ["shape", "i0"], ["rank"], name="rank")
    )
    g.node.insert(1, helper.make_node("Constant", [], ["i0"], value=idx, name="i0"))
    r = convert(model, "dml")
    assert "If" in [n.op_type for n in r.model.graph.node]
    assert not r.report.normalized


def test_a_wrong_graph_output_declaration_is_repaired_and_reported():
    """TorchScript declares the folded If's output with the dead branch's rank ([d] for a [n, 3]
    value): the declaration is replaced by the computed shape, and the report says so."""
    model = _rank_if_model(["n", 3], out_shape=["d"])
    x = np.ones((2, 3), np.float32)
    r = convert(model, "dml")
    out = r.model.graph.output[0].type.tensor_type
    assert [d.dim_param or d.dim_value for d in out.shape.dim] == ["n", 3]
    assert out.elem_type == F
    assert any(
        "graph output 'y': declared [d] by the exporter, but it is [n, 3]" in line
        for line in r.report.normalized
    )
    onnx.checker.check_model(r.model, full_check=True)
    np.testing.assert_array_equal(
        run_cpu(r.model, {"x": x})[0], run_cpu(model, {"x": x})[0]
    )


def test_strategy_native_leaves_the_if():
    model = _rank_if_model(["n", 3], out_shape=["n", 3])
    r = convert(model, "dml", strategy="native")
    assert "If" in [n.op_type for n in r.model.graph.node]


@pytest.mark.parametrize(
    "name", ["scatter_reduce_torchscript", "pyg_scatter_max_torchscript"]
)
def test_torchscript_scatter_reduce_export_folds_and_lowers(name):
    from tests.real_models import REAL_MODELS

    rm = next(m for m in REAL_MODELS if m.name == name)
    r = convert(rm.load(), "dml")
    assert "If" not in [n.op_type for n in r.model.graph.node]
    assert {n.action for n in r.report.nodes} == {"lowered"}, [
        (n.name, n.action) for n in r.report.nodes
    ]
    # ORT's CPU EP runs the Ifs of the model as exported
    reference = dict(zip(rm.meta["outputs"], run_cpu(rm.load(), rm.inputs)))
    got = dict(zip(rm.meta["outputs"], run_cpu(r.model, rm.inputs)))
    assert not rm.compare(got, reference)
    # and torch's outputs (or what the exporter wrote, computed in numpy)
    assert not rm.compare(got)


def test_cli_prints_the_folds_and_the_repaired_declaration(tmp_path, capsys):
    from ort_dml_ops.cli import main

    src, out = tmp_path / "m.onnx", tmp_path / "out.onnx"
    onnx.save(_rank_if_model(["n", 3], out_shape=["d"]), src)
    assert main(["convert", str(src), "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert "graph: guard: If folded" in text
    assert (
        "graph: graph output 'y': declared [d] by the exporter, but it is [n, 3]"
        in text
    )
