"""ort_dml_ops.passes inside the host libraries' own runners: ConvertPass in onnx_ir's
PassManager, the rewrite rules through onnxscript's `rewrite` / `RewriteRuleSet.apply_to_model`,
on zoo models; outputs compared with the zoo's expected outputs (independent numpy code) and
with ONNX Runtime's CPU EP on the original model."""

from __future__ import annotations

import numpy as np
import onnx
import onnx_ir as ir
import onnxruntime as ort
import pytest
from onnx_ir.passes import common as common_passes

from ort_dml_ops import DOMAIN, GraphBuilder, UserError, convert, inspect, zoo
from ort_dml_ops.domain_schemas import registered
from ort_dml_ops.passes import ConvertPass, rewrite_rules
from ort_dml_ops.session import InferenceSession

onnxscript_rewriter = pytest.importorskip("onnxscript.rewriter")


def _run(model: onnx.ModelProto, feeds):
    return InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, feeds)


@pytest.mark.parametrize(
    "name", ["ddpm_step", "nucleus_sampling", "bincount", "linear_recurrence"]
)
def test_convert_pass_in_pass_manager(name):
    entry = zoo.get(name)
    model = ir.serde.deserialize_model(entry.load_model())
    # lower: at the zoo's sizes auto keeps small scatters on ORT's CPU kernel (rules/cost.py)
    convert_pass = ConvertPass(target="dml", strategy="lower")
    manager = ir.passes.PassManager(
        [convert_pass, common_passes.RemoveUnusedNodesPass()]
    )
    result = manager(model)
    assert result.model is model and result.modified
    out = ir.serde.serialize_model(result.model)
    with registered():
        onnx.checker.check_model(out, full_check=True)
    assert entry.matches(_run(out, entry.inputs())), entry.compare(
        _run(out, entry.inputs())
    )
    # placement: the CPU nodes and copies of convert() itself (RemoveUnusedNodesPass may drop a
    # dead node convert leaves: ddpm_step has one, so gpu_nodes is compared as <=)
    want = convert(
        entry.load_model(), "dml", strategy="lower"
    ).report.inspect.to_dict()["summary"]
    got = inspect(out, "dml").to_dict()["summary"]
    assert (got["cpu_nodes"], got["copies"]) == (want["cpu_nodes"], want["copies"])
    assert got["gpu_nodes"] <= want["gpu_nodes"]
    assert {n.action for n in convert_pass.report.nodes} <= {
        "native",
        "lowered",
        "cast",
    }


def test_convert_pass_unchanged_model_is_not_modified():
    model = ir.serde.deserialize_model(
        zoo.get("position_ids").load_model()
    )  # int64 CumSum: native on DML
    graph = model.graph
    result = ConvertPass(target="dml").call(model)
    assert not result.modified and result.model.graph is graph


def test_convert_pass_bad_options_fail_at_construction():
    with pytest.raises(UserError, match="unknown strategy 'fastest'"):
        ConvertPass(strategy="fastest")
    with pytest.raises(UserError, match="unknown target 'tpu'"):
        ConvertPass(target="tpu")


def test_convert_pass_user_error_inside_pass_manager():
    """A model convert refuses: PassManager's PassError carries convert's one-line UserError."""
    from onnx import TensorProto, helper

    node = helper.make_node("CumSum", ["x", "axis"], ["y"])
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor("axis", TensorProto.INT64, [], [5])],
    )  # out of range for rank 2
    model = ir.serde.deserialize_model(
        helper.make_model(
            graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=10
        )
    )
    with pytest.raises(ir.passes.PassError) as info:
        ir.passes.PassManager([ConvertPass()])(model)
    causes, exc = [], info.value
    while exc is not None:  # PassManager wraps twice (step, then pass)
        causes.append(exc)
        exc = exc.__cause__
    (user_error,) = [c for c in causes if isinstance(c, UserError)]
    assert "\n" not in str(user_error)


