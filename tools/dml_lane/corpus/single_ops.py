"""Cases of the single ops the rewrites emit (reductions, TopK/Gather, Pad, Slice, Concat,
MaxUnpool, OneHot, Cast, Range, Expand, Shape, Transpose/Unsqueeze, element-wise).
"""

from __future__ import annotations

import numpy as np
import onnx.helper as oh

from .spec import _NP, DTYPES, Spec, T, _data, _tol, _vi, model


def unary_binary_spec(
    op,
    dtype,
    opset,
    *,
    n_inputs=2,
    shape=(3, 7),
    out_dtype=None,
    attrs=None,
    representative=False,
    expect=None,
    name=None,
):
    e = DTYPES[dtype]
    names = ["a", "b", "c"][:n_inputs]
    feeds = {n: _data(dtype, shape, seed=i + 10) for i, n in enumerate(names)}
    if op == "Where":
        feeds = {
            "cond": _data("bool", shape, 20),
            "a": feeds["a"],
            "b": _data(dtype, shape, 21),
        }
        ins = [
            _vi("cond", T.BOOL, list(shape)),
            _vi("a", e, list(shape)),
            _vi("b", e, list(shape)),
        ]
        inputs = ["cond", "a", "b"]
    else:
        ins = [_vi(n, e, list(shape)) for n in names]
        inputs = names
    oe = DTYPES[out_dtype] if out_dtype else e
    node = oh.make_node(op, inputs, ["y"], name=op.lower(), **(attrs or {}))
    m = model([node], ins, [_vi("y", oe, list(shape))], opset=opset)
    return Spec(
        name or f"{op}-{dtype}-op{opset}",
        op,
        dtype,
        opset,
        m,
        feeds,
        expect_placement=expect or {},
        representative=representative,
        tol=_tol(dtype),
    )


def _reduce_spec(op, dtype, opset, representative=False, expect=None):
    e = DTYPES[dtype]
    x = _data(dtype, (3, 7, 5), seed=30)
    axes_as_input = opset >= 18 or (op == "ReduceSum" and opset >= 13)
    inits = []
    if axes_as_input:
        node = oh.make_node(op, ["x", "axes"], ["y"], name=op.lower(), keepdims=1)
        inits.append(oh.make_tensor("axes", T.INT64, [1], [1]))
    else:
        node = oh.make_node(op, ["x"], ["y"], name=op.lower(), axes=[1], keepdims=1)
    m = model(
        [node], [_vi("x", e, [3, 7, 5])], [_vi("y", e, [3, 1, 5])], inits, opset=opset
    )
    return Spec(
        f"{op}-{dtype}-op{opset}",
        op,
        dtype,
        opset,
        m,
        {"x": x},
        expect_placement=expect or {},
        representative=representative,
        tol=_tol(dtype),
    )


def _topk_gather_spec(dtype, opset, representative=False, expect=None):
    e = DTYPES[dtype]
    x = (
        np.random.default_rng(41).permutation(27).reshape(3, 9).astype(np.dtype(dtype))
    )  # distinct values
    nodes = [
        oh.make_node("TopK", ["x", "k"], ["v", "i"], name="topk", axis=1),
        oh.make_node(
            "GatherElements", ["x", "i"], ["g"], name="gather_elements", axis=1
        ),
    ]
    m = model(
        nodes,
        [_vi("x", e, [3, 9])],
        [_vi("v", e, [3, 3]), _vi("i", T.INT64, [3, 3]), _vi("g", e, [3, 3])],
        [oh.make_tensor("k", T.INT64, [1], [3])],
        opset=opset,
    )
    return Spec(
        f"TopK+GatherElements-{dtype}-op{opset}",
        "TopK+GatherElements",
        dtype,
        opset,
        m,
        {"x": x},
        expect_placement=expect or {},
        representative=representative,
        tol=_tol(dtype),
    )


