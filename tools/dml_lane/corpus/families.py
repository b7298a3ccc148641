"""Cases of the three families: CumSum, ScatterElements, ScatterND at each opset and dtype."""

from __future__ import annotations

import numpy as np
import onnx.helper as oh

from .spec import DTYPES, Spec, T, _data, _tol, _vi, model


def cumsum_spec(
    dtype="float32",
    opset=14,
    *,
    axis_input=False,
    reverse=0,
    exclusive=0,
    shape=(3, 257),
    axis=1,
    name=None,
    representative=False,
    expect=None,
    note="",
):
    e = DTYPES[dtype]
    attrs = {}
    if reverse:
        attrs["reverse"] = reverse
    if exclusive:
        attrs["exclusive"] = exclusive
    node = oh.make_node("CumSum", ["x", "axis"], ["y"], name="cumsum", **attrs)
    ins = [_vi("x", e, list(shape))]
    inits = []
    feeds = {"x": _data(dtype, shape)}
    if axis_input:
        ins.append(_vi("axis", T.INT64, []))
        feeds["axis"] = np.array(axis, np.int64)
    else:
        inits.append(oh.make_tensor("axis", T.INT64, [], [axis]))
    m = model([node], ins, [_vi("y", e, list(shape))], inits, opset=opset)
    nm = (
        name
        or f"CumSum-{dtype}-op{opset}-{'axisinput' if axis_input else 'axisconst'}-r{reverse}e{exclusive}"
    )
    return Spec(
        nm,
        "CumSum",
        dtype,
        opset,
        m,
        feeds,
        expect_placement=expect or {},
        representative=representative,
        note=note,
        tol=_tol(dtype),
    )


# ----------------------------------------------------------------------------- ScatterElements / ScatterND


def scatter_elements_spec(
    dtype="float32",
    opset=16,
    reduction="none",
    *,
    shape=(5, 9),
    k=3,
    axis=1,
    representative=False,
    expect=None,
    name=None,
    note="",
):
    e = DTYPES[dtype]
    rng = np.random.default_rng(1)
    data = _data(dtype, shape, seed=2)
    upd_shape = list(shape)
    upd_shape[axis] = k
    if reduction == "none":  # unique targets per row: a deterministic result
        idx = np.stack(
            [rng.permutation(shape[axis])[:k] for _ in range(shape[1 - axis])]
        )
        idx = idx if axis == 1 else idx.T
    else:
        idx = rng.integers(0, shape[axis], upd_shape)
    idx = idx.astype(np.int64)
    updates = _data(dtype, upd_shape, seed=3, low=1, high=4)
    attrs = {"axis": axis}
    if reduction != "none":
        attrs["reduction"] = reduction
    node = oh.make_node(
        "ScatterElements",
        ["data", "indices", "updates"],
        ["y"],
        name="scatter",
        **attrs,
    )
    m = model(
        [node],
        [
            _vi("data", e, list(shape)),
            _vi("indices", T.INT64, upd_shape),
            _vi("updates", e, upd_shape),
        ],
        [_vi("y", e, list(shape))],
        opset=opset,
    )
    nm = name or f"ScatterElements-{reduction}-{dtype}-op{opset}"
    return Spec(
        nm,
        "ScatterElements",
        dtype,
        opset,
        m,
        {"data": data, "indices": idx, "updates": updates},
        expect_placement=expect or {},
        representative=representative,
        note=note,
        tol=_tol(dtype),
    )


def scatter_nd_spec(
    dtype="float32", opset=16, reduction="none", representative=False, expect=None
):
    e = DTYPES[dtype]
    data = _data(dtype, (5, 7), seed=4)
    idx = (
        np.array([[0], [3], [4]], np.int64)
        if reduction == "none"
        else np.array([[0], [3], [0]], np.int64)
    )
    upd = _data(dtype, (3, 7), seed=5, low=1, high=4)
    attrs = {"reduction": reduction} if reduction != "none" else {}
    node = oh.make_node(
        "ScatterND", ["data", "indices", "updates"], ["y"], name="scatternd", **attrs
    )
    m = model(
        [node],
        [
            _vi("data", e, [5, 7]),
            _vi("indices", T.INT64, [3, 1]),
            _vi("updates", e, [3, 7]),
        ],
        [_vi("y", e, [5, 7])],
        opset=opset,
    )
    return Spec(
        f"ScatterND-{reduction}-{dtype}-op{opset}",
        "ScatterND",
        dtype,
        opset,
        m,
        {"data": data, "indices": idx, "updates": upd},
        expect_placement=expect or {},
        representative=representative,
        tol=_tol(dtype),
    )
