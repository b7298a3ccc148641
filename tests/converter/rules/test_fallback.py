"""fallback (converter/rules/fallback.py): each family node routed to the project's Python
custom ops (strategy fallback) on single-node models; the converted model, run through
ort_dml_ops.InferenceSession, against ORT's CPU kernels on the unconverted model."""

from __future__ import annotations

import numpy as np
import pytest

import ort_dml_ops
from ort_dml_ops import DOMAIN
from ort_dml_ops.conversion import convert

from ._util import op_types, run_cpu, single_op


def _run_fallback(model, feeds):
    return ort_dml_ops.InferenceSession(model, providers=["CPUExecutionProvider"]).run(
        None, feeds
    )[0]


def _node(report):
    return report.to_dict()["nodes"][0]


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
@pytest.mark.parametrize("attrs", [{}, {"exclusive": 1, "reverse": 1}])
@pytest.mark.parametrize("axis", [0, -1])
def test_cumsum(dtype, attrs, axis):
    model = single_op(
        "CumSum",
        [("x", dtype, [3, 5])],
        attrs,
        opset=14,
        inits={"axis": np.array(axis, np.int64)},
    )
    result = convert(model, "dml", strategy="fallback")
    assert _node(result.report)["action"] == "fallback"
    assert op_types(result.model) == {(DOMAIN, "CumSum")}
    x = (np.arange(15).reshape(3, 5) - 7).astype(dtype)
    np.testing.assert_array_equal(
        _run_fallback(result.model, {"x": x}), run_cpu(model, {"x": x})[0]
    )


@pytest.mark.parametrize("reduction", ["none", "add", "mul", "max", "min"])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_scatter_elements(reduction, axis):
    attrs = {"axis": axis} | ({"reduction": reduction} if reduction != "none" else {})
    model = single_op(
        "ScatterElements",
        [
            ("data", np.float32, [4, 3]),
            ("indices", np.int64, [2, 3]),
            ("updates", np.float32, [2, 3]),
        ],
        attrs,
        opset=18,
    )
    result = convert(model, "dml", strategy="fallback")
    assert op_types(result.model) == {(DOMAIN, "ScatterElements")}
    rng = np.random.default_rng(3)
    n = 4 if axis == 0 else 3
    feeds = {
        "data": rng.uniform(-1, 1, [4, 3]).astype(np.float32),
        # duplicates and negative indices; unique per line for "none" (ORT's order is unspecified)
        "indices": (
            np.array([[0, 1, 2], [2, 1, 0]]) - (n if reduction != "none" else 0)
        ).astype(np.int64)
        if reduction != "none"
        else np.array([[0, 1, 2], [1, 2, 0]], np.int64),
        "updates": rng.uniform(-1, 1, [2, 3]).astype(np.float32),
    }
    np.testing.assert_allclose(
        _run_fallback(result.model, feeds), run_cpu(model, feeds)[0], rtol=1e-6
    )


def test_scatter_becomes_the_fallback_scatter_elements():
    model = single_op(
        "Scatter",
        [
            ("data", np.float32, [3, 3]),
            ("indices", np.int64, [1, 3]),
            ("updates", np.float32, [1, 3]),
        ],
        {"axis": 0},
        opset=10,
    )
    model.ir_version = 5
    result = convert(model, "dml", strategy="fallback")
    assert op_types(result.model) == {(DOMAIN, "ScatterElements")}
    feeds = {
        "data": np.zeros([3, 3], np.float32),
        "indices": np.array([[1, 0, 2]], np.int64),
        "updates": np.array([[1.0, 2.0, 3.0]], np.float32),
    }
    np.testing.assert_array_equal(
        _run_fallback(result.model, feeds), run_cpu(model, feeds)[0]
    )


def test_scatter_nd_goes_through_the_flattened_data():
    model = single_op(
        "ScatterND",
        [
            ("data", np.float32, [4, 3]),
            ("indices", np.int64, [2, 1]),
            ("updates", np.float32, [2, 3]),
        ],
        {"reduction": "add"},
        opset=18,
    )
    result = convert(model, "dml", strategy="fallback")
    node = _node(result.report)
    assert node["action"] == "fallback" and "flattened" in node["note"]
    assert (DOMAIN, "ScatterElements") in op_types(result.model)
    feeds = {
        "data": np.arange(12, dtype=np.float32).reshape(4, 3),
        "indices": np.array([[3], [3]], np.int64),
        "updates": np.ones([2, 3], np.float32),
    }
    np.testing.assert_array_equal(
        _run_fallback(result.model, feeds), run_cpu(model, feeds)[0]
    )


def test_float16_note_says_it_runs_in_float32():
    model = single_op(
        "CumSum",
        [("x", np.float16, [4])],
        {},
        opset=14,
        inits={"axis": np.array(0, np.int64)},
    )
    node = _node(convert(model, "dml", strategy="fallback").report)
    assert "float32" in node["note"]
