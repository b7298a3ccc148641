"""The WebGPU-clean scatter lowering on ONNX Runtime's WebGPU plugin EP, for real (issue 19 item 2).

Every node of the lowered subgraph that touches data runs on WebGPU (ORT's assignment record);
only the index guard's scalar nodes, which read the int64 indices (no WebGPU kernel reduces or
compares int64), stay on the CPU EP. Copies are counted from ORT's profile of one run: the one
Memcpy left is the int64 indices' upload, which the graph input needs anyway (the native kernel's
session makes the same transfer as a feed copy); with the guard off there is none. Values are
compared with ORT's CPU kernel in the same test.
"""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest

from ort_dml_ops.bench import webgpu as W
from ort_dml_ops.conversion import convert

from ..converter.rules._util import run_cpu
from ..support import np_scatter_elements
from .conftest import placement, webgpu_session

pytestmark = pytest.mark.webgpu

#: the guard: min / max of the int64 indices, compared on the CPU (scatter_guard.in_range, host=True)
GUARD_OPS = {"ReduceMin", "ReduceMax", "Less", "Equal", "Or", "Where"}


def _on_plugin_and_ort_cpu(low, native, feeds):
    """(the plugin's session of `low`, its output, ORT's CPU kernel's output of `native`) — on
    one thread: ORT's CPU ScatterND copies slices on its thread pool, so repeated indices
    without a reduction have a row-major last write only there (docs/webgpu.md, known limits)."""
    s = webgpu_session(low)
    (want,) = run_cpu(native, feeds)
    return s, s.run(None, feeds)[0], want


def _cpu_ops(model, session) -> set:
    """The op types of `model`'s nodes that ORT's assignment record puts on the CPU EP."""
    ops = {n.name: n.op_type for n in model.graph.node}
    return {
        ops[name]
        for name, ep in placement(session).items()
        if ep == "CPUExecutionProvider" and name in ops
    }


def _scatter(op, elem, dshape, ishape, ushape, name, opset=18, **attrs):
    """One `op` node (`opset`) writing `elem` updates into `elem` data at int64 indices."""
    import onnx
    from onnx import helper

    return helper.make_model(
        helper.make_graph(
            [helper.make_node(op, ["data", "indices", "updates"], ["y"], **attrs)],
            name,
            [
                helper.make_tensor_value_info("data", elem, dshape),
                helper.make_tensor_value_info(
                    "indices", onnx.TensorProto.INT64, ishape
                ),
                helper.make_tensor_value_info("updates", elem, ushape),
            ],
            [helper.make_tensor_value_info("y", elem, dshape)],
        ),
        opset_imports=[helper.make_opsetid("", opset)],
        ir_version=9,
    )


def _ort_cpu_in_float32(native, feeds):
    """ORT's CPU kernel on a float16 scatter's values widened to float32 (its float16 ScatterND
    takes no reduction), narrowed back to the data's type: exact where every result is a value
    of that type (float32 data: the kernel itself)."""
    import onnx

    wide = onnx.ModelProto()
    wide.CopyFrom(native)
    for v in (wide.graph.input[0], wide.graph.input[2], wide.graph.output[0]):
        v.type.tensor_type.elem_type = onnx.TensorProto.FLOAT
    widened = {
        k: v.astype(np.float32) if v.dtype == np.float16 else v
        for k, v in feeds.items()
    }
    # on one thread: ORT's CPU ScatterND reduces on its pool without atomics
    # (tools/repro_ort_cpu_scatternd_race.py)
    (got,) = run_cpu(wide, widened)
    return got.astype(feeds["data"].dtype)


def _model(reduction, axis, shape=(64, 48)):
    from ort_dml_ops.bench import models

    native = W.sandwich(models.scatter_model(reduction, "float32", list(shape), axis))
    feeds = models.feeds_for("ScatterElements", reduction, "float32", list(shape), axis)
    return native, feeds


