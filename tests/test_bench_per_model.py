"""The per-model bench's scaled sizes (ort_dml_ops/bench/per_model.py, issue 28 item 5)."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper

from ort_dml_ops.bench import per_model


def _model(inputs):
    graph = helper.make_graph(
        [helper.make_node("Identity", [inputs[0][0]], ["y"])],
        "g",
        [helper.make_tensor_value_info(n, t, dims) for n, t, dims in inputs],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    return helper.make_model(graph)


def test_leading_symbolic_dims_grow_in_every_input_that_has_them():
    """A GCN's x [N, F] and edge_index [2, E]: N and E lead and grow; F and the 2 do not; a mask
    [E] grows with the edges. Index values are kept (in range of the first copy)."""
    m = _model(
        [
            ("x", TensorProto.FLOAT, ["N", 4]),
            ("edge_index", TensorProto.INT64, [2, "E"]),
            ("mask", TensorProto.BOOL, ["E"]),
        ]
    )
    feeds = {
        "x": np.arange(12, dtype=np.float32).reshape(3, 4),
        "edge_index": np.array([[0, 1], [2, 0]], np.int64),
        "mask": np.array([True, False]),
    }
    assert per_model.leading_symbolic_dims(m) == {"N", "E"}
    scaled, why = per_model.scale_feeds(m, feeds, 3)
    assert why == "" and scaled is not None
    assert scaled["x"].shape == (9, 4) and scaled["edge_index"].shape == (2, 6)
    np.testing.assert_array_equal(scaled["x"][3:6], feeds["x"])
    np.testing.assert_array_equal(scaled["edge_index"], np.tile(feeds["edge_index"], 3))
    np.testing.assert_array_equal(scaled["mask"], np.tile(feeds["mask"], 3))
    assert per_model.scale_feeds(m, feeds, 1)[0]["x"] is feeds["x"]


def test_static_shapes_and_huge_inputs_are_not_scaled():
    static = _model([("x", TensorProto.FLOAT, [3, 4])])
    feeds = {"x": np.zeros((3, 4), np.float32)}
    assert per_model.scale_feeds(static, feeds, 100) == (None, "static input shapes")
    big = _model([("x", TensorProto.FLOAT, ["B", 1000])])
    scaled, why = per_model.scale_feeds(
        big, {"x": np.zeros((100, 1000), np.float32)}, 10_000
    )
    assert scaled is None and "MiB" in why


def test_outputs_agree_allows_the_summation_bound_at_the_largest_size():
    want = [np.array([1.0, 2.0], np.float32), np.array([3], np.int64)]
    near = [np.array([1.0005, 2.0], np.float32), np.array([3], np.int64)]
    assert per_model.outputs_agree(want, near, 10_000)
    assert not per_model.outputs_agree(want, near, 100)
    assert not per_model.outputs_agree(want, [want[0], np.array([4], np.int64)], 10_000)
