"""Single-op and small-pattern models for the DML lane: the test corpus and conformance record.

Each `Spec` is a tiny model plus inputs. `reference(spec)` computes the expected outputs on
the Linux side with the stock onnxruntime CPU EP (a different build from the DML lane's), so a
lane result is never compared with itself. Used by tests/dml/ and tools/dml_lane/conformance.py.

Every case must run on the DML EP and match the reference: the cases that failed under the old
Wine 8 lane (vkd3d 1.6: vec4 element-wise shaders, 64-bit integer math and casts) are ordinary
cases now (`former_emulator_failure_specs()` keeps their minimal models). See docs/dml-lane.md.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import onnx
import onnx.helper as oh
import onnx.numpy_helper

from .driver import CPU, DML, Case

T = onnx.TensorProto

#: opsets where the ops we care about change version (CumSum 11/14, Scatter* 11/13/16/18,
#: Reduce* 13/18, Pad 11/13/18/19/21, ...); 21 is the newest the DML EP registers anything at.
REPRESENTATIVE_OPSETS = (11, 13, 16, 17, 18, 21)
ALL_OPSETS = (11, 13, 14, 15, 16, 17, 18, 19, 20, 21)

_NP = {
    T.FLOAT: np.float32,
    T.FLOAT16: np.float16,
    T.DOUBLE: np.float64,
    T.INT32: np.int32,
    T.INT64: np.int64,
    T.UINT32: np.uint32,
    T.UINT64: np.uint64,
    T.INT8: np.int8,
    T.UINT8: np.uint8,
    T.BOOL: np.bool_,
    T.INT16: np.int16,
}
DTYPES = {
    "float32": T.FLOAT,
    "float16": T.FLOAT16,
    "float64": T.DOUBLE,
    "int32": T.INT32,
    "int64": T.INT64,
    "uint32": T.UINT32,
    "uint64": T.UINT64,
    "int8": T.INT8,
    "uint8": T.UINT8,
    "bool": T.BOOL,
}


@dataclass
class Spec:
    name: str
    op: str  # the op (or pattern) under test, for the conformance record
    dtype: str
    opset: int
    model: onnx.ModelProto
    inputs: dict
    #: node name -> provider the lane must report (checked by the tests)
    expect_placement: dict = field(default_factory=dict)
    representative: bool = False
    note: str = ""
    session_options: dict | None = None
    tol: tuple = (1e-5, 1e-6)

    def case(self, provider: str = "dml") -> Case:
        return Case(
            self.name if provider == "dml" else f"{self.name}@{provider}",
            self.model,
            self.inputs,
            provider=provider,
            session_options=self.session_options,
        )


def _vi(name, elem, shape):
    return oh.make_tensor_value_info(name, elem, shape)


def model(
    nodes, inputs, outputs, inits=(), opset=17, extra_opsets=()
) -> onnx.ModelProto:
    g = oh.make_graph(nodes, "lane", inputs, outputs, list(inits))
    m = oh.make_model(g, opset_imports=[oh.make_opsetid("", opset), *extra_opsets])
    m.ir_version = 8 if opset <= 18 else (9 if opset <= 20 else 10)
    return m


def _data(dtype: str, shape, seed=0, low=-6, high=7):
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    npd = np.dtype(dtype)
    if npd.kind == "u":
        low = 0
    if npd.kind == "f":
        # small integers in float: exact sums, so CPU-vs-GPU differences mean real bugs
        return rng.integers(low, high, shape).astype(npd)
    return rng.integers(low, high, shape).astype(npd)


def _tol(dtype):
    return {
        "float16": (1e-2, 1e-2),
        "float32": (1e-5, 1e-5),
        "float64": (1e-12, 1e-12),
    }.get(dtype, (0, 0))


# ----------------------------------------------------------------------------- CumSum


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


# ----------------------------------------------------------------------------- generic single ops


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


# ----------------------------------------------------------------------------- patterns


def slice_pad_mul_spec(order="slice_pad", shape=(3, 257), opset=17, name=None, note=""):
    """The shift pattern of an exclusive scan lowering: x * shift(x) with a pad value of 1."""
    n = shape[-1]
    inits = [
        oh.make_tensor("st", T.INT64, [1], [0]),
        oh.make_tensor("en", T.INT64, [1], [n - 1]),
        oh.make_tensor("ax", T.INT64, [1], [1]),
        oh.make_tensor("cv", T.FLOAT, [], [1.0]),
    ]
    if order == "pad_slice":
        inits[1] = oh.make_tensor("en", T.INT64, [1], [n])
    if order == "slice_pad":
        inits.append(oh.make_tensor("pads", T.INT64, [4], [0, 1, 0, 0]))
        nodes = [
            oh.make_node("Slice", ["x", "st", "en", "ax"], ["s"], name="slice"),
            oh.make_node(
                "Pad", ["s", "pads", "cv"], ["p"], name="pad", mode="constant"
            ),
            oh.make_node("Mul", ["x", "p"], ["y"], name="mul"),
        ]
    else:
        inits.append(oh.make_tensor("pads", T.INT64, [4], [0, 1, 0, 0]))
        nodes = [
            oh.make_node(
                "Pad", ["x", "pads", "cv"], ["p"], name="pad", mode="constant"
            ),
            oh.make_node("Slice", ["p", "st", "en", "ax"], ["s"], name="slice"),
            oh.make_node("Mul", ["x", "s"], ["y"], name="mul"),
        ]
    m = model(
        nodes,
        [_vi("x", T.FLOAT, list(shape))],
        [_vi("y", T.FLOAT, list(shape))],
        inits,
        opset=opset,
    )
    x = _data("float32", shape, seed=60)
    return Spec(
        name
        or f"{order.replace('_', '->')}->Mul-{'x'.join(map(str, shape))}-op{opset}",
        "Slice/Pad/Mul",
        "float32",
        opset,
        m,
        {"x": x},
        note=note,
    )


def cumprod_custom_model(shape=(3, 7), dtype="float32"):
    """x -> DOMAIN::CumProd(axis=1) -> Mul(2): the fallback custom op inside a DML session."""
    from ort_dml_ops import DOMAIN, DOMAIN_VERSION

    e = DTYPES[dtype]
    nodes = [
        oh.make_node("CumProd", ["x", "axis"], ["c"], name="cumprod", domain=DOMAIN),
        oh.make_node("Mul", ["c", "two"], ["y"], name="mul_after"),
    ]
    inits = [
        oh.make_tensor("axis", T.INT64, [], [1]),
        oh.make_tensor("two", e, [], [2]),
    ]
    return model(
        nodes,
        [_vi("x", e, list(shape))],
        [_vi("y", e, list(shape))],
        inits,
        opset=17,
        extra_opsets=[oh.make_opsetid(DOMAIN, DOMAIN_VERSION)],
    )


# ----------------------------------------------------------------------------- the corpora


def known_specs() -> list[Spec]:
    """The facts of issue 3, "Known already" (placement on the real DML EP)."""
    s: list[Spec] = []
    for op in (16, 17):
        s.append(
            scatter_elements_spec(
                "float32", op, "none", expect={"scatter": DML}, representative=True
            )
        )
    s.append(
        scatter_elements_spec(
            "float32",
            18,
            "none",
            expect={"scatter": CPU},
            representative=True,
            note="ScatterElements-16 has no end version: no DML kernel at opset >= 18",
        )
    )
    for op in (16, 17, 18):
        for red in ("add", "mul") + (("max", "min") if op >= 18 else ()):
            s.append(
                scatter_elements_spec(
                    "float32",
                    op,
                    red,
                    expect={"scatter": CPU},
                    representative=True,
                    note="QueryScatter rejects any reduction",
                )
            )
    s.append(
        cumsum_spec(
            "float32",
            14,
            axis_input=True,
            reverse=1,
            exclusive=1,
            representative=True,
            expect={"cumsum": DML},
            name="CumSum-float32-op14-axisinput-reverse-exclusive",
        )
    )
    s.append(cumsum_spec("float64", 14, representative=True, expect={"cumsum": CPU}))
    s.append(
        _topk_gather_spec(
            "float32",
            17,
            representative=True,
            expect={"topk": DML, "gather_elements": DML},
        )
    )
    return s


def former_emulator_failure_specs() -> list[Spec]:
    """Minimal models that failed at session creation under the Wine 8 lane (vkd3d 1.6) with
    `DmlGraphFusionHelper.cpp(588) 80070057` although real DirectML runs them; on the Wine 10
    lane they must run on the DML EP and match the reference like any other case."""
    vec4 = (
        "Wine 8 lane: vkd3d 1.6 could not compile DirectML's vec4 element-wise shader"
    )
    return [
        cumsum_spec(
            "int64",
            14,
            representative=True,
            expect={"cumsum": DML},
            note="Wine 8 lane: int64 CumSum failed at session creation",
        ),
        slice_pad_mul_spec(
            "slice_pad",
            shape=(3, 256),
            name="Slice->Pad(1)->Mul-3x256-op17 (vec4)",
            note=vec4,
        ),
        _vec4_mul_spec(vec4),
    ]


def cpu_fallback_guard_spec() -> Spec:
    """A DML session ORT could not really create (it falls back to the CPU EP silently).

    The DML EP option disable_metacommands=1 makes the EP fail to initialize under the
    emulator; ORT then prints "EP Error" and runs on the CPU EP. The runner must report it
    as a failure (stage "providers"), never as a pass.
    """
    sp = cumsum_spec("float32", 14, name="CumSum-float32-op14-dml-not-really (guard)")
    sp.session_options = {"provider_options": {"disable_metacommands": "1"}}
    return sp


def _vec4_mul_spec(note):
    sp = unary_binary_spec(
        "Mul", "float32", 17, shape=(2, 8), name="Mul-float32-2x8-op17 (vec4)"
    )
    sp.note = note
    return sp


def reshape_allowzero_specs() -> list[Spec]:
    """Reshape-14 with allowzero=1 and 0, static and symbolic input shapes (issue 13 item 5).

    torch.onnx's dynamo exporter writes every `view` as Reshape(allowzero=1) (RoBERTa's
    node_view_1, PyG's GCNConv node_view_1). On the DML EP, allowzero=1 fails kernel creation in
    ORT's MLOperatorAuthorImpl.cpp: at session creation when the input shape is static (80070057),
    at the first run when it is symbolic (the kernel is created then; the HRESULT varies from run to
    run: 8007000E, 8007023E, 80070057); allowzero=0 runs.
    The DML EP implements Reshape as a copy (DmlOperatorCopy.cpp) and its shape helper never reads
    allowzero (OperatorHelper.cpp, ReshapeHelper), so the work DirectML and vkd3d see is the same
    for both values: the refusal is ORT's DML EP, not the emulator. The shape holds no 0, so both
    values mean the same Reshape."""
    out = []
    for allowzero in (0, 1):
        for symbolic in (False, True):
            shape = ["N", 8] if symbolic else [7, 8]
            node = oh.make_node(
                "Reshape", ["x", "shape"], ["y"], name="view", allowzero=allowzero
            )
            m = model(
                [node],
                [_vi("x", T.FLOAT, shape)],
                [_vi("y", T.FLOAT, ["M"])],
                [oh.make_tensor("shape", T.INT64, [1], [-1])],
                opset=20,
            )
            out.append(
                Spec(
                    f"Reshape-allowzero{allowzero}-{'symbolic' if symbolic else 'static'}-op20",
                    "Reshape",
                    "float32",
                    20,
                    m,
                    {"x": _data("float32", (7, 8), seed=61)},
                    expect_placement={"view": DML},
                )
            )
    return out


def working_pattern_specs() -> list[Spec]:
    return [
        slice_pad_mul_spec(
            "pad_slice", shape=(3, 256), name="Pad->Slice->Mul-3x256-op17"
        ),
        slice_pad_mul_spec(
            "slice_pad", shape=(3, 257), name="Slice->Pad(1)->Mul-3x257-op17"
        ),
    ]


def op_specs(opsets=REPRESENTATIVE_OPSETS, *, full=False) -> list[Spec]:
    """Every op the lowerings emit, across opsets and dtype families.

    `representative` marks the CI subset: per opset one dtype family for the lowering ops
    (float32, int64, float16, int32 in turn), CumSum with a graph-input axis, one
    ScatterElements; the remaining lowering ops once (float32, opset 17).
    """
    s: list[Spec] = []
    floats = ("float32", "float16")
    ints = ("int32", "int64")
    turn = ("float32", "int64", "float16", "int32")
    for i, op in enumerate(opsets):
        rep_dt = turn[i % 4]
        # CumSum: registered at 11 and 14 (fp16, fp32, int32, uint32, int64, uint64)
        for dt in ("float32", "float16", "int32", "uint32", "float64") + (
            ("int64", "uint64") if full else ()
        ):
            if op < 14 and dt == "float16":
                continue  # CumSum-11 has no float16
            for axis_input in (False, True):
                for rev, exc in ((0, 0), (1, 1)) if full else ((0, 0),):
                    rep = axis_input and dt == (
                        floats[i % 2] if op >= 14 else "float32"
                    )
                    rep = rep or (
                        not axis_input and dt in ("int32", "uint32") and i == 1
                    )
                    expect = {"cumsum": CPU if dt == "float64" else DML}
                    s.append(
                        cumsum_spec(
                            dt,
                            op,
                            axis_input=axis_input,
                            reverse=rev,
                            exclusive=exc,
                            representative=rep,
                            expect=expect,
                        )
                    )
        # ScatterElements / ScatterND
        reds = (
            ("none",)
            if op < 16
            else ("none", "add", "mul") + (("max", "min") if op >= 18 else ())
        )
        for dt in ("float32", "float16", "int32", "int64"):
            for red in reds:
                if dt == "float16" and red in ("add", "mul"):
                    continue  # its CPU kernel refuses (design notes)
                if not full and dt != "float32" and red != "none":
                    continue
                on_dml = red == "none" and op < 18
                rep = red == "none" and dt == rep_dt
                s.append(
                    scatter_elements_spec(
                        dt,
                        op,
                        red,
                        representative=rep,
                        expect={"scatter": DML if on_dml else CPU},
                    )
                )
            for red in ("none", "add") if op >= 16 else ("none",):
                if (dt == "float16" and red == "add") or (not full and dt != "float32"):
                    continue
                on_dml = red == "none" and op < 18
                s.append(
                    scatter_nd_spec(
                        dt,
                        op,
                        red,
                        representative=(red == "none" and op in (11, 16, 18)),
                        expect={"scatternd": DML if on_dml else CPU},
                    )
                )
        # the ops the lowerings emit
        for dt in floats + ints:
            rep = dt == rep_dt
            once = dt == "float32" and op == 17
            for bop in ("Mul", "Add", "Max", "Min"):
                if op < 13 and bop in ("Max", "Min") and dt in ints:
                    continue  # Max/Min integer kernels arrive at 12
                s.append(
                    unary_binary_spec(
                        bop, dt, op, representative=(rep and bop == "Mul") or once
                    )
                )
            s.append(
                unary_binary_spec(
                    "Where", dt, op, n_inputs=2, representative=rep or once
                )
            )
            for cop in ("Equal", "Less", "Greater"):
                s.append(
                    unary_binary_spec(
                        cop,
                        dt,
                        op,
                        out_dtype="bool",
                        representative=(rep and cop == "Less") or once,
                    )
                )
            s.append(
                _pad_spec(
                    dt,
                    op,
                    representative=rep or once,
                    expect={"pad": DML} if dt in floats else None,
                )
            )
            s.append(_slice_spec(dt, op, representative=rep or once))
            s.append(_concat_spec(dt, op, representative=once))
            s.append(_gather_spec(dt, op, representative=once))
            s.append(_expand_spec(dt, op, representative=once))
            s.append(_shape_spec(dt, op, representative=once))
            s.append(_transpose_unsqueeze_spec(dt, op, representative=once))
            if dt in floats or op >= 13:
                s.append(
                    _topk_gather_spec(
                        dt,
                        op,
                        representative=rep or once,
                        expect={"topk": DML, "gather_elements": DML}
                        if dt in floats
                        else None,
                    )
                )
            for rop in ("ReduceMax", "ReduceMin", "ReduceSum"):
                s.append(
                    _reduce_spec(
                        rop,
                        dt,
                        op,
                        representative=(rep and rop == "ReduceMax") or once,
                        expect={rop.lower(): DML}
                        if dt in floats and rop == "ReduceMax"
                        else None,
                    )
                )
            if dt in ("float32", "int64"):
                s.append(
                    _onehot_spec(
                        dt,
                        op,
                        representative=once,
                        expect={"onehot": DML} if dt in floats else None,
                    )
                )
            if dt in floats:
                s.append(
                    _maxunpool_spec(
                        dt, op, representative=rep or once, expect={"maxunpool": DML}
                    )
                )
        for src, dst in (
            ("float32", "int64"),
            ("int64", "float32"),
            ("float16", "float32"),
            ("float32", "float16"),
            ("int32", "int64"),
            ("bool", "float32"),
            ("float64", "float32"),
        ):
            s.append(
                _cast_spec(
                    src,
                    dst,
                    op,
                    representative=(op == 17 and src in ("float32", "int64")),
                )
            )
        for dt in ("float32", "int64", "int32"):
            s.append(_range_spec(dt, op, representative=(op == 13 and dt == "int64")))
    return s


def all_specs(*, full: bool = False) -> list[Spec]:
    opsets = ALL_OPSETS if full else REPRESENTATIVE_OPSETS
    seen, out = set(), []
    for sp in (
        known_specs()
        + former_emulator_failure_specs()
        + working_pattern_specs()
        + op_specs(opsets, full=full)
    ):
        if sp.name in seen:
            continue
        seen.add(sp.name)
        out.append(sp)
    return out


def representative_specs() -> list[Spec]:
    pinned = {s.name for s in former_emulator_failure_specs()}
    return [
        s
        for s in all_specs()
        if s.representative or s.name in pinned or s.op == "Slice/Pad/Mul"
    ]


# ----------------------------------------------------------------------------- references


def numpy_cumsum(x, axis, exclusive=0, reverse=0):
    """CumSum in plain numpy (ONNX semantics), the reference for every CumSum case."""
    x = np.asarray(x)
    y = np.flip(x, axis) if reverse else x
    c = np.cumsum(y, axis=axis, dtype=x.dtype)
    if exclusive:
        c = np.concatenate(
            [np.zeros_like(np.take(c, [0], axis=axis)), np.delete(c, -1, axis=axis)],
            axis=axis,
        )
    return np.flip(c, axis) if reverse else c


def reference(spec: Spec) -> list[np.ndarray]:
    """Expected outputs: numpy for CumSum, else the Linux onnxruntime CPU EP (not the lane's build)."""
    import onnxruntime as ort

    nodes = spec.model.graph.node
    if len(nodes) == 1 and nodes[0].op_type == "CumSum":
        attrs = {a.name: a.i for a in nodes[0].attribute}
        axis = spec.inputs.get("axis")
        if axis is None:
            axis = onnx.numpy_helper.to_array(spec.model.graph.initializer[0])
        return [
            numpy_cumsum(
                spec.inputs["x"],
                int(axis),
                attrs.get("exclusive", 0),
                attrs.get("reverse", 0),
            )
        ]

    so = ort.SessionOptions()
    so.log_severity_level = 3
    m = onnx.ModelProto()
    m.CopyFrom(spec.model)
    sess = ort.InferenceSession(
        m.SerializeToString(), so, providers=["CPUExecutionProvider"]
    )
    return sess.run(None, spec.inputs)


def compare(spec: Spec, got: list, want: list) -> str | None:
    """None when equal within the dtype's tolerance, else a one-line description."""
    if got is None:
        return "no outputs"
    if len(got) != len(want):
        return f"{len(got)} outputs, expected {len(want)}"
    rtol, atol = spec.tol
    for i, (g, w) in enumerate(zip(got, want)):
        g, w = np.asarray(g), np.asarray(w)
        if g.shape != w.shape:
            return f"output {i}: shape {g.shape}, expected {w.shape}"
        if g.dtype != w.dtype:
            return f"output {i}: dtype {g.dtype}, expected {w.dtype}"
        if g.dtype.kind in "fc":
            ok = np.allclose(
                g.astype(np.float64),
                w.astype(np.float64),
                rtol=rtol,
                atol=atol,
                equal_nan=True,
            )
        else:
            ok = np.array_equal(g, w)
        if not ok:
            bad = int(
                np.sum(
                    ~np.isclose(
                        g.astype(np.float64), w.astype(np.float64), rtol=rtol, atol=atol
                    )
                )
            )
            return f"output {i}: {bad} of {g.size} elements differ (first got {g.ravel()[:4]}, want {w.ravel()[:4]})"
    return None