@pytest.mark.parametrize("reduction", ["none", "add", "max", "min"])
@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("check", [True, False])
def test_clean_scatter_runs_on_webgpu_without_copies(
    webgpu_lane, reduction, axis, check
):
    native, feeds = _model(reduction, axis)
    low = convert(
        native, "webgpu", strategy="lower", check_indices=check, with_inspect=False
    ).model
    s = webgpu_session(low)
    got = s.run(None, feeds)[0]
    want = ort.InferenceSession(
        native.SerializeToString(), providers=["CPUExecutionProvider"]
    ).run(None, feeds)[0]
    if reduction == "add":
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    else:
        np.testing.assert_array_equal(got, want)
    on_cpu = _cpu_ops(low, s)
    assert on_cpu <= (GUARD_OPS if check else set()), on_cpu
    copies, _ = W._copies(low, False, feeds)
    assert copies == (1 if check else 0)


def _symbolic(model):
    """Every dim of the graph's inputs and outputs a name (the shapes torch.onnx exports)."""
    import onnx

    m = onnx.ModelProto()
    m.CopyFrom(model)
    del m.graph.value_info[:]
    for v in list(m.graph.input) + list(m.graph.output):
        for k, d in enumerate(v.type.tensor_type.shape.dim):
            d.Clear()
            d.dim_param = f"{v.name}_d{k}"
    return m


@pytest.mark.parametrize("reduction", ["none", "add", "max"])
def test_symbolic_clean_scatter_copies_are_what_inspect_predicts(
    webgpu_lane, reduction
):
    """With every dim symbolic the clean variant computes its sizes on the CPU (Shape, int64
    arithmetic, int32 / float Casts) and hands them to Range, whose WebGPU kernel reads its
    three scalars in CPU memory (recorded as cpu_inputs, tools/webgpu_lane/cases.py): ORT makes
    one copy per run — the indices' upload, as with static shapes — and `inspect` predicts that
    same count, not a copy per Range scalar."""
    from ort_dml_ops import inspect

    native, feeds = _model(reduction, 1)
    sym = _symbolic(native)
    low = convert(sym, "webgpu", strategy="lower", with_inspect=False).model
    s = webgpu_session(low)
    got = s.run(None, feeds)[0]
    want = ort.InferenceSession(
        native.SerializeToString(), providers=["CPUExecutionProvider"]
    ).run(None, feeds)[0]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    copies, _ = W._copies(low, False, feeds)
    assert copies == 1
    assert len(inspect(low, "webgpu").copy_nodes) == copies


