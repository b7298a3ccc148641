"""The WebGPU-clean scatter variant (converter/rules/scatter_clean.py) against ORT's CPU kernels.

`convert(target="webgpu")` of a float scatter sorts float32 keys row by row and writes with
ScatterElements (none); run here on the CPU EP and compared with ORT's own ScatterElements /
ScatterND: float max / min / none bit for bit (NaN, −0.0 included), add / mul within the bound
of tests/converter/rules/test_scatter.py. Its kernels on the WebGPU plugin itself:
tests/webgpu/test_scatter_clean_webgpu.py.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest

from ort_dml_ops.conversion import convert

from ._util import op_types, run_cpu, single_op
from .test_scatter import _bits_equal, clean_scatters_write, elements_model, lowered

#: ops the WebGPU plugin (0.4.0) has no kernel for, for any type (targets/data/webgpu_0.4.0.json)
NO_WEBGPU_KERNEL = {"MaxUnpool", "IsNaN", "ConstantOfShape"}


def clean(model, **kw):
    r = convert(model, "webgpu", strategy="lower", **kw)
    onnx.checker.check_model(r.model, full_check=True)
    ops = [n for n in r.model.graph.node]
    scatters = [n for n in ops if n.op_type.startswith("Scatter")]
    # the scatters left are writes: ScatterElements without a reduction (the result), and
    # from opset 18 an int32 max scatter into an Expand of −1: without a reduction the
    # winners' (scatter_clean.last_writes), for float max / min each run's last group start
    assert 1 <= len(scatters) <= 2
    assert all(n.op_type == "ScatterElements" for n in scatters)
    assert clean_scatters_write(r.model)
    assert not {t for _, t in op_types(r.model)} & NO_WEBGPU_KERNEL
    return r


def _feeds(rng, dshape, ishape, dim, dtype, nan=0.0):
    data = rng.integers(-4, 5, dshape).astype(dtype)
    updates = rng.integers(-4, 5, ishape).astype(dtype)
    if nan:
        data[rng.random(dshape) < nan] = np.nan
        updates[rng.random(ishape) < nan] = np.nan
        updates[rng.random(ishape) < 0.1] = -0.0
    return {
        "data": data,
        "indices": rng.integers(-dim, dim, ishape).astype(np.int64),
        "updates": updates,
    }


@pytest.mark.parametrize("reduction", ["none", "add", "mul", "max", "min"])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize(
    "dshape,ishape,axis",
    [
        ([40], [300], 0),  # one row: all K keys sorted at once
        ([6, 7], [9, 7], 0),  # axis moved last by a Transpose
        ([6, 7], [6, 20], 1),  # rows along the last axis
        ([3, 4, 5], [3, 8, 5], 1),  # a middle axis
        ([3, 4, 5], [2, 3, 9], 2),  # fewer rows than the data
    ],
)
def test_clean_vs_ort(reduction, dtype, dshape, ishape, axis):
    rng = np.random.default_rng(len(ishape) * 10 + axis)
    m = elements_model(dshape, ishape, axis, reduction, dtype)
    feeds = _feeds(rng, dshape, ishape, dshape[axis], dtype)
    if (
        dtype == np.float16
    ):  # ORT's CPU kernel reduces no float16: its float32 result, rounded
        m32 = elements_model(dshape, ishape, axis, reduction, np.float32)
        f32 = {
            k: v.astype(np.float32) if v.dtype == dtype else v for k, v in feeds.items()
        }
        want = run_cpu(m32, f32)[0].astype(np.float16)
    else:
        (want,) = run_cpu(m, feeds)
    (y,) = run_cpu(clean(m).model, feeds)
    if reduction in ("add", "mul") and dtype == np.float32:
        # small integers: every partial sum / product is exact, so the bits match too
        np.testing.assert_array_equal(y, want)
    elif reduction in ("add", "mul"):
        np.testing.assert_allclose(y, want, rtol=2e-2, atol=1e-2)
    else:
        _bits_equal(y, want)


@pytest.mark.parametrize("reduction", ["none", "max", "min"])
@pytest.mark.parametrize("seed", range(4))
def test_clean_nan_and_signed_zero_sequences_bit_exact(reduction, seed):
    """NaN anywhere and −0.0 among the updates: ORT's sequential rule bit for bit (x != x stands
    in for IsNaN, Not(And(Not, Not)) for Or)."""
    rng = np.random.default_rng(seed)
    m = elements_model([3, 5], [3, 9], 1, reduction, np.float32)
    feeds = _feeds(rng, [3, 5], [3, 9], 5, np.float32, nan=0.25)
    (want,) = run_cpu(m, feeds)
    (y,) = run_cpu(clean(m).model, feeds)
    _bits_equal(y, want)


@pytest.mark.parametrize("reduction", ["add", "max"])
@pytest.mark.parametrize("K,M", [(5000, 3), (4100, 40)])
def test_clean_long_runs_cross_scan_blocks(reduction, K, M):
    """Runs of hundreds to thousands of updates (every level of the blocked scan over float
    keys), static and symbolic K."""
    rng = np.random.default_rng(K)
    data = rng.integers(-50, 50, [M]).astype(np.float32)
    updates = rng.integers(-1000, 1000, [K]).astype(np.float32)
    if reduction == "max":
        updates[rng.random(K) < 0.01] = np.nan
    indices = rng.integers(-M, M, [K]).astype(np.int64)
    feeds = {"data": data, "indices": indices, "updates": updates}
    (want,) = run_cpu(elements_model([M], [K], 0, reduction, np.float32), feeds)
    for ishape in ([K], ["k"]):
        (y,) = run_cpu(
            clean(elements_model([M], ishape, 0, reduction, np.float32)).model, feeds
        )
        _bits_equal(y, want)


@pytest.mark.parametrize("reduction", ["none", "add", "max"])
def test_clean_symbolic_shapes_and_empty_tensors(reduction):
    """Every dim a name (the run-time M ≤ 2^24 guard, K = 0, zero-width rows): ORT's result."""
    m = elements_model(["a", "b"], ["t", "b"], 0, reduction, np.float32)
    low = clean(m).model
    rng = np.random.default_rng(3)
    for d, t in (
        ((5, 7), (9, 7)),
        ((0, 5), (0, 5)),
        ((3, 0), (4, 0)),
        ((3, 5), (0, 5)),
    ):
        feeds = _feeds(rng, d, t, max(d[0], 1), np.float32)
        _bits_equal(run_cpu(low, feeds)[0], run_cpu(m, feeds)[0])


