"""ScatterElements reference kernel against ONNX Runtime's CPU EP and onnx's ReferenceEvaluator.

Ranks 1-4, every axis (positive and negative), every reduction, every ONNX dtype, indices
with duplicates and negative values, updates with NaN and inf.
"""

import itertools

import ml_dtypes
import numpy as np
import pytest

from ort_dml_ops.ops import REDUCTIONS, ScatterIndexError, scatter_elements
from tests.support import (
    assert_same,
    ort_cpu_has_kernel,
    run_ort_cpu,
    run_reference,
    single_node_model,
)

NUMERIC = [
    np.float32,
    np.float64,
    np.float16,
    ml_dtypes.bfloat16,
    np.int8,
    np.int16,
    np.int32,
    np.int64,
    np.uint8,
    np.uint16,
    np.uint32,
    np.uint64,
]
DATA_SHAPES = {1: (6,), 2: (4, 5), 3: (3, 4, 2), 4: (2, 3, 2, 3)}


def values(shape, dtype, rng):
    dt = np.dtype(dtype)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return rng.integers(
            max(info.min, -120), min(info.max, 120), size=shape, endpoint=True
        ).astype(dt)
    if dt.kind == "b":
        return rng.random(shape) < 0.5
    x = rng.choice(np.array([0.0, -1.5, 2.0, 0.5, -3.0, 7.0]), size=shape)
    flat = x.reshape(-1)
    for special in (np.nan, np.inf, -np.inf):
        if flat.size > 3 and rng.random() < 0.7:
            flat[rng.integers(flat.size)] = special
    return x.astype(dt)


def case(rank, axis, dtype, seed):
    """Data, and indices/updates smaller than data with duplicates and negative indices."""
    rng = np.random.default_rng(seed)
    shape = DATA_SHAPES[rank]
    ishape = tuple(max(1, d - (i % 2)) for i, d in enumerate(shape))
    n = shape[axis]
    ishape = (
        ishape[: axis % rank] + (n + 2,) + ishape[axis % rank + 1 :]
    )  # more updates than slots: duplicates
    indices = rng.integers(-n, n, size=ishape).astype(np.int64)
    return values(shape, dtype, rng), indices, values(ishape, dtype, rng)


def expected(data, indices, updates, axis, reduction, opset=18):
    """ONNX Runtime's CPU kernel where it has one; else, exactly, its float32 result (bfloat16
    none/max/min only move values) or ReferenceEvaluator (16-bit float add/mul)."""
    if data.dtype == ml_dtypes.bfloat16 and reduction in ("none", "max", "min"):
        as_f32 = expected(
            data.astype(np.float32),
            indices,
            updates.astype(np.float32),
            axis,
            reduction,
            opset,
        )
        return as_f32.astype(ml_dtypes.bfloat16)
    model = single_node_model(
        "ScatterElements",
        [
            ("data", data.dtype, data.ndim),
            ("indices", indices.dtype, indices.ndim),
            ("updates", data.dtype, data.ndim),
        ],
        {"axis": axis, **({"reduction": reduction} if opset >= 16 else {})},
        opset=opset,
    )
    feeds = {"data": data, "indices": indices, "updates": updates}
    ort_refuses = data.dtype in (np.float16, ml_dtypes.bfloat16) and reduction in (
        "add",
        "mul",
    )
    if ort_cpu_has_kernel("ScatterElements", opset, data.dtype) and not ort_refuses:
        return run_ort_cpu(model, feeds)
    return run_reference(model, feeds)


def grid():
    for rank, dtype, reduction in itertools.product(DATA_SHAPES, NUMERIC, REDUCTIONS):
        for axis in range(-rank, rank):
            yield pytest.param(
                rank,
                axis,
                dtype,
                reduction,
                id=f"r{rank}-a{axis}-{np.dtype(dtype).name}-{reduction}",
            )


@pytest.mark.parametrize("rank,axis,dtype,reduction", list(grid()))
def test_scatter_matches_onnx_runtime(rank, axis, dtype, reduction):
    data, indices, updates = case(
        rank, axis, dtype, seed=rank * 100 + axis * 7 + len(reduction)
    )
    assert_same(
        scatter_elements(data, indices, updates, axis, reduction),
        expected(data, indices, updates, axis, reduction),
    )


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_nan_handling_follows_onnx_runtime(reduction):
    nan = np.nan
    data = np.array([nan, 1.0, 1.0, 5.0, nan], np.float32)
    indices = np.array([0, 1, 1, 2, 3, 3, 0, 0])
    updates = np.array([3.0, nan, 2.0, nan, 4.0, 7.0, nan, -1.0], np.float32)
    assert_same(
        scatter_elements(data, indices, updates, 0, reduction),
        expected(data, indices, updates, 0, reduction),
    )