@pytest.mark.parametrize("reduction", ["add", "mul"])
@pytest.mark.parametrize("symbolic", [False, True])
@pytest.mark.parametrize(
    "axis,dshape,ishape",
    [
        (1, (4, 6), (4, 30)),
        (0, (5, 3), (3000, 3)),
        (1, (60, 7), (60, 300)),
        (None, (9, 40), (3000, 1)),  # ScatterND of row slices: a row per slice element
        # run-time sizes: a last level of three items (one Slice cuts the products' masks)
        (0, (600, 1), (70_000, 1)),
    ],
)
def test_float_block_folds_on_webgpu_equal_ort_kernel(
    webgpu_lane, axis, dshape, ishape, symbolic, reduction
):
    """The block folds (blocksum.py) on the plugin: masks, Where, ReduceSum / ReduceProd and
    the carries run on WebGPU, static levels ending on row ends (blocksum.plan: 9,000 updates
    in rows of 3,000, 18,000 in rows of 300) and the three run-time levels; axis 0 sorts the
    rows of a moved axis (keys grouped, not ascending), a ScatterND of slices a row per slice
    element (scatter._slice_rows). Small integers sum, and ±1, ±2, ½ multiply, exactly in
    any order, so the values are ORT's CPU kernel's bit for bit — −0.0, inf − inf, 0 · inf and
    NaN included (a NaN is compared as a NaN: its payload is the hardware's)."""
    import onnx

    rng = np.random.default_rng(7)
    op = "ScatterElements" if axis is not None else "ScatterND"
    # ScatterND: an update is a slice of the data past its coordinates
    ushape = ishape if axis is not None else ishape[:-1] + dshape[ishape[-1] :]
    data = rng.integers(-3, 4, dshape).astype(np.float32)
    data[rng.random(dshape) < 0.3] = -0.0
    upd = rng.integers(-3, 4, ushape).astype(np.float32)
    upd[rng.random(ushape) < 0.3] = -0.0
    upd[rng.random(ushape) < 0.002] = np.inf
    upd[rng.random(ushape) < 0.002] = -np.inf
    upd[rng.random(ushape) < 0.001] = np.nan
    dim = dshape[0 if axis is None else axis]
    idx = rng.integers(-dim, dim, ishape).astype(np.int64)
    if reduction == "mul":
        upd = rng.choice(np.array([1, -1, 2, -1, 0.5, 1], np.float32), ushape)
        upd[rng.random(ushape) < 0.01] = -0.0
        upd[rng.random(ushape) < 0.002] = np.inf
        upd[rng.random(ushape) < 0.001] = np.nan
    if axis is not None:
        idx[..., 0], upd[..., 0] = 1, -0.0  # position 1 of each row / column: −0.0 only
    attrs = {} if axis is None else {"axis": axis}
    native = _scatter(
        op,
        onnx.TensorProto.FLOAT,
        dshape,
        ishape,
        ushape,
        "scatter_add",
        reduction=reduction,
        **attrs,
    )
    model = _symbolic(native) if symbolic else native
    if symbolic and axis is None:  # ScatterND's coordinates per update: static
        model.graph.input[1].type.tensor_type.shape.dim[-1].dim_value = ishape[-1]
    low = convert(model, "webgpu", strategy="lower", with_inspect=False).model
    feeds = {"data": data, "indices": idx, "updates": upd}
    s, got, want = _on_plugin_and_ort_cpu(low, native, feeds)
    assert np.array_equal(np.isnan(got), np.isnan(want))
    keep = ~np.isnan(want)
    np.testing.assert_array_equal(got[keep].view(np.uint8), want[keep].view(np.uint8))
    copies, _ = W._copies(low, False, feeds)
    assert copies == 1  # the indices' upload, as with the native kernel
    if (
        not symbolic
    ):  # (run-time sizes: int64 shape arithmetic on the CPU, no data there)
        on_cpu = _cpu_ops(low, s)
        assert on_cpu <= GUARD_OPS, on_cpu


@pytest.mark.parametrize("reduction", ["add", "mul"])
def test_float16_scatter_nd_at_run_time_sizes_copies_only_the_indices(
    webgpu_lane, reduction
):
    """A float16 ScatterND folded in float32 at run-time sizes: its sort's order (int64) feeds
    the gather of the updates as it is — a Reshape of it would run on the CPU (the plugin's
    Reshape takes no int64) and cost two copies a run. One copy (the indices' upload), what
    `inspect` predicts; values ORT's CPU kernel's on the same values in float32 (its float16
    ScatterND takes no reduction), exact: small integers sum and ±1, ½, 2 multiply exactly in
    either type."""
    import onnx

    from ort_dml_ops import inspect

    rng = np.random.default_rng(5)
    dshape, ishape = (7, 5), (3000, 1)
    ushape = ishape[:-1] + dshape[1:]
    data = rng.integers(-3, 4, dshape).astype(np.float16)
    if reduction == "add":
        upd = rng.integers(-3, 4, ushape).astype(np.float16)
    else:  # runs of ~430: mostly ±1, so that no partial product leaves float16's range
        upd = rng.choice(
            np.array([1, -1, 1, -1, 2, 0.5], np.float16),
            ushape,
            p=[0.3, 0.3, 0.15, 0.15, 0.05, 0.05],
        )
    idx = rng.integers(-7, 7, ishape).astype(np.int64)
    native = _scatter(
        "ScatterND",
        onnx.TensorProto.FLOAT16,
        dshape,
        ishape,
        ushape,
        "scatter_nd_f16",
        reduction=reduction,
    )
    model = _symbolic(native)
    model.graph.input[1].type.tensor_type.shape.dim[-1].dim_value = 1
    low = convert(model, "webgpu", strategy="lower", with_inspect=False).model
    feeds = {"data": data, "indices": idx, "updates": upd}
    got = webgpu_session(low).run(None, feeds)[0]
    np.testing.assert_array_equal(got, _ort_cpu_in_float32(native, feeds))
    copies, _ = W._copies(low, False, feeds)
    assert copies == 1  # the indices' upload, as with the native kernel
    assert len(inspect(low, "webgpu").copy_nodes) == copies


