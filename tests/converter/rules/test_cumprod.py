"""CumProd lowering (converter/rules/cumprod.py) against numpy and ONNX Runtime's native CumProd-26.

Floats: |lowered - reference| <= 2·(k+1)·u·|exact prefix| per output (k = elements in the prefix,
u = unit roundoff), i.e. rtol = 2·n·u: any association of k multiplications has relative error
≤ γ_k (see docs/convert.md), both the reference and the lowering. Integers: bit-exact.
"""

from __future__ import annotations

import re

import numpy as np
import onnx
import pytest

from ort_dml_ops import DOMAIN
from ort_dml_ops.conversion import convert
from ort_dml_ops.converter.rules import cumprod_masked
from ort_dml_ops.converter.rules.blockscan import block_size

from ._util import op_types, run_cpu, single_op


def ref_cumprod(x, axis, exclusive=0, reverse=0):
    x = np.moveaxis(np.asarray(x), axis, -1)
    if reverse:
        x = x[..., ::-1]
    y = np.cumprod(x, axis=-1, dtype=x.dtype)
    if exclusive:
        y = np.concatenate([np.ones_like(y[..., :1]), y[..., :-1]], axis=-1)
    if reverse:
        y = y[..., ::-1]
    return np.moveaxis(y, -1, axis)


def cumprod_model(shape, axis, exclusive, reverse, dtype=np.float32, onnx26=False):
    """A one-node CumProd (the project's domain, or ONNX CumProd-26), its axis a constant."""
    return single_op(
        "CumProd",
        [("x", dtype, shape)],
        {"exclusive": exclusive, "reverse": reverse},
        opset=26 if onnx26 else 17,
        domain="" if onnx26 else DOMAIN,
        inits={"axis": np.array(axis, np.int64)},
    )


def lowered(shape, axis, exclusive, reverse, dtype=np.float32, onnx26=False):
    m = cumprod_model(shape, axis, exclusive, reverse, dtype, onnx26)
    r = convert(m, "dml", strategy="lower")
    assert ("", "CumProd") not in op_types(r.model) and (
        DOMAIN,
        "CumProd",
    ) not in op_types(r.model)
    assert not {t for _, t in op_types(r.model)} & {"Exp", "Log"}
    assert r.report.nodes[0].action == "lowered"
    return r


def sample(shape, dtype, rng):
    shape = [d if isinstance(d, int) else 5 for d in shape]
    if np.issubdtype(dtype, np.integer):
        lo = 0 if np.issubdtype(dtype, np.unsignedinteger) else -3
        return rng.integers(lo, 4, shape).astype(
            dtype
        )  # overflow wraps: must still be exact
    return rng.uniform(0.5, 1.5, shape).astype(dtype) * rng.choice(
        [-1, 1], shape
    ).astype(dtype)


SHAPES = [  # (shape, axis): one chain; blocks near √n (inner size >= 16: divisible / padded);
    # radix levels (inner size < 16: divisible by 4, by another small divisor, padded, several
    # levels); symbolic dims (outer, inner, the axis itself); empty and length-1 axes
    ([3, 5], 1),
    ([4, 7], 0),
    ([40, 16], 0),
    ([2, 37, 20], -2),
    ([2, 40, "K"], 1),
    ([100], 0),
    ([3, 64], -1),
    ([2, 40, 3], 1),
    ([3, 35], 1),
    ([2, 37, 3], 1),
    ([5, 1009], 1),
    ([1000], 0),
    ([1, 1, 3, 4], 3),
    (["N", 50, 3], 1),
    ([2, "L"], 1),
    (["B", 33], -1),
    ([6, 1], 1),
    ([0, 4], 1),
]


@pytest.mark.parametrize("shape,axis", SHAPES)
@pytest.mark.parametrize("exclusive", [0, 1])
@pytest.mark.parametrize("reverse", [0, 1])
def test_float32_against_numpy(shape, axis, exclusive, reverse):
    rng = np.random.default_rng(
        abs(hash((str(shape), axis, exclusive, reverse))) % 2**32
    )
    r = lowered(shape, axis, exclusive, reverse)
    x = sample(shape, np.float32, rng)
    (y,) = run_cpu(r.model, {"x": x})
    want = ref_cumprod(x.astype(np.float64), axis, exclusive, reverse)
    n = x.shape[axis]
    u = np.finfo(np.float32).eps / 2
    np.testing.assert_allclose(y, want, rtol=2 * (n + 1) * u, atol=0)


