"""Random inputs (feeds.py): one maker for `run`/`check --random-inputs` and `convert --verify`."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import onnx
import onnx.helper as oh

from ort_dml_ops.feeds import random_array, random_model_feeds, random_value


def test_values_every_op_accepts():
    rng = np.random.default_rng(0)
    for dtype in (np.float32, np.float16, np.float64, ml_dtypes.bfloat16):
        a = random_array(dtype, [50, 7], rng)
        assert a.dtype == np.dtype(dtype) and a.shape == (50, 7)
        f = a.astype(np.float64)
        assert f.min() >= 0.5 and f.max() <= 1.5  # no zero, no sign change
    for dtype in (np.int64, np.int32, np.uint8):
        a = random_array(dtype, [200], rng)
        assert a.dtype == np.dtype(dtype) and set(np.unique(a)) == {0, 1}
    b = random_array(np.bool_, [200], rng)
    assert b.dtype == np.bool_ and set(np.unique(b)) == {False, True}


def test_symbolic_dims_and_types():
    rng = np.random.default_rng(0)
    assert random_value("tensor(int64)", ["batch", 3, None], rng).shape == (4, 3, 4)
    g = oh.make_graph(
        [oh.make_node("Add", ["x", "w"], ["y"])],
        "g",
        [
            oh.make_tensor_value_info("x", onnx.TensorProto.FLOAT16, ["n", 2]),
            oh.make_tensor_value_info("w", onnx.TensorProto.FLOAT16, [2]),
        ],
        [oh.make_tensor_value_info("y", onnx.TensorProto.FLOAT16, ["n", 2])],
        [oh.make_tensor("w", onnx.TensorProto.FLOAT16, [2], [1.0, 2.0])],
    )
    feeds = random_model_feeds(oh.make_model(g))
    assert list(feeds) == ["x"]  # an initializer is not fed
    assert feeds["x"].dtype == np.float16 and feeds["x"].shape == (3, 2)
    # the same seed gives the same values: --verify runs both models on one set
    np.testing.assert_array_equal(feeds["x"], random_model_feeds(oh.make_model(g))["x"])