#: writes without reduction with thousands of updates a position: (op, data, indices, axis)
WRITES = [
    ("ScatterElements", (5, 3), (4000, 3), 0),  # K ≫ M: runs of ~800 writers
    ("ScatterElements", (6, 40), (6, 900), 1),
    ("ScatterND", (7, 5), (3000, 1), None),
]


def _write_feeds(seed, dshape, ishape, axis, dtype):
    """(the updates' shape, data, indices, updates) for a write without reduction: integers
    over the whole range of the type (every bit pattern copied), floats with −0.0 and NaN;
    `axis` None: a ScatterND, whose updates are slices of the data past their coordinates."""
    ushape = ishape if axis is not None else ishape[:-1] + dshape[ishape[-1] :]
    rng = np.random.default_rng(seed)
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        data = rng.integers(info.min, info.max, dshape, dtype=dtype, endpoint=True)
        upd = rng.integers(info.min, info.max, ushape, dtype=dtype, endpoint=True)
    else:
        data = rng.integers(-3, 4, dshape).astype(dtype)
        upd = rng.standard_normal(ushape).astype(dtype)
        upd[rng.random(ushape) < 0.2] = -0.0
        upd[rng.random(ushape) < 0.05] = np.nan
    dim = dshape[0] if axis is None else dshape[axis]
    idx = rng.integers(-dim, max(dim, 1), ishape).astype(np.int64)
    return ushape, data, idx, upd


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32, np.uint32])
@pytest.mark.parametrize("symbolic", [False, True])
@pytest.mark.parametrize(
    "op,dshape,ishape,axis",
    [
        *WRITES,
        ("ScatterElements", (0, 3), (0, 3), 0),  # no data, no update
        ("ScatterElements", (6, 4), (0, 4), 0),  # no update
    ],
)
def test_last_writer_without_reduction_equals_ort_kernel(
    webgpu_lane, op, dshape, ishape, axis, symbolic, dtype
):
    """Reduction none from opset 18 (scatter_clean.last_writes): the plugin's int32 max
    scatter picks each position's last update, whatever order its threads run in, and every
    writer of a position writes that one's bits. ORT's CPU kernel writes in row-major order,
    so the last of thousands of duplicates wins: equal bit for bit (−0.0 and NaN payloads are
    copied, never computed), every data node on WebGPU, one copy (the indices' upload).
    int32 and uint32 data (the plugin's ScatterElements and Gather take them) take the same
    graph, where the DML-shaped one put TopK, MaxUnpool and int Slices on the CPU EP."""
    import onnx

    ushape, data, idx, upd = _write_feeds(11, dshape, ishape, axis, dtype)
    t = onnx.helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    attrs = {} if axis is None else {"axis": axis}
    native = _scatter(op, t, dshape, ishape, ushape, "scatter_none", **attrs)
    model = _symbolic(native) if symbolic else native
    if symbolic and axis is None:  # ScatterND's coordinates per update: static
        model.graph.input[1].type.tensor_type.shape.dim[-1].dim_value = ishape[-1]
    low = convert(model, "webgpu", strategy="lower", with_inspect=False).model
    kinds = [
        next((a.s for a in n.attribute if a.name == "reduction"), b"none")
        for n in low.graph.node
        if n.op_type == "ScatterElements"
    ]
    # the winners, the write: no sort (static shapes without an update: the data itself)
    assert sorted(kinds) == ([b"max", b"none"] if symbolic or upd.size else [])
    assert "TopK" not in {n.op_type for n in low.graph.node}
    feeds = {"data": data, "indices": idx, "updates": upd}
    s, got, want = _on_plugin_and_ort_cpu(low, native, feeds)
    assert got.shape == want.shape
    np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))
    if data.size and upd.size:
        copies, _ = W._copies(low, False, feeds)
        assert copies == 1  # the indices' upload, as with the native kernel
    if not symbolic:
        on_cpu = _cpu_ops(low, s)
        assert on_cpu <= GUARD_OPS, on_cpu


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32, np.uint32])
@pytest.mark.parametrize("symbolic", [False, True])
@pytest.mark.parametrize("op,dshape,ishape,axis", WRITES)
def test_sorted_write_without_reduction_before_opset_18_equals_ort_kernel(
    webgpu_lane, op, dshape, ishape, axis, symbolic, dtype
):
    """Reduction none before opset 18, which has no reduction max for the winners: the
    positions are sorted (float32 keys, the plugin's TopK), each sorted update's target — its
    position at a run's end, else the dummy — goes back to the update by one ScatterElements,
    and the updates are written unsorted, so int32 and uint32 data need no GatherElements (the
    plugin's takes floats only). Bit for bit ORT's CPU kernel, every data node on WebGPU, one
    copy (the indices' upload) where the MaxUnpool graph int32 data took before copied 6 times
    at run-time sizes."""
    import onnx

    ushape, data, idx, upd = _write_feeds(17, dshape, ishape, axis, dtype)
    t = onnx.helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    attrs = {} if axis is None else {"axis": axis}
    native = _scatter(op, t, dshape, ishape, ushape, "sorted_none", opset=17, **attrs)
    model = _symbolic(native) if symbolic else native
    if symbolic and axis is None:  # ScatterND's coordinates per update: static
        model.graph.input[1].type.tensor_type.shape.dim[-1].dim_value = ishape[-1]
    low = convert(model, "webgpu", strategy="lower", with_inspect=False).model
    ops = {n.op_type for n in low.graph.node}
    assert "TopK" in ops and "MaxUnpool" not in ops
    feeds = {"data": data, "indices": idx, "updates": upd}
    s, got, want = _on_plugin_and_ort_cpu(low, native, feeds)
    assert got.shape == want.shape
    np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))
    copies, _ = W._copies(low, False, feeds)
    assert copies == 1  # the indices' upload, as with the native kernel
    if not symbolic:
        on_cpu = _cpu_ops(low, s)
        assert on_cpu <= GUARD_OPS, on_cpu


