"""Property tests: four implementations of CumSum, CumProd and ScatterElements agree.

For random shapes (rank 1-6, axis lengths 0-300, at most 10,000 elements), axes (negative
ones included), attributes, dtypes, index patterns (duplicates, negative indices) and every
reduction, these must agree:

* **native**: ONNX Runtime's own CPU kernel (CumSum-14, CumProd-26, ScatterElements-18);
* **lowered**: `convert(strategy="lower", target="dml")` run on the CPU EP;
* **fallback**: the project's Python custom ops through `ort_dml_ops.InferenceSession`;
* **reference**: the numpy kernels `ort_dml_ops.ops`.

Integers are bit-exact on every path. Floats: native, fallback and reference all scan and
scatter sequentially and must be bit-exact (NaN equal to NaN); the lowered graph
reassociates and is held to the bounds of docs/convert.md ("Error bounds"):
CumProd rtol 2·(n+1)·u; CumSum float64→float32 cast |err| ≤ (n+1)·2^-24·Σ|x|;
ScatterElements add |err| ≤ (⌈log2 K⌉+2)·u·(|data| + Σ|updates at that position|),
mul relative ≤ 2·(d+1)·u for d duplicates, none/max/min exact.

**Session caching** (what keeps ≥ 10,000 cases under 5 minutes on 2 cores):
* native and fallback models have fully dynamic shapes; CumSum/CumProd take the axis as a
  graph input, so one session serves every (shape, axis) of an (op, dtype, rank, exclusive,
  reverse); ScatterElements takes axis/reduction as attributes: one session per
  (dtype, index dtype, reduction, rank, axis);
* the lowered CumProd needs a constant axis and a known rank, but not a static length:
  one session per (dtype, rank, axis, exclusive, reverse), shapes stay random (this is the
  doubling-scan path); the blocked-scan path needs a static axis length, so
  `test_cumprod_static_pool` draws its shapes from a fixed pool (`CUMPROD_POOL`) and its
  sessions are reused across draws;
* the lowered scatter needs static shapes: `test_scatter_four_paths` draws (data shape,
  indices shape, axis) from a fixed pool (`SCATTER_POOL`), values and indices stay random;
  `test_scatter_native_fallback_reference` covers fully random shapes on the three paths
  that take dynamic shapes.

Hypothesis draws the structure (dtype, shape, axis, attributes, pattern) and a `seed`; numpy
draws the values from that seed, so a failure prints the seed and the structure
(`note(...)` and the falsifying example), and `print_blob=True` prints the
`@reproduce_failure` blob.

Profiles (hypothesis settings profiles, applied to these tests only):
* `ort-dml-ops` (default): 10,500 cases in all;
* `ort-dml-ops-ci` (env `CI=true`): the same with `derandomize=True` and no example
  database, so CI runs are reproducible;
* `ORT_DML_OPS_DEEP=1`: ten times the cases (105,000) and pools four times larger.
"""

from __future__ import annotations

import functools
import math
import os

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from hypothesis import HealthCheck, example, given, note, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper

import ort_dml_ops
from ort_dml_ops import DOMAIN, ops
from ort_dml_ops.conversion import convert

# --------------------------------------------------------------------------------------
# profiles

DEEP = os.environ.get("ORT_DML_OPS_DEEP", "").strip() not in ("", "0")
CI = os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")
SCALE = 10 if DEEP else 1
#: a quick look while editing: ORT_DML_OPS_PROPERTY_SCALE=0.05 runs 5% of the cases
SCALE *= float(os.environ.get("ORT_DML_OPS_PROPERTY_SCALE", "1"))
_COMMON = dict(
    deadline=None,
    print_blob=True,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.filter_too_much,
    ],
)
settings.register_profile("ort-dml-ops", **_COMMON)
settings.register_profile("ort-dml-ops-ci", derandomize=True, database=None, **_COMMON)
PROFILE = settings.get_profile("ort-dml-ops-ci" if CI else "ort-dml-ops")