@pytest.mark.parametrize("reduction", ["none", "add", "min"])
def test_clean_scatter_nd(reduction):
    rng = np.random.default_rng(5)
    m = single_op(
        "ScatterND",
        [
            ("data", np.float32, [4, 5, 3]),
            ("indices", np.int64, [7, 2]),
            ("updates", np.float32, [7, 3]),
        ],
        {"reduction": reduction},
        opset=18,
    )
    feeds = {
        "data": rng.integers(-4, 5, [4, 5, 3]).astype(np.float32),
        "indices": np.stack(
            [rng.integers(-4, 4, 7), rng.integers(-5, 5, 7)], axis=1
        ).astype(np.int64),
        "updates": rng.integers(-4, 5, [7, 3]).astype(np.float32),
    }
    if (
        reduction == "none"
    ):  # ORT leaves the order of duplicates to its kernel: keep them unique
        feeds["indices"] = np.array(
            [[0, 0], [1, 1], [2, 2], [3, 3], [0, 4], [-1, 0], [-2, -1]], np.int64
        )
    _bits_equal(run_cpu(clean(m).model, feeds)[0], run_cpu(m, feeds)[0])


@pytest.mark.parametrize("axis", [0, 1])
def test_clean_guard_fails_the_run_on_a_bad_index(axis):
    m = elements_model([2, 3], [2, 3], axis, "add", np.float32)
    low = clean(m).model
    feeds = {
        "data": np.zeros((2, 3), np.float32),
        "indices": np.zeros((2, 3), np.int64),
        "updates": np.ones((2, 3), np.float32),
    }
    _bits_equal(run_cpu(low, feeds)[0], run_cpu(m, feeds)[0])
    feeds["indices"][1, 2] = 3 if axis == 1 else 2
    with pytest.raises(Exception, match=r"IndexOrSizeOutOfRange|out of"):
        run_cpu(low, feeds)


def test_other_targets_keep_the_dml_graph():
    """Every other target gets the MaxUnpool graph (on WebGPU the types the clean variant does
    not take are refused: test_scatter.py `test_webgpu_refuses_data_its_plugin_has_no_kernels_for`)."""
    for target, dtype, red, opset in (
        ("dml", np.int32, "none", 16),
        ("dml", np.float32, "add", 18),
    ):
        m = elements_model([6], [9], 0, red, dtype, opset=opset)
        ops = {t for _, t in op_types(convert(m, target, strategy="lower").model)}
        assert "MaxUnpool" in ops and "ScatterElements" not in ops


def _whole_range(rng, shape, dtype):
    """Values over the whole range of `dtype`: every bit pattern a write must copy (floats:
    small integers, −0.0 and NaN among them)."""
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)
    x = rng.integers(-4, 5, shape).astype(dtype)
    x[rng.random(shape) < 0.2] = -0.0
    x[rng.random(shape) < 0.05] = np.nan
    return x