def _extreme_updates(rng, shape, dtype):
    """Updates that reach the ends of the type's range: ±max and ±inf beside ordinary values and
    NaN. ORT's WebGPU TopK pads each sorted row to a power of two with ∓max (index −1) and puts
    the padding first among equal keys (top_k.cc), so a key at or beyond the padding's value is
    where a row sorts wrong."""
    big = np.finfo(dtype).max
    upd = rng.integers(-3, 4, shape).astype(dtype)
    for value, share in ((big, 0.1), (-big, 0.1), (np.inf, 0.05), (-np.inf, 0.05)):
        upd[rng.random(shape) < share] = value
    upd[rng.random(shape) < 0.01] = np.nan
    return upd


@pytest.mark.parametrize("reduction", ["max", "min"])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("symbolic", [False, True])
@pytest.mark.parametrize(
    "op,axis,dshape,ishape",
    [
        ("ScatterElements", 0, (5, 3), (6, 3)),
        ("ScatterElements", 1, (4, 7), (4, 11)),
        ("ScatterElements", 0, (6, 5), (300, 5)),
        ("ScatterND", None, (7, 3), (13, 1)),
        # 3000 keys in one sort: the plugin's multi-pass TopK
        ("ScatterND", None, (50,), (3000, 1)),
    ],
)
def test_max_min_at_the_ends_of_the_range_equal_ort_kernel(
    webgpu_lane, op, axis, dshape, ishape, symbolic, dtype, reduction
):
    """A min of −max or −inf (a max of +max or +inf) sorts to the end where ORT's WebGPU TopK
    puts its padding; the lowering's value sort must still place every update (rows of 3, 11,
    300, 13 and 3000 keys: none a power of two; past 2048 keys the plugin sorts in global
    memory). Found by `tune` on scatter_reduce_amax's export, whose ScatterElements(min)
    writes finfo.min. Bit for bit against ORT's CPU kernel."""
    import onnx

    rng = np.random.default_rng(11)
    data = rng.integers(-3, 4, dshape).astype(dtype)
    data[rng.random(dshape) < 0.2] = np.finfo(dtype).max
    data[rng.random(dshape) < 0.2] = -np.finfo(dtype).max
    upd = _extreme_updates(
        rng, ishape if op == "ScatterElements" else ishape[:1] + dshape[1:], dtype
    )
    if op == "ScatterElements":
        idx = rng.integers(-dshape[axis], dshape[axis], ishape).astype(np.int64)
        attrs = {"axis": axis}
    else:
        idx = rng.integers(0, dshape[0], ishape).astype(np.int64)
        attrs = {}
    elem = onnx.helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    native = _scatter(
        op,
        elem,
        dshape,
        ishape,
        upd.shape,
        "scatter_extremes",
        reduction=reduction,
        **attrs,
    )
    model = _symbolic(native) if symbolic else native
    if symbolic and op == "ScatterND":
        # the coordinates per update stay static: a ScatterND is lowered only then
        model.graph.input[1].type.tensor_type.shape.dim[1].dim_value = 1
    low = convert(model, "webgpu", strategy="lower", with_inspect=False).model
    feeds = {"data": data, "indices": idx, "updates": upd}
    got = webgpu_session(low).run(None, feeds)[0]
    # a max or min is one of its operands: float16 → float32 → float16 is exact
    want = _ort_cpu_in_float32(native, feeds)
    assert np.array_equal(np.isnan(got), np.isnan(want))
    keep = ~np.isnan(want)
    np.testing.assert_array_equal(got[keep].view(np.uint8), want[keep].view(np.uint8))


