"""Target.explain remembers a decision per node signature: many equal nodes, each placed right.

A large model repeats a few kinds of node (bench.models.chain_model: Relu, Add, CumSum,
ScatterElements, Mul, ScatterElements(add), Neg, 100 of each here). The expectations are the DML
EP's own rules, not this code's output: every kind has a DML kernel at these since-versions, and
``QueryScatter`` (DmlOperatorScatter.cpp; pinned against the real EP by tests/dml/) rejects
reduction != 'none', so those scatters run on the CPU EP, each with one copy of its input to the
host and one of its output back to the device.
"""

from __future__ import annotations

import onnx
from onnx import helper

from ort_dml_ops import inspect
from ort_dml_ops.bench.models import chain_model
from ort_dml_ops.targets import (
    CPU,
    DML,
    DML_CPU_TABLE,
    DML_TABLE,
    Target,
    get_target,
    kernels,
)


def test_many_equal_nodes_each_placed_by_the_dml_rules():
    model = chain_model(700)
    kinds = {n.name: n for n in model.graph.node}
    report = inspect(model, "dml")
    assert len(report.nodes) == 700
    for r in report.nodes:
        node = kinds[r.name]
        reduction = next(
            (a.s.decode() for a in node.attribute if a.name == "reduction"), "none"
        )
        if node.op_type == "ScatterElements" and reduction == "add":
            assert r.provider == CPU, r
            assert "QueryScatter rejects reduction='add'" in r.reason, r
        else:
            assert r.provider == DML, r
    # one copy to the host before each CPU scatter, one back after it
    assert report.copies == 2 * 100


def test_remembered_decisions_equal_fresh_ones():
    """Every node of a converted chain (Reshape, Slice, Pad, Concat, Gather... around the
    lowered scatters) gets the decision a Target with nothing remembered gives it."""
    from ort_dml_ops.conversion import convert
    from ort_dml_ops.inspection import _value_types

    model = convert(chain_model(140), "dml", strategy="lower", with_inspect=False).model
    types, _, _ = _value_types(model)
    opsets = {o.domain: o.version for o in model.opset_import}
    shared = get_target("dml")
    kinds = set()
    for node in model.graph.node:
        fresh = Target(
            "dml",
            DML,
            kernels.recorded(DML_TABLE),
            kernels.recorded(DML_CPU_TABLE),
        )
        assert shared.explain(node, opsets, types) == fresh.explain(
            node, opsets, types
        ), node.name
        kinds.add(node.op_type)
    assert len(kinds) > 5 and len(model.graph.node) > 500


def test_a_reason_that_names_a_value_is_not_shared():
    """The DML data-type check names the value it refuses: two equal nodes get their own."""
    target = Target(
        "dml",
        DML,
        kernels.recorded(DML_TABLE),
        kernels.recorded(DML_CPU_TABLE),
        device_unsupported={"tensor(double)"},
    )
    nodes = [helper.make_node("Transpose", [x], [f"{x}_out"]) for x in ("a", "b")]
    types = {n: "tensor(double)" for n in ("a", "b", "a_out", "b_out")}
    reasons = [target.explain(n, 17, types).reason for n in nodes]
    assert "argument 'a' is tensor(double)" in reasons[0]
    assert "argument 'b' is tensor(double)" in reasons[1]
    assert all(target.explain(n, 17, types).provider == CPU for n in nodes)


def test_equal_nodes_with_different_types_or_attributes_differ():
    """The signature holds each argument's type and the attributes: a float16 scatter-add
    (refused by the CPU kernel when it runs, scatter_elements.cc) is not the float one."""
    target = get_target("dml")
    f16 = helper.make_node("ScatterElements", ["d", "i", "u"], ["o"], reduction="add")
    f32 = helper.make_node("ScatterElements", ["x", "i", "y"], ["z"], reduction="add")
    none = helper.make_node("ScatterElements", ["x", "i", "y"], ["w"])
    types = {
        "d": onnx.TensorProto.FLOAT16,
        "u": onnx.TensorProto.FLOAT16,
        "o": onnx.TensorProto.FLOAT16,
        "i": onnx.TensorProto.INT64,
        "x": onnx.TensorProto.FLOAT,
        "y": onnx.TensorProto.FLOAT,
        "z": onnx.TensorProto.FLOAT,
        "w": onnx.TensorProto.FLOAT,
    }
    for _ in range(2):  # the second round is answered from what the first remembered
        assert target.explain(f16, 17, types).fails_at_run
        assert target.explain(f32, 17, types).fails_at_run is None
        assert target.explain(f32, 17, types).provider == CPU
        assert target.explain(none, 17, types).provider == DML