#: cases per test (the whole module: 10,500 by default, 105,000 with ORT_DML_OPS_DEEP=1)
CASES = {
    "cumsum": 2000,
    "cumprod_dynamic": 2500,
    "cumprod_static": 1000,
    "scatter_four": 3500,
    "scatter_three": 1500,
}
COUNTS: dict[str, int] = {k: 0 for k in CASES}


def cases(name: str):
    return settings(PROFILE, max_examples=max(1, int(CASES[name] * SCALE)))


@pytest.fixture(scope="module", autouse=True)
def _report_counts():
    yield
    total = sum(COUNTS.values())
    print(
        f"\n[test_properties] cases run: {total} ({', '.join(f'{k} {v}' for k, v in COUNTS.items())})"
    )


MAX_ELEMENTS = 10_000
MAX_AXIS = 300
SCAN_DTYPES = {
    "CumSum": ["float32", "float64", "int32", "int64"],
    "CumProd": ["float32", "float64", "int32", "int64", "uint32", "uint64"],
}
SCATTER_DTYPES = ["float32", "float64", "int32", "int64", "int8", "float16"]
SCATTER_REDUCTIONS = ["none", "add", "mul", "max", "min"]
U = {"float32": 2.0**-24, "float64": 2.0**-53, "float16": 2.0**-11}

# --------------------------------------------------------------------------------------
# sessions (cached)

_SO = ort.SessionOptions()
_SO.intra_op_num_threads = 1
_SO.log_severity_level = 3


def _elem(dtype: str) -> int:
    return helper.np_dtype_to_tensor_dtype(np.dtype(dtype))


def _dims(rank, shape=None):
    return list(shape) if shape is not None else [f"d{i}" for i in range(rank)]


def _scan_model(
    op, dtype, rank, exclusive, reverse, *, domain="", opset=17, axis=None, shape=None
):
    """x -> op(x, axis) -> y; axis a graph input (int64 0-d) unless given (an initializer)."""
    dims = _dims(rank, shape)
    inputs = [helper.make_tensor_value_info("x", _elem(dtype), dims)]
    inits = []
    if axis is None:
        inputs.append(helper.make_tensor_value_info("axis", TensorProto.INT64, []))
    else:
        inits.append(helper.make_tensor("axis", TensorProto.INT64, [], [axis]))
    node = helper.make_node(
        op,
        ["x", "axis"],
        ["y"],
        domain=domain,
        name=f"the_{op}",
        exclusive=exclusive,
        reverse=reverse,
    )
    graph = helper.make_graph(
        [node],
        "g",
        inputs,
        [helper.make_tensor_value_info("y", _elem(dtype), dims)],
        inits,
    )
    imports = [helper.make_opsetid("", opset)] + (
        [helper.make_opsetid(DOMAIN, 1)] if domain else []
    )
    return helper.make_model(
        graph, opset_imports=imports, ir_version=13 if opset > 21 else 10
    )


def _scatter_model(
    dtype, idx_dtype, reduction, rank, axis, *, domain="", opset=18, shapes=None
):
    dshape, ishape = (
        shapes if shapes is not None else (_dims(rank), [f"k{i}" for i in range(rank)])
    )
    inputs = [
        helper.make_tensor_value_info("data", _elem(dtype), dshape),
        helper.make_tensor_value_info("indices", _elem(idx_dtype), ishape),
        helper.make_tensor_value_info("updates", _elem(dtype), ishape),
    ]
    node = helper.make_node(
        "ScatterElements",
        ["data", "indices", "updates"],
        ["y"],
        domain=domain,
        name="the_scatter",
        axis=axis,
        reduction=reduction,
    )
    graph = helper.make_graph(
        [node], "g", inputs, [helper.make_tensor_value_info("y", _elem(dtype), dshape)]
    )
    imports = [helper.make_opsetid("", opset)] + (
        [helper.make_opsetid(DOMAIN, 1)] if domain else []
    )
    return helper.make_model(graph, opset_imports=imports, ir_version=10)


def _ort(model: onnx.ModelProto) -> ort.InferenceSession:
    return ort.InferenceSession(
        model.SerializeToString(), _SO, providers=["CPUExecutionProvider"]
    )