def test_float16_scatter_nd_with_a_reduction_fails_on_the_plugin(webgpu_lane):
    """The rule behind `_webgpu_run_failure` (targets/target.py): the plugin takes a float16
    ScatterND with a reduction and its first run fails; float32 runs. convert therefore lowers
    it (tests/test_convert.py pins that and the refusal where it cannot)."""
    import onnx
    from onnx import helper

    def model(elem):
        return helper.make_model(
            helper.make_graph(
                [
                    helper.make_node(
                        "ScatterND", ["d", "i", "u"], ["y"], reduction="max"
                    )
                ],
                "nd",
                [
                    helper.make_tensor_value_info("d", elem, (7, 3)),
                    helper.make_tensor_value_info("i", onnx.TensorProto.INT64, (4, 1)),
                    helper.make_tensor_value_info("u", elem, (4, 3)),
                ],
                [helper.make_tensor_value_info("y", elem, (7, 3))],
            ),
            opset_imports=[helper.make_opsetid("", 18)],
            ir_version=9,
        )

    idx = np.array([[0], [2], [0], [6]], np.int64)
    for elem, dtype in (
        (onnx.TensorProto.FLOAT, np.float32),
        (onnx.TensorProto.FLOAT16, np.float16),
    ):
        s = webgpu_session(model(elem))
        assert set(placement(s).values()) == {"WebGpuExecutionProvider"}
        feeds = {"d": np.zeros((7, 3), dtype), "i": idx, "u": np.ones((4, 3), dtype)}
        if dtype == np.float32:
            assert s.run(None, feeds)[0].sum() == 9
        else:
            with pytest.raises(Exception, match="Reduction is not supported"):
                s.run(None, feeds)


def test_the_plugins_topk_puts_its_padding_before_keys_at_the_end_of_the_range(
    webgpu_lane,
):
    """Minimal repro of the plugin behaviour the max / min lowering pads around
    (`scatter_clean._padded_to_power_of_two`): ORT's WebGPU TopK pads a row of 3 keys to 4 with
    −max at index −1 (largest) and sorts the padding first among equal keys, so a TopK of all 3
    returns −1 for the key at −inf. ORT's CPU kernel returns [1, 2, 0]. When a plugin release
    fixes it this fails: the lowering's padding and inspect's note can go (docs/webgpu.md)."""
    from onnx import TensorProto as T
    from onnx import helper as h

    g = h.make_graph(
        [h.make_node("TopK", ["x", "k"], ["v", "i"], name="topk", largest=1)],
        "topk",
        [h.make_tensor_value_info("x", T.FLOAT, [1, 3])],
        [
            h.make_tensor_value_info("v", T.FLOAT, [1, 3]),
            h.make_tensor_value_info("i", T.INT64, [1, 3]),
        ],
        [h.make_tensor("k", T.INT64, [1], [3])],
    )
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)], ir_version=8)
    x = np.array([[-np.inf, 2.0, 1.0]], np.float32)
    s = webgpu_session(m)
    assert placement(s) == {"topk": "WebGpuExecutionProvider"}
    want = ort.InferenceSession(
        m.SerializeToString(), providers=["CPUExecutionProvider"]
    ).run(None, {"x": x})[1]
    np.testing.assert_array_equal(want, [[1, 2, 0]])
    np.testing.assert_array_equal(s.run(None, {"x": x})[1], [[1, 2, -1]])
    # and `inspect --target webgpu` tells the user so, on every TopK it places there
    from ort_dml_ops import inspect

    (node,) = inspect(m, "webgpu").nodes
    assert node.provider == "WebGpuExecutionProvider" and "index -1" in node.reason


