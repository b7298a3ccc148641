"""opset (converter/rules/opset.py): dml serves ai.onnx up to 21; a model importing 22-26 is
moved to 21 when every node reads the same at 21, ONNX CumProd-26 becomes DOMAIN::CumProd,
and a node that has no opset-21 twin keeps the model's opset (the report names it). Outputs
against ORT's CPU kernels on the unconverted model."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

from ort_dml_ops import DOMAIN
from ort_dml_ops.conversion import convert

from ._util import op_types, run_cpu, single_op


def _opset(model) -> dict:
    return {o.domain: o.version for o in model.opset_import}


@pytest.mark.parametrize("opset", [22, 23, 24, 25, 26])
def test_cumsum_model_moves_to_21(opset):
    model = single_op(
        "CumSum",
        [("x", np.float32, [3, 4])],
        {"reverse": 1},
        opset=opset,
        inits={"axis": np.array(1, np.int64)},
    )
    result = convert(model, "dml")
    assert result.report.opset["from"] == opset and result.report.opset["to"] == 21
    assert _opset(result.model)[""] == 21
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    np.testing.assert_array_equal(
        run_cpu(result.model, {"x": x})[0], run_cpu(model, {"x": x})[0]
    )


def test_onnx_cumprod_26_becomes_the_domain_op():
    model = single_op(
        "CumProd",
        [("x", np.float32, [2, 5])],
        {"exclusive": 1},
        opset=26,
        inits={"axis": np.array(1, np.int64)},
    )
    result = convert(model, "dml", strategy="fallback")
    assert _opset(result.model)[""] == 21 and DOMAIN in _opset(result.model)
    assert op_types(result.model) == {(DOMAIN, "CumProd")}


def test_a_node_without_an_opset_21_twin_keeps_the_opset():
    # RMSNormalization exists from opset 23 only
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])
    s = helper.make_tensor_value_info("s", TensorProto.FLOAT, [4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])
    nodes = [
        helper.make_node("RMSNormalization", ["x", "s"], ["n"], name="rms"),
        helper.make_node("CumSum", ["n", "axis"], ["y"], name="cs"),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [x, s],
        [y],
        [helper.make_tensor("axis", TensorProto.INT64, [], [1])],
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 23)], ir_version=10
    )
    result = convert(model, "dml")
    assert _opset(result.model)[""] == 23
    assert result.report.opset["to"] == 23 and "rms" in result.report.opset["reason"]


def test_other_targets_keep_the_opset():
    model = single_op(
        "CumSum",
        [("x", np.float32, [3])],
        {},
        opset=23,
        inits={"axis": np.array(0, np.int64)},
    )
    for target in ("cpu", "cuda", "webgpu"):
        assert _opset(convert(model, target).model)[""] == 23