def _fallback(model: onnx.ModelProto):
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.log_severity_level = 3
    return ort_dml_ops.InferenceSession(
        model, providers=["CPUExecutionProvider"], sess_options=so
    )


def _lowered(model: onnx.ModelProto, expect_action: str):
    result = convert(model, "dml", strategy="lower")
    actions = [n.action for n in result.report.nodes]
    assert actions == [expect_action], (
        actions,
        [n.reason for n in result.report.nodes],
    )
    uses_domain = any(n.domain == DOMAIN for n in result.model.graph.node)
    return _fallback(result.model) if uses_domain else _ort(result.model)


@functools.cache
def native_scan(op, dtype, rank, exclusive, reverse):
    return _ort(
        _scan_model(
            op, dtype, rank, exclusive, reverse, opset=26 if op == "CumProd" else 17
        )
    )


@functools.cache
def fallback_scan(op, dtype, rank, exclusive, reverse):
    return _fallback(_scan_model(op, dtype, rank, exclusive, reverse, domain=DOMAIN))


@functools.cache
def lowered_scan(
    op, dtype, rank, axis, exclusive, reverse, shape=None, source="domain"
):
    if op == "CumSum":
        model = _scan_model(op, dtype, rank, exclusive, reverse, axis=axis, shape=shape)
        return _lowered(model, "cast" if dtype == "float64" else "native")
    if source == "domain":  # DOMAIN::CumProd in an opset-17 model
        model = _scan_model(
            op, dtype, rank, exclusive, reverse, domain=DOMAIN, axis=axis, shape=shape
        )
    else:  # ONNX CumProd-26: convert also steps the opset down to 21
        model = _scan_model(
            op, dtype, rank, exclusive, reverse, opset=26, axis=axis, shape=shape
        )
    return _lowered(model, "lowered")


@functools.cache
def native_scatter(dtype, idx_dtype, reduction, rank, axis):
    return _ort(_scatter_model(dtype, idx_dtype, reduction, rank, axis))


@functools.cache
def fallback_scatter(dtype, idx_dtype, reduction, rank, axis):
    return _fallback(
        _scatter_model(dtype, idx_dtype, reduction, rank, axis, domain=DOMAIN, opset=17)
    )


@functools.cache
def lowered_scatter(dtype, idx_dtype, reduction, dshape, ishape, axis):
    model = _scatter_model(
        dtype,
        idx_dtype,
        reduction,
        len(dshape),
        axis,
        shapes=(list(dshape), list(ishape)),
    )
    return _lowered(model, "lowered")


# --------------------------------------------------------------------------------------
# comparisons


def _same(actual, expected, what: str, signed_zeros: bool = True) -> None:
    """Bit-exact (dtype and shape too); NaN equals NaN; -0.0 differs from +0.0 unless
    `signed_zeros` is False."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.dtype == expected.dtype and actual.shape == expected.shape, (
        f"{what}: {actual.dtype}{list(actual.shape)} vs {expected.dtype}{list(expected.shape)}"
    )
    if actual.dtype.kind == "f":
        same = (actual == expected) | (np.isnan(actual) & np.isnan(expected))
        # +0 vs -0 compare equal above; the sign of zero must match too
        if signed_zeros:
            same &= (np.signbit(actual) == np.signbit(expected)) | np.isnan(actual)
    else:
        same = actual == expected
    if not same.all():
        at = tuple(np.argwhere(~same)[0])
        raise AssertionError(
            f"{what}: {int((~same).sum())} of {same.size} differ; first at {list(at)}: "
            f"{actual[at]!r} != {expected[at]!r}"
        )


def _close(actual, expected, bound, what: str) -> None:
    """|actual - expected| <= bound elementwise where expected is finite; else identical."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.dtype == expected.dtype and actual.shape == expected.shape, (
        f"{what}: {actual.dtype}{list(actual.shape)} vs {expected.dtype}{list(expected.shape)}"
    )
    a, e = actual.astype(np.float64), expected.astype(np.float64)
    finite = np.isfinite(e)
    with np.errstate(invalid="ignore"):
        ok = np.where(
            finite, np.abs(a - e) <= bound, (a == e) | (np.isnan(a) & np.isnan(e))
        )
    if not ok.all():
        at = tuple(np.argwhere(~ok)[0])
        b = np.broadcast_to(bound, e.shape)[at]
        raise AssertionError(
            f"{what}: {int((~ok).sum())} of {ok.size} outside the bound; first at {list(at)}: "
            f"{a[at]!r} vs {e[at]!r} (|diff| {abs(a[at] - e[at]):.3g} > bound {b:.3g})"
        )