INT_TYPES = [np.int32, np.int64, np.uint32, np.uint64]


@pytest.mark.parametrize("dtype", INT_TYPES + [np.float64])
@pytest.mark.parametrize("exclusive,reverse", [(0, 0), (1, 1), (1, 0)])
@pytest.mark.parametrize("shape,axis", [([3, 70], 1), ([45, 2], 0), ([2, "L"], -1)])
def test_against_ort_native_cumprod26(dtype, exclusive, reverse, shape, axis):
    """ORT's CPU CumProd-26 is the independent reference; integers (with wrap-around) bit-exact."""
    rng = np.random.default_rng(7)
    x = sample(shape, dtype, rng)
    native = single_op(
        "CumProd",
        [("x", dtype, shape)],
        {"exclusive": exclusive, "reverse": reverse},
        opset=26,
        inits={"axis": np.array(axis, np.int64)},
    )
    (want,) = run_cpu(native, {"x": x})
    r = lowered(shape, axis, exclusive, reverse, dtype, onnx26=True)
    (y,) = run_cpu(r.model, {"x": x})
    assert y.dtype == want.dtype
    if np.issubdtype(dtype, np.integer):
        np.testing.assert_array_equal(y, want)
    else:
        np.testing.assert_allclose(
            y, want, rtol=2 * (x.shape[axis] + 1) * np.finfo(dtype).eps, atol=0
        )


@pytest.mark.parametrize("dtype", [np.float16])
def test_float16(dtype):
    rng = np.random.default_rng(3)
    x = rng.uniform(0.9, 1.1, [4, 40]).astype(dtype)
    r = lowered([4, 40], 1, 0, 0, dtype)
    (y,) = run_cpu(r.model, {"x": x})
    want = ref_cumprod(x.astype(np.float64), 1)
    np.testing.assert_allclose(y.astype(np.float64), want, rtol=2 * 41 * 2.0**-11)


@pytest.mark.parametrize("shape,axis", [([3, 9], 1), ([2, 50], 1), ([2, "L"], 1)])
@pytest.mark.parametrize("exclusive,reverse", [(0, 0), (1, 1)])
def test_nan_inf_zero_propagate_like_reference(shape, axis, exclusive, reverse):
    rng = np.random.default_rng(11)
    x = sample(shape, np.float32, rng)
    flat = x.reshape(-1)
    flat[[1, 5, 7]] = [np.nan, np.inf, 0.0]
    flat[-3] = -np.inf
    native = single_op(
        "CumProd",
        [("x", np.float32, shape)],
        {"exclusive": exclusive, "reverse": reverse},
        opset=26,
        inits={"axis": np.array(axis, np.int64)},
    )
    (want,) = run_cpu(native, {"x": x})
    (y,) = run_cpu(lowered(shape, axis, exclusive, reverse).model, {"x": x})
    np.testing.assert_array_equal(np.isnan(y), np.isnan(want))
    np.testing.assert_array_equal(np.isinf(y), np.isinf(want))
    np.testing.assert_array_equal(
        np.signbit(y[np.isinf(y)]), np.signbit(want[np.isinf(want)])
    )
    finite = np.isfinite(want)
    np.testing.assert_allclose(y[finite], want[finite], rtol=1e-5)


def test_seed_examples():
    """DML_CUMULATIVE_PRODUCT_OPERATOR_DESC examples (seeds/001): {1,1,3,4} tensor."""
    x = np.array([[[[2, 1, 3, 5], [3, 8, 7, 3], [9, 6, 2, 4]]]], np.float32)
    cases = [
        (3, 0, 0, [[2, 2, 6, 30], [3, 24, 168, 504], [9, 54, 108, 432]]),
        (3, 1, 0, [[1, 2, 2, 6], [1, 3, 24, 168], [1, 9, 54, 108]]),
        (3, 0, 1, [[30, 15, 15, 5], [504, 168, 21, 3], [432, 48, 8, 4]]),
        (2, 0, 0, [[2, 1, 3, 5], [6, 8, 21, 15], [54, 48, 42, 60]]),
    ]
    for axis, exclusive, reverse, want in cases:
        (y,) = run_cpu(lowered([1, 1, 3, 4], axis, exclusive, reverse).model, {"x": x})
        np.testing.assert_array_equal(y[0, 0], np.array(want, np.float32))