def _pad_spec(dtype, opset, representative=False, expect=None):
    e = DTYPES[dtype]
    x = _data(dtype, (3, 7), seed=50)
    nodes = [
        oh.make_node("Pad", ["x", "pads", "cv"], ["y"], name="pad", mode="constant")
    ]
    inits = [
        oh.make_tensor("pads", T.INT64, [4], [0, 1, 0, 1]),
        oh.make_tensor("cv", e, [], [1]),
    ]
    m = model(nodes, [_vi("x", e, [3, 7])], [_vi("y", e, [3, 9])], inits, opset=opset)
    return Spec(
        f"Pad-{dtype}-op{opset}",
        "Pad",
        dtype,
        opset,
        m,
        {"x": x},
        expect_placement=expect or {},
        representative=representative,
        tol=_tol(dtype),
    )


def _slice_spec(dtype, opset, representative=False):
    e = DTYPES[dtype]
    x = _data(dtype, (3, 9), seed=51)
    inits = [
        oh.make_tensor("st", T.INT64, [1], [1]),
        oh.make_tensor("en", T.INT64, [1], [8]),
        oh.make_tensor("ax", T.INT64, [1], [1]),
    ]
    node = oh.make_node("Slice", ["x", "st", "en", "ax"], ["y"], name="slice")
    m = model([node], [_vi("x", e, [3, 9])], [_vi("y", e, [3, 7])], inits, opset=opset)
    return Spec(
        f"Slice-{dtype}-op{opset}",
        "Slice",
        dtype,
        opset,
        m,
        {"x": x},
        representative=representative,
        tol=_tol(dtype),
    )


def _concat_spec(dtype, opset, representative=False):
    e = DTYPES[dtype]
    a, b = _data(dtype, (3, 2), seed=52), _data(dtype, (3, 5), seed=53)
    node = oh.make_node("Concat", ["a", "b"], ["y"], name="concat", axis=1)
    m = model(
        [node],
        [_vi("a", e, [3, 2]), _vi("b", e, [3, 5])],
        [_vi("y", e, [3, 7])],
        opset=opset,
    )
    return Spec(
        f"Concat-{dtype}-op{opset}",
        "Concat",
        dtype,
        opset,
        m,
        {"a": a, "b": b},
        representative=representative,
        tol=_tol(dtype),
    )


def _gather_spec(dtype, opset, representative=False):
    e = DTYPES[dtype]
    x = _data(dtype, (5, 7), seed=54)
    idx = np.array([4, 0, 2], np.int64)
    node = oh.make_node("Gather", ["x", "i"], ["y"], name="gather", axis=0)
    m = model(
        [node],
        [_vi("x", e, [5, 7]), _vi("i", T.INT64, [3])],
        [_vi("y", e, [3, 7])],
        opset=opset,
    )
    return Spec(
        f"Gather-{dtype}-op{opset}",
        "Gather",
        dtype,
        opset,
        m,
        {"x": x, "i": idx},
        representative=representative,
        tol=_tol(dtype),
    )


def _maxunpool_spec(dtype, opset, representative=False, expect=None):
    """MaxUnpool writes values to given flat positions: a scatter the DML EP runs natively."""
    e = DTYPES[dtype]
    x = _data(dtype, (1, 1, 3, 3), seed=55, low=1, high=9)
    ind = np.array([0, 3, 6, 15, 17, 20, 42, 45, 48], np.int64).reshape(
        1, 1, 3, 3
    )  # flat positions in 7x7
    node = oh.make_node(
        "MaxUnpool",
        ["x", "i"],
        ["y"],
        name="maxunpool",
        kernel_shape=[3, 3],
        strides=[2, 2],
    )
    m = model(
        [node],
        [_vi("x", e, [1, 1, 3, 3]), _vi("i", T.INT64, [1, 1, 3, 3])],
        [_vi("y", e, [1, 1, 7, 7])],
        opset=opset,
    )
    return Spec(
        f"MaxUnpool-{dtype}-op{opset}",
        "MaxUnpool",
        dtype,
        opset,
        m,
        {"x": x, "i": ind},
        expect_placement=expect or {},
        representative=representative,
        tol=_tol(dtype),
    )


def _onehot_spec(dtype, opset, representative=False, expect=None):
    e = DTYPES[dtype]
    ind = np.array([0, 4, 2, 6, 1], np.int64)
    node = oh.make_node(
        "OneHot", ["i", "depth", "values"], ["y"], name="onehot", axis=-1
    )
    m = model(
        [node],
        [_vi("i", T.INT64, [5])],
        [_vi("y", e, [5, 7])],
        [
            oh.make_tensor("depth", T.INT64, [], [7]),
            oh.make_tensor("values", e, [2], np.array([0, 1], dtype=_NP[e]).tolist()),
        ],
        opset=opset,
    )
    return Spec(
        f"OneHot-{dtype}-op{opset}",
        "OneHot",
        dtype,
        opset,
        m,
        {"i": ind},
        expect_placement=expect or {},
        representative=representative,
        tol=_tol(dtype),
    )