# --------------------------------------------------------------------------------------
# strategies


@st.composite
def shapes(draw, min_rank=1, max_rank=6, max_elements=MAX_ELEMENTS):
    """rank 1-6, each axis 0-300, at most 10,000 elements (zero-size dims leave no budget cap)."""
    rank = draw(st.integers(min_rank, max_rank))
    order = draw(st.permutations(range(rank)))
    dims = [0] * rank
    budget = max_elements
    for i in order:
        d = draw(st.integers(0, min(MAX_AXIS, max(budget, 1))))
        dims[i] = d
        budget = budget // d if d else budget
    return tuple(dims)


def _pool(seed: int, size: int, make) -> list:
    rng = np.random.default_rng(seed)
    return [make(rng, i) for i in range(size)]


def _random_shape(rng, rank, max_elements=MAX_ELEMENTS):
    dims = [0] * rank
    budget = max_elements
    for i in rng.permutation(rank):
        hi = min(MAX_AXIS, max(budget, 1))
        d = (
            int(rng.integers(0, hi + 1))
            if rng.random() < 0.7
            else int(rng.integers(1, min(hi, 6) + 1))
        )
        dims[i] = d
        budget = budget // d if d else budget
    return tuple(dims)


def _cumprod_entry(rng, i):
    rank = 1 + i % 6
    shape = list(_random_shape(rng, rank))
    axis = int(rng.integers(-rank, rank))
    if i % 5 == 0:  # a long axis: blocked scan with B, b > 1
        others = [j for j in range(rank) if j != axis % rank]
        shape[axis % rank] = int(rng.integers(100, MAX_AXIS + 1))
        for j in others:
            shape[j] = min(shape[j], 2)
    return tuple(shape), axis


def _scatter_entry(rng, i):
    rank = 1 + i % 6
    dshape = list(_random_shape(rng, rank))
    axis = int(rng.integers(-rank, rank))
    a = axis % rank
    if i % 7 == 3:
        dshape[a] = 0  # nothing can be indexed: indices must be empty
    ishape = [int(rng.integers(0, d + 1)) if rng.random() < 0.8 else d for d in dshape]
    if dshape[a] == 0:
        ishape[a] = 0
    else:
        budget = MAX_ELEMENTS // max(
            1, int(np.prod([d for j, d in enumerate(ishape) if j != a and d]))
        )
        ishape[a] = int(rng.integers(0, min(MAX_AXIS, budget) + 1))
    return tuple(dshape), tuple(ishape), axis


CUMPROD_POOL = _pool(8, 48 if DEEP else 12, _cumprod_entry)
SCATTER_POOL = _pool(18, 48 if DEEP else 12, _scatter_entry)


# --------------------------------------------------------------------------------------
# values


def scan_values(op, dtype, shape, axis, seed, specials):
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    n = shape[axis] if shape else 1
    if dt.kind in "iu":
        if rng.random() < 0.5:  # full range: wrap-around on overflow
            info = np.iinfo(dt)
            return rng.integers(info.min, info.max, size=shape, dtype=dt, endpoint=True)
        lo = 0 if dt.kind == "u" else -3
        return rng.integers(lo, 4, size=shape).astype(dt)
    if op == "CumProd":
        # |x| = e^t, |t| <= a with n·a <= 60: no product of a prefix overflows or underflows, in
        # any association (docs/convert.md's bound excludes intermediate overflow/underflow)
        a = min(0.7, 60.0 / max(n, 1))
        x = np.exp(rng.uniform(-a, a, size=shape)) * rng.choice([-1.0, 1.0], size=shape)
    else:
        x = rng.standard_normal(size=shape) * 10.0 ** rng.integers(-3, 4)
    x = x.astype(dt)
    if specials and x.size:
        m = rng.random(size=shape) < 0.02
        x[m] = rng.choice(
            np.array([0.0, -0.0, np.inf, -np.inf, np.nan], dt), size=int(m.sum())
        )
    return x


