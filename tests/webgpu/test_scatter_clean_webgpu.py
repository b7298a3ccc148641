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

from .conftest import placement, webgpu_session

pytestmark = pytest.mark.webgpu

#: the guard: min / max of the int64 indices, compared on the CPU (scatter_guard.in_range, host=True)
GUARD_OPS = {"ReduceMin", "ReduceMax", "Less", "Equal", "Or", "Where"}


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
    ops = {n.name: n.op_type for n in low.graph.node}
    on_cpu = {
        ops[name]
        for name, ep in placement(s).items()
        if ep == "CPUExecutionProvider" and name in ops
    }
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
    "axis,dshape,ishape", [(1, (4, 6), (4, 30)), (0, (5, 3), (3000, 3))]
)
def test_float_block_folds_on_webgpu_equal_ort_kernel(
    webgpu_lane, axis, dshape, ishape, symbolic, reduction
):
    """The block folds (blocksum.py) on the plugin: masks, Where, ReduceSum / ReduceProd and
    the carries of three levels (9,000 updates) run on WebGPU; axis 0 sorts the rows of a moved
    axis (keys grouped, not ascending). Small integers sum, and ±1, ±2, ½ multiply, exactly in
    any order, so the values are ORT's CPU kernel's bit for bit — −0.0, inf − inf, 0 · inf and
    NaN included (a NaN is compared as a NaN: its payload is the hardware's)."""
    import onnx
    from onnx import helper

    rng = np.random.default_rng(7)
    data = rng.integers(-3, 4, dshape).astype(np.float32)
    data[rng.random(dshape) < 0.3] = -0.0
    upd = rng.integers(-3, 4, ishape).astype(np.float32)
    upd[rng.random(ishape) < 0.3] = -0.0
    upd[rng.random(ishape) < 0.002] = np.inf
    upd[rng.random(ishape) < 0.002] = -np.inf
    upd[rng.random(ishape) < 0.001] = np.nan
    idx = rng.integers(-dshape[axis], dshape[axis], ishape).astype(np.int64)
    if reduction == "mul":
        upd = rng.choice(np.array([1, -1, 2, -1, 0.5, 1], np.float32), ishape)
        upd[rng.random(ishape) < 0.01] = -0.0
        upd[rng.random(ishape) < 0.002] = np.inf
        upd[rng.random(ishape) < 0.001] = np.nan
    idx[..., 0], upd[..., 0] = 1, -0.0  # position 1 of each row / column: −0.0 only
    f32, i64 = onnx.TensorProto.FLOAT, onnx.TensorProto.INT64
    native = helper.make_model(
        helper.make_graph(
            [
                helper.make_node(
                    "ScatterElements",
                    ["data", "indices", "updates"],
                    ["y"],
                    axis=axis,
                    reduction=reduction,
                )
            ],
            "scatter_add",
            [
                helper.make_tensor_value_info("data", f32, dshape),
                helper.make_tensor_value_info("indices", i64, ishape),
                helper.make_tensor_value_info("updates", f32, ishape),
            ],
            [helper.make_tensor_value_info("y", f32, dshape)],
        ),
        opset_imports=[helper.make_opsetid("", 18)],
        ir_version=9,
    )
    model = _symbolic(native) if symbolic else native
    low = convert(model, "webgpu", strategy="lower", with_inspect=False).model
    feeds = {"data": data, "indices": idx, "updates": upd}
    s = webgpu_session(low)
    got = s.run(None, feeds)[0]
    want = ort.InferenceSession(
        native.SerializeToString(), providers=["CPUExecutionProvider"]
    ).run(None, feeds)[0]
    assert np.array_equal(np.isnan(got), np.isnan(want))
    keep = ~np.isnan(want)
    np.testing.assert_array_equal(got[keep].view(np.uint8), want[keep].view(np.uint8))
    copies, _ = W._copies(low, False, feeds)
    assert copies == 1  # the indices' upload, as with the native kernel
    if (
        not symbolic
    ):  # (run-time sizes: int64 shape arithmetic on the CPU, no data there)
        ops = {n.name: n.op_type for n in low.graph.node}
        on_cpu = {
            ops[name]
            for name, ep in placement(s).items()
            if ep == "CPUExecutionProvider" and name in ops
        }
        assert on_cpu <= GUARD_OPS, on_cpu