def test_rewrite_cumprod_to_onnx26_on_zoo_model():
    entry = zoo.get("ddpm_step")
    upgraded = onnx.version_converter.convert_version(
        entry.load_model(), 26
    )  # onnx's own converter
    upgraded.ir_version = 10
    rewritten = onnxscript_rewriter.rewrite(
        upgraded, pattern_rewrite_rules=rewrite_rules(target="cpu")
    )
    assert not [n for n in rewritten.graph.node if n.domain == DOMAIN]
    assert [n for n in rewritten.graph.node if (n.domain, n.op_type) == ("", "CumProd")]
    feeds = entry.inputs()
    # the rewritten model runs on plain ONNX Runtime (its own CumProd-26 kernel), no fallback
    got = ort.InferenceSession(
        rewritten.SerializeToString(), providers=["CPUExecutionProvider"]
    ).run(None, feeds)
    for g, w in zip(got, _run(entry.load_model(), feeds)):
        np.testing.assert_array_equal(g, w)
    assert entry.matches(got)


def test_rewrite_rules_leave_opset17_cumprod_alone():
    model = ir.serde.deserialize_model(zoo.get("ddpm_step").load_model())
    assert rewrite_rules(target="cpu").apply_to_model(model) == 0


def test_apply_cumsum_cast_float64():
    # float32 CumSum on a zoo model runs native: nothing to cast
    model = ir.serde.deserialize_model(zoo.get("discounted_return").load_model())
    assert rewrite_rules(target="dml").apply_to_model(model) == 0
    b = GraphBuilder(opset=17)
    x = b.input("x", "float64", ["N", 16])
    built = b.build(outputs={"y": b.cumsum(x, axis=1, reverse=True)})
    model = ir.serde.deserialize_model(built)
    assert rewrite_rules(target="dml").apply_to_model(model) == 1
    out = ir.serde.serialize_model(model)
    ops = [
        n.op_type for n in out.graph.node if n.op_type not in ("Constant", "Identity")
    ]
    assert ops == [
        "Cast",
        "CumSum",
        "Cast",
    ]  # (the rewriter keeps the graph output's name with an Identity)
    feeds = {"x": np.random.default_rng(0).standard_normal((3, 16))}
    (got,) = ort.InferenceSession(
        out.SerializeToString(), providers=["CPUExecutionProvider"]
    ).run(None, feeds)
    (want,) = ort.InferenceSession(
        built.SerializeToString(), providers=["CPUExecutionProvider"]
    ).run(None, feeds)
    # convert's cumsum-cast bound: inputs rounded to float32, accumulation in float32
    bound = 16 * 2.0**-24 * np.abs(feeds["x"]).sum(
        axis=1, keepdims=True
    ) + 2.0**-24 * np.abs(want)
    assert got.dtype == np.float64 and np.all(np.abs(got - want) <= bound)


def test_rewrite_rules_unknown_target():
    with pytest.raises(UserError, match="unknown target"):
        rewrite_rules(target="tpu")


def test_convert_pass_reports_a_native_rewrite_as_modified():
    """cumprod-onnx26 keeps the node `native` but replaces DOMAIN::CumProd by ONNX CumProd-26:
    the pass says the model changed (it said not, while the graph had changed)."""
    from ort_dml_ops.converter.rules.cumprod_native import cpu_has_cumprod

    if not cpu_has_cumprod():
        pytest.skip("this onnxruntime has no CPU CumProd kernel")
    from tests.converter.rules.test_cumprod_native import _domain_cumprod

    model = ir.serde.deserialize_model(_domain_cumprod(np.float32, [3, 4], 1, 26))
    assert [(n.domain, n.op_type) for n in model.graph] == [(DOMAIN, "CumProd")]
    result = ConvertPass(target="cpu").call(model)
    assert [(n.domain, n.op_type) for n in model.graph] == [("", "CumProd")]
    assert result.modified
    x_val = np.arange(1, 13, dtype=np.float32).reshape(3, 4)
    (got,) = _run(ir.serde.serialize_model(model), {"x": x_val})
    np.testing.assert_allclose(got, np.cumprod(x_val, axis=1), rtol=1e-6)