def _index_values(rng, ishape, n, pattern, idx_dtype):
    if 0 in ishape or n == 0:
        return np.zeros(ishape, idx_dtype)
    if pattern == "uniform":
        idx = rng.integers(-n, n, size=ishape)
    elif pattern == "one":  # every update on one position per line: maximal duplicates
        idx = np.full(ishape, int(rng.integers(-n, n)))
    elif pattern == "few":
        idx = rng.choice(rng.integers(-n, n, size=min(3, n)), size=ishape)
    elif pattern == "negative":
        idx = rng.integers(-n, 0, size=ishape)
    else:  # "edges": only the first and last valid indices, both spellings
        idx = rng.choice(np.array([0, n - 1, -n, -1]), size=ishape)
    return idx.astype(idx_dtype)


def scatter_values(
    dtype, reduction, dshape, ishape, axis, seed, pattern, idx_dtype, specials
):
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    n = dshape[axis]
    indices = _index_values(rng, ishape, n, pattern, idx_dtype)
    k = max(1, int(np.prod(ishape)))
    if dt.kind in "iu":
        info = np.iinfo(dt)
        data = rng.integers(info.min, info.max, size=dshape, dtype=dt, endpoint=True)
        updates = rng.integers(info.min, info.max, size=ishape, dtype=dt, endpoint=True)
        if reduction == "mul" and rng.random() < 0.5:
            updates = rng.integers(-3, 4, size=ishape).astype(dt)
        return data, indices, updates
    if reduction == "mul":
        a = min(
            0.7, 8.0 / k
        )  # products of every duplicate stay far from overflow/underflow
        data = np.exp(rng.uniform(-1, 1, size=dshape)) * rng.choice(
            [-1.0, 1.0], size=dshape
        )
        updates = np.exp(rng.uniform(-a, a, size=ishape)) * rng.choice(
            [-1.0, 1.0], size=ishape
        )
    else:
        data = rng.standard_normal(size=dshape) * 10.0 ** rng.integers(-2, 3)
        updates = rng.standard_normal(size=ishape) * 10.0 ** rng.integers(-2, 3)
    data, updates = data.astype(dt), updates.astype(dt)
    if specials:
        for arr in (data, updates):
            if arr.size:
                m = rng.random(size=arr.shape) < 0.02
                arr[m] = rng.choice(
                    np.array([0.0, -0.0, np.inf, -np.inf, np.nan], dt),
                    size=int(m.sum()),
                )
    return data, indices, updates


# --------------------------------------------------------------------------------------
# bounds (docs/convert.md, "Error bounds")


def cumprod_bound(expected, n, dtype):
    return 2 * (n + 1) * U[dtype] * np.abs(expected.astype(np.float64))


def cumsum_cast_bound(x, axis, exclusive, reverse, n):
    """CumSum float64 run as float32: (n + 1)·2^-24·Σ|x| over each output's prefix."""
    with np.errstate(invalid="ignore"):
        prefix = ops.cumsum(np.abs(x.astype(np.float64)), axis, exclusive, reverse)
    return (n + 1) * 2.0**-24 * prefix + 1e-300


def scatter_bound(data, indices, updates, axis, reduction, dtype, expected):
    u = U[dtype]
    if reduction in ("none", "max", "min"):
        return np.zeros(data.shape)
    k = int(indices.size)
    ones = np.ones(indices.shape, np.float64)
    dup = ops.scatter_elements(np.zeros(data.shape), indices, ones, axis, "add")
    if reduction == "add":
        # the lowered tree's bound (docs/convert.md) plus the sequential native sum's own
        # (d + 1)·u·Σ|terms|: the two are compared with each other, not with the exact sum
        total = ops.scatter_elements(
            np.abs(data.astype(np.float64)),
            indices,
            np.abs(updates.astype(np.float64)),
            axis,
            "add",
        )
        return (math.ceil(math.log2(max(k, 1))) + 2 + dup + 1) * u * total
    return 2 * (dup + 1) * u * np.abs(expected.astype(np.float64))


