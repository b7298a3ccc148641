"""cumsum-cast (converter/rules/cumsum_cast.py) on single CumSum nodes: float64 and bfloat16
through float32 on the target without those kernels (dml), against ORT's CPU CumSum
kernel on the unconverted model and numpy; the refusals it reports, with their codes."""

from __future__ import annotations

import numpy as np
import pytest

from ort_dml_ops.conversion import convert

from ._util import op_types, run_cpu, single_op


def _cumsum(dtype, shape, axis, opset, **attrs):
    return single_op(
        "CumSum",
        [("x", dtype, shape)],
        attrs,
        opset=opset,
        inits={"axis": np.array(axis, np.int64)},
    )


def _node(report, op="CumSum"):
    return next(n for n in report.to_dict()["nodes"] if n["op_type"] == op)


@pytest.mark.parametrize(
    "target", ["dml"]
)  # CUDA registers float64 CumSum: native there
@pytest.mark.parametrize("opset", [11, 14, 17])
@pytest.mark.parametrize(
    "attrs", [{}, {"exclusive": 1}, {"reverse": 1}, {"exclusive": 1, "reverse": 1}]
)
@pytest.mark.parametrize("axis", [0, -1])
def test_float64_is_summed_in_float32_and_matches_the_cpu_kernel(
    target, opset, attrs, axis
):
    model = _cumsum(np.float64, [3, 50], axis, opset, **attrs)
    result = convert(model, target)
    node = _node(result.report)
    assert node["action"] == "cast" and "float32" in node["note"]
    assert op_types(result.model) == {("", "Cast"), ("", "CumSum")}
    x = np.random.default_rng(0).uniform(-1, 1, [3, 50])
    (want,) = run_cpu(model, {"x": x})  # ORT's CPU CumSum in float64
    (got,) = run_cpu(result.model, {"x": x})
    assert got.dtype == np.float64
    # the note's bound: inputs rounded to float32, accumulation error <= n * 2^-24 * sum|x|
    n = x.shape[axis]
    bound = (n + 1) * 2.0**-24 * np.abs(x).sum(axis=axis, keepdims=True)
    assert np.all(np.abs(got - want) <= bound)


def test_float64_zeros_nan_and_inf_pass_through():
    model = _cumsum(np.float64, [6], 0, 14)
    x = np.array([0.0, -0.0, np.inf, 1.0, np.nan, 2.0])
    (got,) = run_cpu(convert(model, "dml").model, {"x": x})
    (want,) = run_cpu(model, {"x": x})
    np.testing.assert_array_equal(got, want)


def test_empty_axis():
    model = _cumsum(np.float64, [3, 0], 1, 14)
    (got,) = run_cpu(convert(model, "dml").model, {"x": np.zeros([3, 0])})
    assert got.shape == (3, 0)


def test_bfloat16_goes_through_float32():
    import onnx

    model = single_op(
        "CumSum",
        [("x", np.float32, [4, 8])],
        {},
        opset=14,
        inits={"axis": np.array(1, np.int64)},
    )
    model.graph.input[0].type.tensor_type.elem_type = onnx.TensorProto.BFLOAT16
    model.graph.output[0].type.tensor_type.elem_type = onnx.TensorProto.BFLOAT16
    result = convert(model, "dml")
    node = _node(result.report)
    assert node["action"] == "cast" and "bfloat16" in node["note"]
    casts = [n for n in result.model.graph.node if n.op_type == "Cast"]
    assert [c.attribute[0].i for c in casts] == [
        onnx.TensorProto.FLOAT,
        onnx.TensorProto.BFLOAT16,
    ]


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32, np.int64])
def test_types_the_target_runs_are_refused_with_a_code(dtype):
    result = convert(_cumsum(dtype, [2, 5], 1, 14), "dml", strategy="lower")
    node = _node(result.report)
    assert node["action"] == "native"
    refusal = next(r for r in node["refusals"] if r["rule"] == "cumsum-cast")
    assert refusal["code"] == "no-cast-needed"
    assert refusal["message"] in node["reason"]


def test_the_rule_is_not_tried_where_the_target_has_float64():
    node = _node(
        convert(_cumsum(np.float64, [2, 5], 1, 14), "cpu", strategy="lower").report
    )
    assert not any(r["rule"] == "cumsum-cast" for r in node["refusals"])