@pytest.mark.parametrize("dtype", [np.int32, np.uint32, np.float32, np.float16])
@pytest.mark.parametrize("opset", [11, 17])
@pytest.mark.parametrize("symbolic", [False, True])
@pytest.mark.parametrize(
    "dshape,ishape,axis",
    [
        ([40], [300], 0),  # one row: all K keys sorted at once
        ([6, 7], [90, 7], 0),  # axis moved last by a Transpose
        ([6, 7], [6, 200], 1),  # rows along the last axis
        ([3, 4, 5], [3, 8, 5], 1),  # a middle axis
        ([6, 4], [0, 4], 0),  # no update
    ],
)
def test_clean_sorted_write_without_reduction_vs_ort(
    dtype, opset, symbolic, dshape, ishape, axis
):
    """Before opset 18 (no reduction max for the winners) a write without reduction sorts the
    positions, not the values: each sorted update's target goes back to its update
    (`scatter_clean._unsorted`) and the updates are written as they are, so no value passes a
    kernel the plugin has for floats only, and int32 and uint32 data take the graph the floats
    do. Bit for bit ORT's CPU kernel: of each position's duplicates the last lands."""
    rng = np.random.default_rng(opset + symbolic + len(ishape) * 7)
    m = elements_model(dshape, ishape, axis, "none", dtype, opset=opset)
    reference = onnx.ModelProto()
    reference.CopyFrom(m)
    if symbolic:
        for v in (*m.graph.input, *m.graph.output):
            for k, d in enumerate(v.type.tensor_type.shape.dim):
                d.Clear()
                d.dim_param = f"{v.name}_{k}"
    low = lowered(m, "webgpu").model  # no scatter at all where no update is static
    ops = {t for _, t in op_types(low)}
    assert not ops & NO_WEBGPU_KERNEL and ("TopK" in ops or 0 in ishape)
    dim = dshape[axis]
    feeds = {
        "data": _whole_range(rng, dshape, dtype),
        "indices": rng.integers(-dim, dim, ishape).astype(np.int64),
        "updates": _whole_range(rng, ishape, dtype),
    }
    (got,) = run_cpu(low, feeds)
    (want,) = run_cpu(reference, feeds)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))


@pytest.mark.parametrize("opset", [11, 13, 16])
def test_clean_older_opsets_keep_the_last_duplicate(opset):
    """ScatterElements-11/13 (no reduction attribute): duplicates resolve as ORT's kernel does,
    the last update wins — the sort keeps each run in update order and only run ends write."""
    rng = np.random.default_rng(opset)
    m = elements_model([6, 7], [9, 7], 0, "none", np.float32, opset=opset)
    feeds = _feeds(rng, [6, 7], [9, 7], 6, np.float32)
    _bits_equal(run_cpu(clean(m).model, feeds)[0], run_cpu(m, feeds)[0])


@pytest.mark.parametrize("reduction", ["max", "min"])
@pytest.mark.parametrize("symbolic", [False, True])
@pytest.mark.parametrize("opset", [16, 18])
def test_clean_max_min_count_no_groups_with_the_plugins_cumsum(
    reduction, symbolic, opset
):
    """The plugin's CumSum reads the whole prefix for every element (O(K²): a 300 × 300 float
    max took 4.4 s on lavapipe, 0.21 s now). From opset 18 the run's last group comes from one
    int32 ScatterElements max of the group starts, with no prefix count at all; before 18 (a
    DOMAIN scatter: ONNX has no reduction max there) the count is the blocked Add scan, static
    or of run-time length. Bit for bit ORT's sequential max / min either way, NaNs and −0.0
    included."""
    from onnx import helper

    from ort_dml_ops import DOMAIN

    rng = np.random.default_rng(opset + symbolic)
    K, M = 200, 4
    m = elements_model([M, 3], [K, 3], 0, reduction, np.float32)
    reference = onnx.ModelProto()
    reference.CopyFrom(m)
    if symbolic:
        for v in (*m.graph.input, *m.graph.output):
            v.type.tensor_type.shape.dim[0].dim_param = (
                "k" if v.name in ("indices", "updates") else "m"
            )
    if opset < 18:
        m.graph.node[0].domain = DOMAIN
        del m.opset_import[:]
        m.opset_import.extend(
            [helper.make_opsetid("", opset), helper.make_opsetid(DOMAIN, 1)]
        )
    low = clean(m).model
    assert "CumSum" not in {n.op_type for n in low.graph.node}
    values = np.array([np.nan, -0.0, 0.0, 1, -1, np.inf, -np.inf, 2], np.float32)
    feeds = {
        "data": rng.choice(values, (M, 3)),
        "indices": rng.integers(-M, M, (K, 3)).astype(np.int64),
        "updates": rng.choice(values, (K, 3)),
    }
    _bits_equal(run_cpu(low, feeds)[0], run_cpu(reference, feeds)[0])