# --------------------------------------------------------------------------------------
# properties


def _check_scan(
    op, dtype, shape, axis, exclusive, reverse, seed, specials, lowered, bound_kind
):
    rank = len(shape)
    x = scan_values(op, dtype, shape, axis % rank, seed, specials)
    note(
        f"{op} {dtype} shape={list(shape)} axis={axis} exclusive={exclusive} reverse={reverse} "
        f"seed={seed} specials={specials}"
    )
    kernel = ops.cumsum if op == "CumSum" else ops.cumprod
    ref = kernel(x, axis, exclusive, reverse)
    feeds = {"x": x, "axis": np.array(axis, np.int64)}
    native = native_scan(op, dtype, rank, exclusive, reverse).run(None, feeds)[0]
    _same(ref, native, f"reference vs native {op}")
    fb = fallback_scan(op, dtype, rank, exclusive, reverse).run(None, feeds)[0]
    _same(fb, native, f"fallback vs native {op}")
    low = lowered.run(None, {"x": x})[0]
    n = shape[axis % rank]
    if np.dtype(dtype).kind in "iu" or bound_kind == "exact":
        _same(low, native, f"lowered vs native {op}")
    elif bound_kind == "cumprod":
        _close(
            low,
            native,
            cumprod_bound(native, n, dtype),
            f"lowered vs native {op} (rtol 2(n+1)u)",
        )
    else:
        _close(
            low,
            native,
            cumsum_cast_bound(x, axis, exclusive, reverse, n),
            f"lowered vs native {op} (cast bound)",
        )


@cases("cumsum")
@given(
    dtype=st.sampled_from(SCAN_DTYPES["CumSum"]),
    shape=shapes(),
    data=st.data(),
    exclusive=st.integers(0, 1),
    reverse=st.integers(0, 1),
    seed=st.integers(0, 2**32 - 1),
    specials=st.booleans(),
)
def test_cumsum_paths(dtype, shape, data, exclusive, reverse, seed, specials):
    """CumSum: native == fallback == reference bit-exact; lowered: native (float32, ints,
    bit-exact) or the float64→float32 cast (within its documented bound)."""
    rank = len(shape)
    axis = data.draw(st.integers(-rank, rank - 1), label="axis")
    lowered = lowered_scan("CumSum", dtype, rank, axis % rank, exclusive, reverse)
    _check_scan(
        "CumSum",
        dtype,
        shape,
        axis,
        exclusive,
        reverse,
        seed,
        specials,
        lowered,
        "cast" if dtype == "float64" else "exact",
    )
    COUNTS["cumsum"] += 1


@cases("cumprod_dynamic")
@given(
    dtype=st.sampled_from(SCAN_DTYPES["CumProd"]),
    shape=shapes(),
    data=st.data(),
    exclusive=st.integers(0, 1),
    reverse=st.integers(0, 1),
    seed=st.integers(0, 2**32 - 1),
    specials=st.booleans(),
)
def test_cumprod_dynamic(dtype, shape, data, exclusive, reverse, seed, specials):
    """CumProd, any shape: the lowered graph's dynamic-length doubling scan (one session per
    dtype, rank, axis, attributes), native CumProd-26, fallback and reference."""
    rank = len(shape)
    axis = data.draw(st.integers(-rank, rank - 1), label="axis")
    lowered = lowered_scan("CumProd", dtype, rank, axis % rank, exclusive, reverse)
    _check_scan(
        "CumProd",
        dtype,
        shape,
        axis,
        exclusive,
        reverse,
        seed,
        specials,
        lowered,
        "cumprod",
    )
    COUNTS["cumprod_dynamic"] += 1


