"""`convert` hands back only models a runtime can run, and refuses invalid originals in one line.

Each model here used to convert with exit 0 into something no runtime runs (or crash with a
traceback); the expectations come from ONNX Runtime itself (its CPU kernels load and run the
valid ones) and from onnx's checker.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto as T
from onnx import helper, numpy_helper

import ort_dml_ops
from ort_dml_ops import UserError
from ort_dml_ops._domain import DOMAIN
from ort_dml_ops.cli import main

CPU = ["CPUExecutionProvider"]


def _model(nodes, inputs, outputs, inits=(), opset=17, extra=(), functions=()):
    g = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    m = helper.make_model(
        g,
        opset_imports=[helper.make_opsetid("", opset), *extra],
        functions=list(functions),
    )
    m.ir_version = 10
    return m


def _axis():
    return numpy_helper.from_array(np.array(0, np.int64), "ax")


def string_cumprod():
    return _model(
        [helper.make_node("CumProd", ["d", "ax"], ["y"], domain=DOMAIN)],
        [helper.make_tensor_value_info("d", T.STRING, [4])],
        [helper.make_tensor_value_info("y", T.STRING, [4])],
        [_axis()],
        extra=[helper.make_opsetid(DOMAIN, 1)],
    )


def cumsum_at(opset):
    return _model(
        [helper.make_node("CumSum", ["d", "ax"], ["y"])],
        [helper.make_tensor_value_info("d", T.FLOAT, [4])],
        [helper.make_tensor_value_info("y", T.FLOAT, [4])],
        [_axis()],
        opset=opset,
    )


def duplicate_outputs():
    return _model(
        [
            helper.make_node("Neg", ["x"], ["a"], name="n"),
            helper.make_node("Abs", ["x"], ["a"], name="m"),
            helper.make_node("CumSum", ["a", "ax"], ["y"], name="c"),
        ],
        [helper.make_tensor_value_info("x", T.FLOAT, [4])],
        [helper.make_tensor_value_info("y", T.FLOAT, [4])],
        [_axis()],
    )


INVALID = {
    "string_cumprod": (string_cumprod, "string"),
    "cumsum_opset9": (lambda: cumsum_at(9), "CumSum with domain_version of 9"),
    "opset99": (lambda: cumsum_at(99), "opset 99"),
    "duplicate_outputs": (duplicate_outputs, "'a'"),
}


@pytest.mark.parametrize("name", sorted(INVALID))
@pytest.mark.parametrize("target", ["dml", "cpu"])
def test_convert_refuses_what_nothing_runs(name, target, tmp_path, capsys):
    build, match = INVALID[name]
    model = build()
    with pytest.raises(UserError) as info:
        ort_dml_ops.convert(model, target)
    assert len(str(info.value).splitlines()) == 1
    assert match in str(info.value), str(info.value)
    onnx.save(model, tmp_path / "m.onnx")
    assert (
        main(
            [
                "convert",
                str(tmp_path / "m.onnx"),
                "-o",
                str(tmp_path / "o.onnx"),
                "--target",
                target,
            ]
        )
        == 1
    )
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and err.startswith(
        "ort-dml-ops: error: "
    ), err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.onnx"]


def test_onnx_runtime_refuses_them_too():
    """The independent reference: ONNX Runtime's CPU EP cannot load the models refused above
    (the string CumProd has no runtime at all: ORT has no string CumProd, the fallback no string kernel)."""
    for build in (lambda: cumsum_at(9), lambda: cumsum_at(99), duplicate_outputs):
        with pytest.raises(Exception):  # noqa: B017 - any load error of ORT's
            ort.InferenceSession(build().SerializeToString(), providers=CPU)
    with pytest.raises(UserError, match="string"):
        ort_dml_ops.InferenceSession(string_cumprod(), providers=CPU)


# --------------------------------------------------------------------------------------
# model-local functions


def function_model(op_domain: str, op: str = "CumProd"):
    """y = F(x), F a model-local function holding one `op` node (DOMAIN::CumProd or ONNX CumSum)."""
    ax = helper.make_node(
        "Constant", [], ["ax"], value=numpy_helper.from_array(np.array(1, np.int64))
    )
    body = helper.make_node(op, ["x", "ax"], ["y"], domain=op_domain)
    imports = [helper.make_opsetid("", 17)] + (
        [helper.make_opsetid(DOMAIN, 1)] if op_domain == DOMAIN else []
    )
    f = helper.make_function("local", "F", ["x"], ["y"], [ax, body], imports)
    return _model(
        [helper.make_node("F", ["x"], ["y"], domain="local")],
        [helper.make_tensor_value_info("x", T.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", T.FLOAT, [2, 3])],
        extra=[helper.make_opsetid("local", 1)]
        + ([helper.make_opsetid(DOMAIN, 1)] if op_domain == DOMAIN else []),
        functions=[f],
    )


X = np.array([[1, 2, 3], [4, 5, 6]], np.float32)


@pytest.mark.parametrize("target", ["dml", "cpu"])
@pytest.mark.parametrize("strategy", ["auto", "lower", "fallback"])
def test_domain_op_inside_a_local_function_converts(target, strategy):
    result = ort_dml_ops.convert(function_model(DOMAIN), target, strategy=strategy)
    onnx.checker.check_model(result.model, full_check=True)
    out = ort_dml_ops.InferenceSession(result.model, providers=CPU).run(None, {"x": X})[
        0
    ]
    np.testing.assert_allclose(out, np.cumprod(X, axis=1), rtol=1e-6)


def test_local_functions_in_a_fresh_process(tmp_path):
    """`onnx.inliner` was used without being imported: only a process that had imported it
    elsewhere worked. A fresh interpreter runs a fallback op inside a local function."""
    onnx.save(function_model(DOMAIN), tmp_path / "m.onnx")
    path = str(tmp_path / "m.onnx")
    code = (
        f"import numpy as np, ort_dml_ops; s = ort_dml_ops.InferenceSession({path!r}, providers=['CPUExecutionProvider']);"
        "print(s.run(None, {'x': np.array([[1, 2, 3], [4, 5, 6]], np.float32)})[0].tolist())"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == str(np.cumprod(X, axis=1).tolist())
