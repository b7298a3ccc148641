"""inspect's model of ORT's common-subexpression elimination (ort_dml_ops/placement/cse.py).

Reference: ONNX Runtime itself (the Linux CPU build): the model it writes after its level-1
optimizations (`optimized_model_filepath`, ORT_ENABLE_BASIC) says which duplicate it kept.
"""

from __future__ import annotations

import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

from ort_dml_ops import inspect


def _ort_kept(model: onnx.ModelProto, tmp_path) -> set[str]:
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    so.optimized_model_filepath = str(tmp_path / "opt.onnx")
    so.log_severity_level = 4
    ort.InferenceSession(
        model.SerializeToString(), so, providers=["CPUExecutionProvider"]
    )
    return {n.name for n in onnx.load(so.optimized_model_filepath).graph.node}


def _two_shapes(first_attrs: dict, second_attrs: dict) -> onnx.ModelProto:
    """Two Shape nodes of one input, each feeding its own Cast (so both are read)."""
    nodes = [
        helper.make_node("Shape", ["x"], ["s1"], name="shape_a", **first_attrs),
        helper.make_node("Shape", ["x"], ["s2"], name="shape_b", **second_attrs),
        helper.make_node("Cast", ["s1"], ["y1"], name="cast_a", to=TensorProto.FLOAT),
        helper.make_node("Cast", ["s2"], ["y2"], name="cast_b", to=TensorProto.FLOAT),
    ]
    g = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 3])],
        [
            helper.make_tensor_value_info("y1", TensorProto.FLOAT, [2]),
            helper.make_tensor_value_info("y2", TensorProto.FLOAT, [2]),
        ],
    )
    return helper.make_model(
        g, opset_imports=[helper.make_opsetid("", 20)], ir_version=9
    )


@pytest.mark.parametrize(
    "first, second",
    [({}, {"start": 0}), ({"start": 0}, {}), ({}, {}), ({"start": 0}, {"end": 1})],
)
def test_inspect_keeps_the_shape_node_ort_keeps(first, second, tmp_path):
    """ORT fills schema defaults into nodes (Graph::Resolve), so Shape(x) equals Shape(x, start=0)."""
    model = _two_shapes(first, second)
    kept = _ort_kept(model, tmp_path)
    report = inspect(model, "dml").to_dict()
    predicted_running = {
        n["name"] for n in report["nodes"] if n["provider"] is not None
    }
    shapes = {"shape_a", "shape_b"}
    assert predicted_running & shapes == kept & shapes


def test_attributes_in_another_order_are_not_merged(tmp_path):
    """ORT compares attribute maps in insertion order: written [noop, keepdims] vs written
    [keepdims] with noop filled in after are kept apart (as on the converted PyG pooling model)."""
    nodes = [
        helper.make_node(
            "ReduceMax", ["x"], ["s1"], name="r_a", noop_with_empty_axes=0, keepdims=0
        ),
        helper.make_node("ReduceMax", ["x"], ["s2"], name="r_b", keepdims=0),
        helper.make_node("Neg", ["s1"], ["y1"], name="neg_a"),
        helper.make_node("Neg", ["s2"], ["y2"], name="neg_b"),
    ]
    g = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 3])],
        [
            helper.make_tensor_value_info("y1", TensorProto.FLOAT, []),
            helper.make_tensor_value_info("y2", TensorProto.FLOAT, []),
        ],
    )
    model = helper.make_model(
        g, opset_imports=[helper.make_opsetid("", 20)], ir_version=9
    )
    kept = _ort_kept(model, tmp_path)
    report = inspect(model, "dml").to_dict()
    running = {n["name"] for n in report["nodes"] if n["provider"] is not None}
    assert running & {"r_a", "r_b"} == kept & {"r_a", "r_b"}