@cases("cumprod_static")
@given(
    dtype=st.sampled_from(SCAN_DTYPES["CumProd"]),
    entry=st.sampled_from(CUMPROD_POOL),
    exclusive=st.integers(0, 1),
    reverse=st.integers(0, 1),
    seed=st.integers(0, 2**32 - 1),
    specials=st.booleans(),
    source=st.sampled_from(["domain", "onnx26"]),
)
def test_cumprod_static_pool(dtype, entry, exclusive, reverse, seed, specials, source):
    """CumProd with static shapes (the blocked scan), shapes from CUMPROD_POOL; the model is
    either DOMAIN::CumProd at opset 17 or ONNX CumProd-26 (which convert steps down to 21)."""
    shape, axis = entry
    lowered = lowered_scan(
        "CumProd",
        dtype,
        len(shape),
        axis,
        exclusive,
        reverse,
        shape=shape,
        source=source,
    )
    _check_scan(
        "CumProd",
        dtype,
        shape,
        axis,
        exclusive,
        reverse,
        seed,
        specials,
        lowered,
        "cumprod",
    )
    COUNTS["cumprod_static"] += 1


def _scatter_dtypes(reduction):
    return [
        d
        for d in SCATTER_DTYPES
        if not (d == "float16" and reduction in ("add", "mul"))
    ]


@st.composite
def scatter_kind(draw):
    reduction = draw(st.sampled_from(SCATTER_REDUCTIONS))
    dtype = draw(st.sampled_from(_scatter_dtypes(reduction)))
    return dtype, reduction


PATTERNS = ["uniform", "one", "few", "negative", "edges"]


def _check_scatter(
    dtype,
    reduction,
    dshape,
    ishape,
    axis,
    idx_dtype,
    seed,
    pattern,
    specials,
    lowered,
    signed_zeros=True,
):
    rank = len(dshape)
    data, indices, updates = scatter_values(
        dtype,
        reduction,
        dshape,
        ishape,
        axis % rank,
        seed,
        pattern,
        idx_dtype,
        specials,
    )
    note(
        f"ScatterElements {dtype} reduction={reduction} data={list(dshape)} indices={list(ishape)} "
        f"({idx_dtype}, {pattern}) axis={axis} seed={seed} specials={specials}"
    )
    feeds = {"data": data, "indices": indices, "updates": updates}
    ref = ops.scatter_elements(data, indices, updates, axis, reduction)
    native = native_scatter(dtype, idx_dtype, reduction, rank, axis).run(None, feeds)[0]
    _same(ref, native, "reference vs native ScatterElements")
    fb = fallback_scatter(dtype, idx_dtype, reduction, rank, axis).run(None, feeds)[0]
    _same(fb, native, "fallback vs native ScatterElements")
    if lowered is None:
        return
    low = lowered.run(None, feeds)[0]
    if np.dtype(dtype).kind in "iu" or reduction in ("none", "max", "min"):
        _same(
            low, native, f"lowered vs native ScatterElements {reduction}", signed_zeros
        )
    else:
        bound = scatter_bound(data, indices, updates, axis, reduction, dtype, native)
        _close(low, native, bound, f"lowered vs native ScatterElements {reduction}")


@cases("scatter_four")
@example(
    kind=("float32", "add"),
    entry=((21, 254), (155, 12), -2),
    seed=11407,
    pattern="one",
    specials=False,
)
@given(
    kind=scatter_kind(),
    entry=st.sampled_from(SCATTER_POOL),
    seed=st.integers(0, 2**32 - 1),
    pattern=st.sampled_from(PATTERNS),
    specials=st.booleans(),
)
def test_scatter_four_paths(kind, entry, seed, pattern, specials):
    """ScatterElements-18, every reduction: native == fallback == reference bit-exact, the
    lowered graph (static shapes: SCATTER_POOL) exact for none/max/min and integers, within
    the documented bounds for float add/mul. Index dtype alternates with the pool entry."""
    dtype, reduction = kind
    dshape, ishape, axis = entry
    idx_dtype = (
        "int64"
        if entry in SCATTER_POOL and SCATTER_POOL.index(entry) % 2 == 0
        else "int32"
    )
    if specials and reduction in ("max", "min", "none"):
        specials = False  # NaN / -0.0 here: test_lowered_scatter_nan_duplicates, test_lowered_scatter_negative_zero
    # empty indices: the lowering emits an invalid graph (test_lowered_scatter_empty_indices)
    lowered = (
        lowered_scatter(dtype, idx_dtype, reduction, dshape, ishape, axis)
        if 0 not in ishape
        else None
    )
    _check_scatter(
        dtype,
        reduction,
        dshape,
        ishape,
        axis,
        idx_dtype,
        seed,
        pattern,
        specials,
        lowered,
    )
    COUNTS["scatter_four"] += 1


