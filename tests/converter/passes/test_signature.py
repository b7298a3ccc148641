"""passes/signature.py and the rewrite pass's per-signature memo.

The memo must not change a single decision: a model whose family nodes repeat and differ in
every way a key records (dtype, static/symbolic shape, constant axis, attribute, which inputs
are given) converts to the same model and report as with the memo off (every node decided on
its own, the pass as it was), and the converted model computes what ONNX Runtime's CPU kernels
compute on the original.
"""

from __future__ import annotations

import hashlib

import numpy as np
import onnx
import onnx_ir as ir
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

from ort_dml_ops.conversion import convert
from ort_dml_ops.converter.passes import signature


def _mixed_model() -> onnx.ModelProto:
    """Repeated CumSum / ScatterElements nodes: equal pairs, and pairs one key field apart."""
    f, d, i64 = TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.INT64
    nodes, outputs = [], []

    def out(name, elem, dims):
        outputs.append(helper.make_tensor_value_info(name, elem, dims))
        return name

    for k in range(2):  # two of each kind: the second is decided from the memo
        nodes += [
            helper.make_node("CumSum", ["x", "ax0"], [out(f"c0_{k}", f, [2, 3])]),
            helper.make_node("CumSum", ["x", "ax1"], [out(f"c1_{k}", f, [2, 3])]),
            helper.make_node(
                "CumSum", ["x", "ax1"], [out(f"c2_{k}", f, [2, 3])], reverse=1
            ),
            helper.make_node("CumSum", ["xd", "ax1"], [out(f"c3_{k}", d, [2, 3])]),
            helper.make_node("CumSum", ["xs", "ax1"], [out(f"c4_{k}", f, ["N", 3])]),
            helper.make_node(
                "ScatterElements",
                ["x", "idx", "u"],
                [out(f"s0_{k}", f, [2, 3])],
                reduction="add",
            ),
            helper.make_node(
                "ScatterElements",
                ["x", "idx", "u"],
                [out(f"s1_{k}", f, [2, 3])],
                reduction="max",
            ),
            helper.make_node(
                "ScatterElements",
                ["xd", "idx", "ud"],
                [out(f"s2_{k}", d, [2, 3])],
                reduction="add",
                axis=1,
            ),
        ]
    graph = helper.make_graph(
        nodes,
        "mixed",
        [
            helper.make_tensor_value_info("x", f, [2, 3]),
            helper.make_tensor_value_info("xd", d, [2, 3]),
            helper.make_tensor_value_info("xs", f, ["N", 3]),
            helper.make_tensor_value_info("u", f, [2, 3]),
            helper.make_tensor_value_info("ud", d, [2, 3]),
        ],
        outputs,
        [
            helper.make_tensor("ax0", i64, [], [0]),
            helper.make_tensor("ax1", i64, [], [1]),
            helper.make_tensor("idx", i64, [2, 3], [1, 0, 1, 0, 1, 0]),
        ],
    )
    return helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=10
    )


def _digest(result) -> tuple:
    report = result.report.to_dict()
    return report, hashlib.sha256(
        result.model.SerializeToString(deterministic=True)
    ).hexdigest()


@pytest.mark.parametrize("target", ["dml", "webgpu", "cuda"])
@pytest.mark.parametrize("strategy", ["auto", "native", "lower", "fallback"])
def test_memo_changes_no_decision(monkeypatch, target, strategy):
    model = _mixed_model()
    memo = _digest(convert(model, target, strategy=strategy, with_inspect=False))
    monkeypatch.setattr(signature, "node_key", lambda *a, **k: None)
    alone = _digest(convert(model, target, strategy=strategy, with_inspect=False))
    assert memo == alone


def test_converted_model_matches_ort_cpu():
    model = _mixed_model()
    out = convert(model, "dml", strategy="lower", with_inspect=False).model
    rng = np.random.default_rng(0)
    feeds = {
        "x": rng.standard_normal((2, 3)).astype(np.float32),
        "xd": rng.standard_normal((2, 3)),
        "xs": rng.standard_normal((5, 3)).astype(np.float32),
        "u": rng.standard_normal((2, 3)).astype(np.float32),
        "ud": rng.standard_normal((2, 3)),
    }

    def run(m):
        s = ort.InferenceSession(
            m.SerializeToString(), providers=["CPUExecutionProvider"]
        )
        return s.run(None, feeds)

    for want, got in zip(run(model), run(out)):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def _node(op, inputs, attrs=None, shape=(2, 3), dtype=ir.DataType.FLOAT):
    values = []
    for name, arr in inputs:
        if arr is None:
            v = ir.Value(name=name, type=ir.TensorType(dtype), shape=ir.Shape(shape))
        else:
            v = ir.Value(name=name, const_value=ir.tensor(np.asarray(arr)))
            v.dtype = ir.DataType.from_numpy(np.asarray(arr).dtype)
            v.shape = ir.Shape(list(np.asarray(arr).shape))
        values.append(v)
    attributes = [
        ir.convenience.convert_attribute(k, v) for k, v in (attrs or {}).items()
    ]
    node = ir.Node("", op, values, attributes, num_outputs=1)
    node.outputs[0].dtype, node.outputs[0].shape = dtype, ir.Shape(shape)
    return node


def _key(node):
    return signature.node_key(node, "dml", (("", 18),), 18, ())


def test_keys_differ_where_a_decision_may_and_agree_across_names():
    base = _key(_node("CumSum", [("x", None), ("a", np.int64(1))]))
    renamed = _key(_node("CumSum", [("y", None), ("b", np.int64(1))]))
    assert base == renamed
    others = [
        _node("CumSum", [("x", None), ("a", np.int64(0))]),  # another constant axis
        _node("CumSum", [("x", None), ("a", np.int64(1))], {"reverse": 1}),
        _node("CumSum", [("x", None), ("a", np.int64(1))], shape=(2, 4)),
        _node("CumSum", [("x", None), ("a", np.int64(1))], shape=("N", 3)),
        _node("CumSum", [("x", None), ("a", np.int64(1))], dtype=ir.DataType.DOUBLE),
        _node("CumSum", [("x", None), ("a", None)]),  # the axis not a constant
    ]
    keys = [_key(n) for n in others]
    assert base not in keys and len(set(keys)) == len(keys)


def test_a_large_constant_input_leaves_the_node_unkeyed():
    node = _node("CumSum", [("x", np.zeros(65, np.float32)), ("a", np.int64(0))])
    assert _key(node) is None