@pytest.mark.parametrize("reduction", ["none", "add", "max"])
def test_clean_guard_refuses_indices_past_either_end_on_webgpu(webgpu_lane, reduction):
    """The clean variant's range check (scatter_guard.in_range, spelt with Or and Equal on the
    host): an index of dim or of −dim − 1 fails the run on the plugin, whose gathers check no
    bounds; the edges dim − 1 and −dim run, equal to ORT's CPU kernel."""
    native, feeds = _model(reduction, 1, shape=(8, 6))
    low = convert(native, target="webgpu", strategy="lower").model
    dim = feeds["data"].shape[1]
    session = webgpu_session(low)
    for bad in (dim, -dim - 1):
        idx = feeds["indices"].copy()
        idx[3, 2] = bad
        with pytest.raises(Exception, match="Reshape"):
            session.run(None, {**feeds, "indices": idx})
    idx = feeds["indices"].copy()
    idx[3, 2], idx[5, 4] = dim - 1, -dim
    _, got, want = _on_plugin_and_ort_cpu(low, native, {**feeds, "indices": idx})
    if reduction == "add":  # the block sums add in another order: a rounding apart
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    else:
        np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


@pytest.mark.parametrize("op", ["ScatterElements", "ScatterND"])
@pytest.mark.parametrize("dtype", [np.int32, np.uint32])
@pytest.mark.parametrize("reduction", ["add", "mul", "max", "min"])
def test_the_plugins_integer_reductions_are_exact_with_repeated_indices(
    webgpu_lane, op, dtype, reduction
):
    """What `scatter_exact_integer_reductions` (targets/__init__.py) rests on, and why even
    `--strategy lower` leaves these nodes to the plugin: its kernel reduces int32 / uint32
    exactly where indices repeat (25 updates to a position on average, values over the whole
    range so sums and products wrap), equal to numpy's sequential fold and to ORT's
    single-threaded CPU kernel, run after run. The converted model is the original node, on
    WebGPU."""
    import onnx

    elem = onnx.helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    n, rows = 300, 12
    if op == "ScatterND":
        ishape, attrs = [n, 1], {}
    else:
        ishape, attrs = [n, n], {"axis": 0}
    native = _scatter(
        op, elem, [n, n], ishape, [n, n], "int", reduction=reduction, **attrs
    )
    rng = np.random.default_rng(11)
    info = np.iinfo(dtype)
    feeds = {
        "data": rng.integers(info.min, info.max, (n, n), dtype, endpoint=True),
        "indices": rng.integers(-rows, rows, ishape).astype(np.int64),
        "updates": rng.integers(info.min, info.max, (n, n), dtype, endpoint=True),
    }
    # a ScatterND of row slices writes as a ScatterElements along axis 0 of its indices
    # repeated across the columns
    indices = np.broadcast_to(feeds["indices"], (n, n))
    with np.errstate(over="ignore"):
        want = np_scatter_elements(
            feeds["data"], indices, feeds["updates"], 0, reduction
        )
    np.testing.assert_array_equal(run_cpu(native, feeds)[0], want)
    converted = convert(native, "webgpu", strategy="lower", with_inspect=False).model
    assert [x.op_type for x in converted.graph.node] == [op]
    s = webgpu_session(converted)
    assert set(placement(s).values()) == {"WebGpuExecutionProvider"}
    for _ in range(3):
        np.testing.assert_array_equal(s.run(None, feeds)[0], want)