@st.composite
def scatter_shapes(draw):
    dshape = draw(shapes())
    rank = len(dshape)
    axis = draw(st.integers(-rank, rank - 1), label="axis")
    a = axis % rank
    ishape = [draw(st.integers(0, d)) for d in dshape]
    if dshape[a] == 0:
        ishape[a] = 0
    else:
        rest = int(np.prod([d for j, d in enumerate(ishape) if j != a and d]))
        ishape[a] = draw(st.integers(0, min(MAX_AXIS, MAX_ELEMENTS // max(rest, 1))))
    return dshape, tuple(ishape), axis


@cases("scatter_three")
@example(
    kind=("float16", "max"),
    shp=((22, 194), (14, 109), 0),
    seed=1,
    pattern="uniform",
    specials=True,
)
@given(
    kind=scatter_kind(),
    shp=scatter_shapes(),
    seed=st.integers(0, 2**32 - 1),
    pattern=st.sampled_from(PATTERNS),
    specials=st.booleans(),
)
def test_scatter_native_fallback_reference(kind, shp, seed, pattern, specials):
    """ScatterElements with fully random shapes on the three dynamic-shape paths, NaN and
    ±inf included for every reduction (the sequential max/min NaN rule)."""
    dtype, reduction = kind
    dshape, ishape, axis = shp
    idx_dtype = "int32" if seed % 2 else "int64"
    _check_scatter(
        dtype,
        reduction,
        dshape,
        ishape,
        axis % len(dshape),
        idx_dtype,
        seed,
        pattern,
        specials,
        None,
    )
    COUNTS["scatter_three"] += 1


@pytest.mark.parametrize(
    "dshape,ishape,axis", [((6, 1, 3), (254, 1, 0), -3), ((5,), (0,), 0)]
)
def test_lowered_scatter_empty_indices(dshape, ishape, axis):
    data = np.arange(np.prod(dshape), dtype=np.float32).reshape(dshape)
    feeds = {
        "data": data,
        "indices": np.zeros(ishape, np.int64),
        "updates": np.zeros(ishape, np.float32),
    }
    sess = lowered_scatter("float32", "int64", "add", dshape, ishape, axis)
    _same(sess.run(None, feeds)[0], data, "lowered scatter with no updates")


@pytest.mark.parametrize("reduction", ["max", "min"])
def test_lowered_scatter_nan_duplicates(reduction):
    data = np.array([1.0, 1.0], np.float32)
    feeds = {
        "data": data,
        "indices": np.array([0, 0], np.int64),
        "updates": np.array([np.nan, 2.0], np.float32),
    }
    native = native_scatter("float32", "int64", reduction, 1, 0).run(None, feeds)[0]
    _same(native, np.array([2.0, 1.0], np.float32), "native (sequential NaN rule)")
    low = lowered_scatter("float32", "int64", reduction, (2,), (2,), 0).run(
        None, feeds
    )[0]
    _same(
        low, native, f"lowered vs native ScatterElements {reduction} with a NaN update"
    )


def test_lowered_scatter_negative_zero():
    feeds = {
        "data": np.ones(3, np.float32),
        "indices": np.array([1], np.int64),
        "updates": np.array([-0.0], np.float32),
    }
    native = native_scatter("float32", "int64", "none", 1, 0).run(None, feeds)[0]
    low = lowered_scatter("float32", "int64", "none", (3,), (1,), 0).run(None, feeds)[0]
    _same(low, native, "lowered vs native ScatterElements none, update -0.0")
