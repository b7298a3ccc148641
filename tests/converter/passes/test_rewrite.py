"""passes/rewrite.py: a node identical to an earlier one (same op, inputs, attributes).

The emitter shares what earlier rewrites of the graph made, so the second node's rewrite hands
back the first one's output value; before `_own_outputs` the pass renamed that value and the
first node's graph output lost its name (convert failed with an internal AssertionError). Both
outputs must keep their names and ONNX Runtime's CPU values.
"""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

from ort_dml_ops.conversion import convert


def _twice(op, inputs, **attrs):
    f = TensorProto.FLOAT
    nodes = [helper.make_node(op, inputs, [f"y{k}"], **attrs) for k in range(2)]
    graph = helper.make_graph(
        nodes,
        "twice",
        [
            helper.make_tensor_value_info("x", f, [2, 3]),
            helper.make_tensor_value_info("u", f, [2, 3]),
        ],
        [helper.make_tensor_value_info(f"y{k}", f, [2, 3]) for k in range(2)],
        [helper.make_tensor("idx", TensorProto.INT64, [2, 3], [1, 0, 1, 0, 1, 0])],
    )
    return helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=10
    )


def _run(model, feeds):
    s = ort.InferenceSession(
        model.SerializeToString(), providers=["CPUExecutionProvider"]
    )
    return s.run(None, feeds)


@pytest.mark.parametrize("reduction", ["none", "add", "max"])
@pytest.mark.parametrize("target", ["dml", "webgpu"])
def test_identical_scatters_keep_both_outputs(reduction, target):
    model = _twice("ScatterElements", ["x", "idx", "u"], reduction=reduction)
    result = convert(model, target, strategy="lower", with_inspect=False)
    assert result.report.summary() == {"lowered": 2}
    assert [o.name for o in result.model.graph.output] == ["y0", "y1"]
    rng = np.random.default_rng(1)
    feeds = {
        "x": rng.standard_normal((2, 3)).astype(np.float32),
        "u": rng.standard_normal((2, 3)).astype(np.float32),
    }
    for want, got in zip(_run(model, feeds), _run(result.model, feeds)):
        np.testing.assert_array_equal(got, want)


def _through_identities():
    """Two scatters (add, max) reading x, the indices and the updates each through an Identity
    of its own: what an If folded by fold_if leaves (TorchScript's scatter_reduce exports)."""
    f, i64 = TensorProto.FLOAT, TensorProto.INT64
    nodes = []
    for k, reduction in enumerate(("add", "max")):
        nodes += [
            helper.make_node("Identity", [name], [f"{name}{k}"])
            for name in ("x", "idx", "u")
        ]
        nodes.append(
            helper.make_node(
                "ScatterElements",
                [f"x{k}", f"idx{k}", f"u{k}"],
                [f"y{k}"],
                axis=1,
                reduction=reduction,
            )
        )
    graph = helper.make_graph(
        nodes,
        "through_identities",
        [
            helper.make_tensor_value_info("x", f, ["n", 6]),
            helper.make_tensor_value_info("idx", i64, ["n", "k"]),
            helper.make_tensor_value_info("u", f, ["n", "k"]),
        ],
        [helper.make_tensor_value_info(f"y{k}", f, ["n", 6]) for k in range(2)],
    )
    return helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=10
    )


def test_lowerings_read_past_identities_and_share_what_they_compute():
    """Lowered nodes read their inputs past Identity nodes, so two lowerings of the same
    tensors share their size and guard nodes (the emitter's memo keys on values) and the
    Identities nothing reads are gone: ORT's CommonSubexpressionElimination, which merged
    184 such nodes of scatter_reduce_torchscript's conversion after EliminateIdentity, finds
    nothing (`inspect` models both), and the values are ORT's CPU kernel's."""
    from ort_dml_ops import inspect

    model = _through_identities()
    result = convert(model, "dml", strategy="lower", with_inspect=False)
    assert result.report.summary() == {"lowered": 2}
    assert "Identity" not in {n.op_type for n in result.model.graph.node}
    removed = {n.removed_by for n in inspect(result.model, "dml").nodes}
    assert "CommonSubexpressionElimination" not in removed
    rng = np.random.default_rng(2)
    feeds = {
        # small integers: a float sum exact in any order
        "x": rng.integers(-9, 10, (3, 6)).astype(np.float32),
        "idx": rng.integers(-6, 6, (3, 5)),
        "u": rng.integers(-3, 4, (3, 5)).astype(np.float32),
    }
    for want, got in zip(_run(model, feeds), _run(result.model, feeds)):
        np.testing.assert_array_equal(got, want)