@pytest.mark.parametrize("reduction", ["none", "add"])
def test_bool_data(reduction):
    rng = np.random.default_rng(1)
    data, indices, updates = (
        rng.random((3, 4)) < 0.5,
        rng.integers(-4, 4, (3, 6)),
        rng.random((3, 6)) < 0.5,
    )
    assert_same(
        scatter_elements(data, indices, updates, 1, reduction),
        expected(data, indices, updates, 1, reduction),
    )


def test_string_data():
    data = np.array([["a", "b", "c"], ["d", "e", "f"]], dtype=object)
    indices = np.array([[2, 0], [-1, 1]], np.int64)
    updates = np.array([["x", "y"], ["z", "w"]], dtype=object)
    assert_same(
        scatter_elements(data, indices, updates, 1),
        expected(data, indices, updates, 1, "none"),
    )


@pytest.mark.parametrize("opset", [11, 13, 16])
def test_int32_indices_and_older_opsets(opset):
    data, indices, updates = case(2, 1, np.float32, seed=opset)
    reduction = "add" if opset >= 16 else "none"
    got = scatter_elements(data, indices.astype(np.int32), updates, 1, reduction)
    assert_same(
        got,
        expected(data, indices.astype(np.int32), updates, 1, reduction, opset=opset),
    )


def test_large_add_like_a_histogram():
    rng = np.random.default_rng(7)
    data = np.zeros((1, 1000), np.float32)
    indices = rng.integers(0, 1000, (1, 200_000))
    updates = rng.random((1, 200_000), dtype=np.float32)
    assert_same(
        scatter_elements(data, indices, updates, 1, "add"),
        expected(data, indices, updates, 1, "add"),
    )


def test_out_of_range_index_names_index_axis_and_range():
    with pytest.raises(
        ScatterIndexError,
        match=r"index 5 is out of range for axis 1 of size 4 \(valid: \[-4, 3\]\)",
    ):
        scatter_elements(np.zeros((2, 4)), np.array([[0, 5]]), np.ones((1, 2)), axis=1)
    with pytest.raises(ScatterIndexError, match=r"index -5 "):
        scatter_elements(
            np.zeros((2, 4)), np.array([[-5, 0]]), np.ones((1, 2)), axis=-1
        )


@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({"reduction": "avg"}, "unknown reduction 'avg'"),
        ({"axis": 2}, "axis 2 is out of range for rank 2"),
        ({"indices": np.zeros((1, 2), np.float32)}, "indices must be int32 or int64"),
        ({"updates": np.ones((1, 3))}, "must have one shape"),
        (
            {"indices": np.zeros((3, 1), np.int64), "updates": np.ones((3, 1))},
            "larger than data's",
        ),
    ],
)
def test_bad_arguments_name_the_problem(kwargs, message):
    args = {
        "data": np.zeros((2, 4)),
        "indices": np.zeros((1, 2), np.int64),
        "updates": np.ones((1, 2)),
        "axis": 1,
    }
    args.update(kwargs)
    with pytest.raises((ValueError, TypeError), match=message):
        scatter_elements(**args)


@pytest.mark.parametrize(
    "dtype", [np.float16, np.float32, np.float64, ml_dtypes.bfloat16]
)
@pytest.mark.parametrize("reduction,data_value", [("max", -10.0), ("min", 10.0)])
@pytest.mark.parametrize("zeros", [(-0.0, 0.0), (0.0, -0.0), (-0.0, -0.0, 0.0), (0.0,)])
def test_signed_zero_ties_go_to_the_later_update_like_onnx_runtime(
    dtype, reduction, data_value, zeros
):
    """ORT keeps the current value only if strictly greater (smaller): between +0.0 and -0.0 the
    later item wins. np.maximum kept the earlier one for float16 (found by the property test:
    data -10.086, updates -0.0 then +0.0 gave -0.0 where ORT gives +0.0)."""
    data = np.array([data_value, 1.0], dtype=dtype)
    updates = np.array(zeros, dtype=dtype)
    indices = np.zeros(len(zeros), np.int64)
    got = scatter_elements(data, indices, updates, 0, reduction)
    assert_same(got, expected(data, indices, updates, 0, reduction))
    assert np.signbit(got[0]) == np.signbit(np.float64(zeros[-1]))
