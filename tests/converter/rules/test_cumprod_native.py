"""cumprod-onnx26 (converter/rules/cumprod_native.py): the project's DOMAIN::CumProd becomes
ONNX CumProd-26 for the cpu target in models that import opset 26, and is refused (with a
code) below it. Outputs against numpy (tests/converter/rules/test_cumprod.ref_cumprod)."""

from __future__ import annotations

import numpy as np
import pytest

from ort_dml_ops import DOMAIN
from ort_dml_ops.conversion import convert
from ort_dml_ops.converter.rules.cumprod_native import cpu_has_cumprod

from ._util import op_types, run_cpu, single_op
from .test_cumprod import ref_cumprod


def _domain_cumprod(dtype, shape, axis, opset, **attrs):
    return single_op(
        "CumProd",
        [("x", dtype, shape)],
        attrs,
        opset=opset,
        domain=DOMAIN,
        inits={"axis": np.array(axis, np.int64)},
    )


def _node(report):
    return next(n for n in report.to_dict()["nodes"] if n["op_type"] == "CumProd")


needs_kernel = pytest.mark.skipif(
    not cpu_has_cumprod(), reason="this onnxruntime has no CPU CumProd kernel"
)


@needs_kernel
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
@pytest.mark.parametrize(
    "attrs", [{}, {"exclusive": 1}, {"reverse": 1}, {"exclusive": 1, "reverse": 1}]
)
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_becomes_onnx_cumprod_26_and_matches_numpy(dtype, attrs, axis):
    result = convert(_domain_cumprod(dtype, [3, 4], axis, 26, **attrs), "cpu")
    node = _node(result.report)
    assert node["action"] == "native" and "cumprod-onnx26" in node["reason"]
    assert op_types(result.model) == {("", "CumProd")}
    assert DOMAIN not in {o.domain for o in result.model.opset_import}
    x = (
        np.random.default_rng(1).uniform(0.5, 1.5, [3, 4]).astype(dtype)
        if dtype in (np.float32, np.float64)
        else np.random.default_rng(1).integers(-3, 4, [3, 4]).astype(dtype)
    )
    (got,) = run_cpu(result.model, {"x": x})
    want = ref_cumprod(x, axis, attrs.get("exclusive", 0), attrs.get("reverse", 0))
    if dtype in (np.float32, np.float64):
        np.testing.assert_allclose(got, want, rtol=1e-6)
    else:
        np.testing.assert_array_equal(got, want)


@needs_kernel
def test_zeros_nan_inf_and_empty():
    model = _domain_cumprod(np.float32, [6], 0, 26)
    x = np.array([2.0, np.inf, 0.0, np.nan, -1.0, 3.0], np.float32)
    (got,) = run_cpu(convert(model, "cpu").model, {"x": x})
    np.testing.assert_array_equal(got, ref_cumprod(x, 0))
    (empty,) = run_cpu(
        convert(_domain_cumprod(np.float32, [0, 3], 0, 26), "cpu").model,
        {"x": np.zeros([0, 3], np.float32)},
    )
    assert empty.shape == (0, 3)


@pytest.mark.parametrize("opset", [17, 21])
def test_below_opset_26_it_is_refused_with_a_code(opset):
    node = _node(convert(_domain_cumprod(np.float32, [3, 4], 1, opset), "cpu").report)
    refusal = next(r for r in node["refusals"] if r["rule"] == "cumprod-onnx26")
    assert refusal["code"] == "opset-too-old"
    assert f"opset {opset} < 26" in refusal["message"]


def test_only_the_cpu_target_and_only_the_domain_op():
    for target in ("dml", "cuda", "webgpu"):
        node = _node(convert(_domain_cumprod(np.float32, [3, 4], 1, 26), target).report)
        assert not any(r["rule"] == "cumprod-onnx26" for r in node["refusals"])
        assert "cumprod-onnx26" not in node["reason"]
