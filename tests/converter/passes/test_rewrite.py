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