def _cast_spec(src, dst, opset, representative=False):
    x = _data(src, (3, 7), seed=56)
    node = oh.make_node("Cast", ["x"], ["y"], name="cast", to=DTYPES[dst])
    m = model(
        [node],
        [_vi("x", DTYPES[src], [3, 7])],
        [_vi("y", DTYPES[dst], [3, 7])],
        opset=opset,
    )
    return Spec(
        f"Cast-{src}-to-{dst}-op{opset}",
        "Cast",
        f"{src}->{dst}",
        opset,
        m,
        {"x": x},
        representative=representative,
        tol=_tol(dst),
    )


def _range_spec(dtype, opset, representative=False):
    e = DTYPES[dtype]
    node = oh.make_node("Range", ["s", "l", "d"], ["y"], name="range")
    feeds = {
        "s": np.array(2, _NP[e]),
        "l": np.array(23, _NP[e]),
        "d": np.array(3, _NP[e]),
    }
    m = model(
        [node],
        [_vi("s", e, []), _vi("l", e, []), _vi("d", e, [])],
        [_vi("y", e, [None])],
        opset=opset,
    )
    return Spec(
        f"Range-{dtype}-op{opset}",
        "Range",
        dtype,
        opset,
        m,
        feeds,
        representative=representative,
        tol=_tol(dtype),
    )


def _expand_spec(dtype, opset, representative=False):
    e = DTYPES[dtype]
    x = _data(dtype, (3, 1), seed=57)
    node = oh.make_node("Expand", ["x", "shape"], ["y"], name="expand")
    m = model(
        [node],
        [_vi("x", e, [3, 1])],
        [_vi("y", e, [3, 7])],
        [oh.make_tensor("shape", T.INT64, [2], [3, 7])],
        opset=opset,
    )
    return Spec(
        f"Expand-{dtype}-op{opset}",
        "Expand",
        dtype,
        opset,
        m,
        {"x": x},
        representative=representative,
        tol=_tol(dtype),
    )


def _shape_spec(dtype, opset, representative=False):
    e = DTYPES[dtype]
    x = _data(dtype, (3, 7), seed=58)
    nodes = [
        oh.make_node("Shape", ["x"], ["s"], name="shape"),
        oh.make_node("Reshape", ["x", "s"], ["y"], name="reshape"),
    ]
    m = model(
        nodes,
        [_vi("x", e, [3, 7])],
        [_vi("s", T.INT64, [2]), _vi("y", e, [3, 7])],
        opset=opset,
    )
    return Spec(
        f"Shape+Reshape-{dtype}-op{opset}",
        "Shape",
        dtype,
        opset,
        m,
        {"x": x},
        representative=representative,
        tol=_tol(dtype),
    )


def _transpose_unsqueeze_spec(dtype, opset, representative=False):
    e = DTYPES[dtype]
    x = _data(dtype, (3, 7), seed=59)
    if opset >= 13:
        nodes = [
            oh.make_node("Transpose", ["x"], ["t"], name="transpose", perm=[1, 0]),
            oh.make_node("Unsqueeze", ["t", "ax"], ["y"], name="unsqueeze"),
        ]
        inits = [oh.make_tensor("ax", T.INT64, [1], [0])]
    else:
        nodes = [
            oh.make_node("Transpose", ["x"], ["t"], name="transpose", perm=[1, 0]),
            oh.make_node("Unsqueeze", ["t"], ["y"], name="unsqueeze", axes=[0]),
        ]
        inits = []
    m = model(
        nodes, [_vi("x", e, [3, 7])], [_vi("y", e, [1, 7, 3])], inits, opset=opset
    )
    return Spec(
        f"Transpose+Unsqueeze-{dtype}-op{opset}",
        "Transpose",
        dtype,
        opset,
        m,
        {"x": x},
        representative=representative,
        tol=_tol(dtype),
    )
