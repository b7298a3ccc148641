"""CumSum / CumProd reference kernels against ONNX Runtime's CPU EP and onnx's ReferenceEvaluator.

The grid: ranks 1-5, every axis (positive and negative), exclusive x reverse, every dtype the
ONNX schema allows, values with zeros, negatives, NaN and inf, and integers that overflow.
"""

import itertools

import ml_dtypes
import numpy as np
import pytest

from ort_dml_ops.ops import cumprod, cumsum
from tests.support import (
    assert_same,
    ort_cpu_has_kernel,
    run_ort_cpu,
    run_reference,
    single_node_model,
)

SCAN_DTYPES = [
    np.float32,
    np.float64,
    np.float16,
    ml_dtypes.bfloat16,
    np.int32,
    np.int64,
    np.uint32,
    np.uint64,
]
SHAPES = {1: (7,), 2: (3, 5), 3: (2, 1, 4), 4: (2, 3, 1, 3), 5: (2, 1, 3, 2, 2)}
OPS = {"CumSum": (cumsum, 14), "CumProd": (cumprod, 26)}


def scan_values(shape, dtype, seed=0):
    """Values that exercise the edge cases: zeros, negatives, NaN/inf, integer overflow."""
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt.kind == "u":
        # large factors so products and sums wrap around within a few steps
        return rng.integers(0, np.iinfo(dt).max // 3, size=shape, dtype=dt) | np.array(
            1, dt
        )
    if dt.kind == "i":
        return rng.integers(
            np.iinfo(dt).min // 3, np.iinfo(dt).max // 3, size=shape, dtype=dt
        )
    x = rng.choice(np.array([0.0, -0.0, 1.5, -2.0, 0.5, 3.0, -1.0, 0.25]), size=shape)
    flat = x.reshape(-1)
    if flat.size > 4:
        flat[rng.integers(0, flat.size)] = np.nan
        flat[rng.integers(0, flat.size)] = np.inf
        flat[rng.integers(0, flat.size)] = -np.inf
    return x.astype(dt)


def expected(op, x, axis, exclusive, reverse):
    """From ONNX Runtime's CPU kernel when it has one for this dtype, else ReferenceEvaluator."""
    since = OPS[op][1]
    model = single_node_model(
        op,
        [("x", x.dtype, x.ndim), ("axis", np.int64, 0)],
        {"exclusive": exclusive, "reverse": reverse},
        opset=since,
    )
    feeds = {"x": x, "axis": np.array(axis, np.int64)}
    if ort_cpu_has_kernel(op, since, x.dtype):
        return run_ort_cpu(model, feeds)
    return run_reference(model, feeds)


def grid():
    for op, dtype, rank in itertools.product(OPS, SCAN_DTYPES, SHAPES):
        for axis in range(-rank, rank):
            for exclusive, reverse in itertools.product((0, 1), repeat=2):
                yield pytest.param(
                    op,
                    dtype,
                    rank,
                    axis,
                    exclusive,
                    reverse,
                    id=f"{op}-{np.dtype(dtype).name}-r{rank}-a{axis}-e{exclusive}r{reverse}",
                )


@pytest.mark.parametrize("op,dtype,rank,axis,exclusive,reverse", list(grid()))
def test_scan_matches_onnx_runtime_and_reference(
    op, dtype, rank, axis, exclusive, reverse
):
    x = scan_values(SHAPES[rank], dtype, seed=rank * 10 + axis)
    kernel = OPS[op][0]
    assert_same(
        kernel(x, np.array(axis, np.int64), exclusive, reverse),
        expected(op, x, axis, exclusive, reverse),
    )


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize(
    "axis_tensor",
    [np.array(1, np.int64), np.array([1], np.int32), np.array(-1, np.int32), 1],
)
def test_axis_forms(op, axis_tensor):
    x = scan_values((3, 4), np.float32)
    assert_same(OPS[op][0](x, axis_tensor), expected(op, x, 1, 0, 0))


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize(
    "shape,axis",
    [((0,), 0), ((3, 0), 1), ((0, 4), 0), ((3, 0), 0), ((1,), 0), ((4, 1), 1)],
)
@pytest.mark.parametrize("exclusive", [0, 1])
def test_empty_and_length_one_axes(op, shape, axis, exclusive):
    x = scan_values(shape, np.float32)
    assert_same(OPS[op][0](x, axis, exclusive, 1), expected(op, x, axis, exclusive, 1))


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize(
    "shape,axis", [((6, 4096), 0), ((4096, 6), 1), ((6, 40, 700), 1), ((3, 5, 9000), 2)]
)
def test_large_inputs_split_over_threads(op, shape, axis):
    # Large enough that the kernel splits the work over threads and both code paths run.
    x = scan_values(shape, np.float64, seed=3)
    assert_same(OPS[op][0](x, axis, 1, 1), expected(op, x, axis, 1, 1))


def test_inplace_reuses_the_buffer():
    x = scan_values((3, 4), np.int64)
    want = expected("CumSum", x, 0, 0, 0)
    out = cumsum(x, 0, inplace=True)
    assert out is x
    assert_same(out, want)


def test_integer_products_wrap_like_onnx_runtime():
    x = np.full((40,), 3, np.int32)  # 3**40 overflows int32 many times
    assert_same(cumprod(x, 0), expected("CumProd", x, 0, 0, 0))


@pytest.mark.parametrize(
    "axis,message",
    [
        (2, "axis 2 is out of range for rank 2"),
        (-3, "axis -3 is out of range for rank 2"),
        (np.array([0, 1], np.int64), "scalar or a 1-element tensor"),
        (np.array(1.0, np.float32), "int32 or int64"),
    ],
)
def test_bad_axis_names_the_problem(axis, message):
    with pytest.raises(ValueError, match=message):
        cumprod(np.ones((2, 3), np.float32), axis)