@pytest.mark.parametrize(
    "shape,axis,plan",
    [
        ([8, 1024, 1024], 0, "single chain"),
        ([8, 1024, 1024], 1, "blocks of 32, then a chain of 32"),
        ([8, 1024, 1024], 2, "blocks of 4, 4, 4, 4, then a chain of 4"),
    ],
)
def test_report_names_the_scan_laid_out(shape, axis, plan):
    r = lowered(shape, axis, 0, 0)
    assert r.report.nodes[0].note == f"axis length {shape[axis]}: {plan}"


@pytest.mark.parametrize("exclusive", [0, 1])
@pytest.mark.parametrize("reverse", [0, 1])
def test_small_static_scan_is_the_doubling_one_with_its_reason(exclusive, reverse):
    """At 5 × 1009 float32 (20 KB) a kernel costs more than a pass: the doubling scan (10 steps
    of one Pad with negative pads and one Mul) against the blocked one's 42–43 kernels, as the
    report says; the same on WebGPU. Values: numpy's sequential product within the association
    bound of docs/convert.md."""
    shape, axis = [5, 1009], 1
    r = lowered(shape, axis, exclusive, reverse)
    note = r.report.nodes[0].note
    assert note.startswith("axis length 1009: doubling scan, 10 steps of Pad"), note
    # a reverse shift on DML: Pad and Slice (its Pad mishandles a negative start pad)
    shifts = 10 + exclusive
    blocked = re.search(
        r"blocked scan \(blocks of 4, 4, 4, 4, then a chain of 4\): (\d+) ", note
    )
    assert blocked and int(blocked.group(1)) > (2 + reverse) * 10 + exclusive, note
    ops = [n.op_type for n in r.model.graph.node]
    assert ops.count("Mul") == 10 and ops.count("Pad") == shifts
    assert ops.count("Slice") == (shifts if reverse else 0)
    assert not {"Split", "Concat"} & set(ops)
    m = cumprod_model(shape, axis, exclusive, reverse)
    # WebGPU's Pad takes a negative pad at either end: one Pad per shift both ways
    webgpu = convert(m, "webgpu", strategy="lower")
    assert "10 steps of Pad (negative pads)" in webgpu.report.nodes[0].note
    wops = [n.op_type for n in webgpu.model.graph.node]
    assert wops.count("Pad") == 10 + exclusive and "Slice" not in wops
    rng = np.random.default_rng(5)
    x = rng.uniform(0.99, 1.01, shape).astype(np.float32)
    (yw,) = run_cpu(webgpu.model, {"x": x})
    want = ref_cumprod(x.astype(np.float64), axis, exclusive, reverse)
    (y,) = run_cpu(r.model, {"x": x})
    n = shape[axis]
    for got in (y, yw):
        np.testing.assert_allclose(got, want, rtol=2 * (n + 1) * 2.0**-24, atol=0)


def test_block_size():
    for n in list(range(33, 300)) + [1024, 4096, 65537, 10007]:
        B, b = block_size(n)
        assert B * b >= n and B * b - n < b, n
        assert b <= 2 * int(np.sqrt(n)) + 2


def test_refuses_dynamic_axis_input():
    m = single_op(
        "CumProd", [("x", np.float32, [3, 4]), ("axis", np.int64, [])], domain=DOMAIN
    )
    r = convert(m, "dml", strategy="lower")
    node = r.report.nodes[0]
    assert node.action == "fallback" and "axis input is not a constant" in node.reason


def test_checker_and_shape_inference_pass():
    r = lowered(["N", 50, 3], 1, 1, 1)
    onnx.checker.check_model(r.model, full_check=True)
    inferred = onnx.shape_inference.infer_shapes(r.model, strict_mode=True)
    assert inferred.graph.output[0].name == "y"


@pytest.mark.parametrize(
    "layout", ["inner", "outer"]
)  # slices of 6 contiguous / strided columns
@pytest.mark.parametrize("exclusive,reverse", [(0, 0), (1, 0), (0, 1), (1, 1)])
def test_symbolic_axis_one_model_every_length(layout, exclusive, reverse):
    """ONE converted model, axis length only known at run time, run at lengths that cross every
    block boundary of the symbolic scan (16, 256, 4, 16, 64, 256): equal to the reference
    (int64 exactly: wrapping products are associative)."""
    shape, axis = (["L", 6], 0) if layout == "inner" else ([2, "L"], 1)
    m = cumprod_model(shape, axis, exclusive, reverse, np.int64)
    r = convert(m, "dml", strategy="lower")
    (node,) = r.report.nodes
    assert node.action == "lowered" and "symbolic axis length" in node.note
    rng = np.random.default_rng(exclusive * 2 + reverse)
    for n in (0, 1, 2, 3, 4, 5, 15, 16, 17, 63, 64, 65, 255, 256, 257, 1000, 4099):
        x = rng.integers(-3, 4, [n, 6] if layout == "inner" else [2, n]).astype(
            np.int64
        )
        (y,) = run_cpu(r.model, {"x": x})
        np.testing.assert_array_equal(y, ref_cumprod(x, axis, exclusive, reverse))


def test_symbolic_axis_node_count_is_fixed_and_far_below_31_full_steps():
    m = single_op(
        "CumProd",
        [("x", np.float32, [4, "L"])],
        opset=17,
        domain=DOMAIN,
        inits={"axis": np.array(1, np.int64)},
    )
    nodes = len(convert(m, "dml", strategy="lower").model.graph.node)
    m2 = single_op(
        "CumProd",
        [("x", np.float32, ["L", 40])],
        opset=17,
        domain=DOMAIN,
        inits={"axis": np.array(0, np.int64)},
    )
    nodes2 = len(convert(m2, "dml", strategy="lower").model.graph.node)
    assert nodes < 400 and nodes2 < 400, (nodes, nodes2)


@pytest.mark.parametrize("target", ["dml", "webgpu"])
@pytest.mark.parametrize("shape,axis", [(["A", "B"], 1), (["L", 3], 0), ([2, "L"], 1)])
@pytest.mark.parametrize("exclusive,reverse", [(0, 0), (1, 0), (0, 1), (1, 1)])
def test_float32_symbolic_scan_is_masked_blocks_exact_at_every_level(
    target, shape, axis, exclusive, reverse
):
    """A float32 product along a run-time axis: the masked blocks of masked_scan.py, 30 kernels
    on either target where the radix scan took 88–116 and the doubling one 62. ONE model, run
    at lengths around each level's reach (8, 8 · 64, 8 · 64², 8 · 64³ = 2^21) and at 0: with
    factors ±1 and adjacent (2, 0.5) pairs every product is exact and within [1/2, 2] in
    magnitude in either direction, so it must equal numpy's sequential one."""
    m = cumprod_model(shape, axis, exclusive, reverse)
    r = convert(m, target, strategy="lower")
    (node,) = r.report.nodes
    assert node.action == "lowered" and "masked products" in node.note
    from ort_dml_ops.bench.budget import count_kernels

    assert count_kernels(r.model, target).kernels == 30 == cumprod_masked.KERNELS
    rng = np.random.default_rng(exclusive * 2 + reverse)

    def factors(dims):
        x = rng.choice(np.array([1, -1], np.float32), dims)
        line = np.moveaxis(x, axis, -1)  # a view: pairs along the axis
        pairs = rng.random(line.shape[:-1] + (line.shape[-1] // 2,)) < 0.1
        line[..., 0 : 2 * pairs.shape[-1] : 2][pairs] *= 2
        line[..., 1 : 2 * pairs.shape[-1] : 2][pairs] *= 0.5
        return x

    lengths = (0, 1, 7, 8, 9, 511, 512, 513, 32767, 32768, 32769)
    if shape == ["A", "B"] and target == "dml" and not exclusive and not reverse:
        lengths += (2**21 + 1,)  # the last level past one item: once, it is 8 MB a run
    for n in lengths:
        dims = [
            n if i == axis else d if isinstance(d, int) else 2
            for i, d in enumerate(shape)
        ]
        x = factors(dims)
        (y,) = run_cpu(r.model, {"x": x})
        np.testing.assert_array_equal(y, ref_cumprod(x, axis, exclusive, reverse))
    for dims in (
        [0, 5],
        [0, 0],
        [3, 0],
        [1, 1],
    ):  # every dim at run time, zeros included
        if shape != ["A", "B"]:
            break
        x = factors(dims)
        (y,) = run_cpu(r.model, {"x": x})
        assert y.shape == x.shape
        np.testing.assert_array_equal(y, ref_cumprod(x, axis, exclusive, reverse))


def test_tune_measures_the_masked_blocks_against_the_scan():
    """The masked blocks are a rule of their own, tried first: `tune` lists both options for
    a float32 CumProd along a run-time axis and times them on the device; other types, and
    static axes, keep cumprod.py's scans alone."""
    from ort_dml_ops.tuning.candidates import options

    names = [o.name for o in options(cumprod_model(["A", "B"], 1, 0, 0), "dml")]
    assert names == ["lowered:cumprod-masked-blocks", "lowered:cumprod-scan"]
    for shape, dtype in ((["A", "B"], np.int64), ([3, 40], np.float32)):
        names = [o.name for o in options(cumprod_model(shape, 1, 0, 0, dtype), "dml")]
        assert names == ["lowered:cumprod-scan"], (shape, dtype)


@pytest.mark.parametrize("exclusive,reverse", [(0, 0), (1, 0), (0, 1), (1, 1)])
def test_float32_masked_scan_keeps_nan_inf_and_signed_zeros_as_ort(exclusive, reverse):
    """The masked-off items are 1.0 and the values sit in Where's false branch: NaN, ±inf,
    0 · inf and the sign of every zero (−0.0 included, which ORT's CPU Where drops from its
    true branch) come out as ORT's own CumProd-26 gives them: every number bit for bit, NaN
    where it has NaN."""
    x = np.array(
        [
            [-0.0, 2, np.inf, 0, 3, np.nan, 1, -1, 0.5],
            [1, -0.0, -0.0, 5, -2, 0, np.inf, -np.inf, 4],
            [-1, -0.0, 2, -np.inf, 0.25, -3, 1, -0.0, 8],
        ],
        np.float32,
    )
    native = single_op(
        "CumProd",
        [("x", np.float32, ["A", "B"])],
        {"exclusive": exclusive, "reverse": reverse},
        opset=26,
        inits={"axis": np.array(1, np.int64)},
    )
    (want,) = run_cpu(native, {"x": x})
    (y,) = run_cpu(lowered(["A", "B"], 1, exclusive, reverse).model, {"x": x})
    np.testing.assert_array_equal(np.isnan(y), np.isnan(want))
    # IEEE 754 leaves a NaN's sign to the hardware (x86 makes 0 · inf a "negative" NaN)
    numbers = ~np.isnan(want)
    np.testing.assert_array_equal(
        y[numbers].view(np.uint32), want[numbers].view(np.uint32)
    )


def _symbolic(shape, axis, dtype=np.float32):
    return single_op(
        "CumProd",
        [("x", dtype, shape)],
        opset=17,
        domain=DOMAIN,
        inits={"axis": np.array(axis, np.int64)},
    )


@pytest.mark.parametrize("target", ["dml", "webgpu"])
def test_symbolic_doubling_steps_share_one_host_computation(target):
    """Every dim symbolic (int64: float32 takes the masked blocks): 31 doubling steps on x,
    whose pads all come from one Min, one Mul and one Split on the host (`run_time_shifts`),
    not a width, a negation and a Concat per step: at most 12 nodes besides the steps' Pads and
    ops (and their Slices where DML cannot crop), where there were 94."""
    for exclusive, reverse in [(0, 0), (1, 1)]:
        m = cumprod_model(["A", "B"], 1, exclusive, reverse, np.int64)
        converted = convert(m, target, strategy="lower").model
        graph = converted.graph
        steps = sum(n.op_type in ("Pad", "Mul", "Slice") for n in graph.node)
        assert len(graph.node) - steps <= 12, [n.op_type for n in graph.node]
        rng = np.random.default_rng(0)
        for shape in ([3, 70], [0, 4], [2, 0], [1, 1]):
            x = rng.integers(-2, 3, shape).astype(np.int64)
            (y,) = run_cpu(converted, {"x": x})
            np.testing.assert_array_equal(y, ref_cumprod(x, 1, exclusive, reverse))


@pytest.mark.parametrize("target", ["dml", "webgpu"])
def test_symbolic_axis_views_need_no_shape_computation(target):
    """Only the axis symbolic, the other dims static (int64: float32 takes the masked blocks,
    whose Where is its mask, not a mapping of zeros): every view of the blocked scan is a
    constant target with −1 in the axis's place (`sizes.view`), so no Equal / Where mapping a
    run-time 0 is left (18 pairs and their Concats in ddpm_alphas_cumprod's scan); and no
    initializer goes unread (the sizes a view no longer needs are dropped with their
    constants). Exact at every length, 0 included."""
    for shape, axis in (([1, "L"], 1), ([2, 3, "L"], 2), (["L", 6], 0)):
        graph = convert(
            _symbolic(shape, axis, np.int64), target, strategy="lower"
        ).model.graph
        assert not {n.op_type for n in graph.node} & {"Equal", "Where"}
        read = {i for n in graph.node for i in n.input}
        assert [i.name for i in graph.initializer if i.name not in read] == []
