"""The node variants recorded per op: its inputs and attributes for one (opset, element type).

`variants(op, opset, t)` lists (label, inputs, attrs, number of outputs): the shapes and
attribute values recorded for the op (scatter reductions, axes, modes, ...); a unary or binary
element-wise op has a single variant.
"""

from __future__ import annotations

import numpy as np
from onnx import TensorProto as T
from onnx import helper as h

from .single_op import DTYPES, D, Input, data_input, i64_input, scalar_input, type_str

UNARY = (
    "Neg",
    "Abs",
    "Relu",
    "LeakyRelu",
    "Elu",
    "HardSigmoid",
    "Gelu",
    "Sigmoid",
    "Sqrt",
    "Floor",
    "Ceil",
    "Exp",
    "Log",
    "Tanh",
    "Erf",
    "Reciprocal",
    "Not",
    "IsNaN",
    "IsInf",
    "Identity",
    "Sign",
    "Round",
    "Softmax",
    "Softplus",
    "Softsign",
    "Sin",
    "Cos",
    "Tan",
    "Asin",
    "Acos",
    "Atan",
    "Sinh",
    "Cosh",
    "Transpose",
    "NonZero",
    "Shape",
    "Size",
)
BINARY = (
    "Add",
    "Sub",
    "Mul",
    "Div",
    "Min",
    "Max",
    "Equal",
    "Less",
    "Greater",
    "LessOrEqual",
    "GreaterOrEqual",
    "And",
    "Or",
    "Xor",
    "Mod",
    "Pow",
    "MatMul",
)
#: reductions: axes an attribute until ReduceSum-13 / the others' 18, then an input
REDUCE = (
    "ReduceMax",
    "ReduceMin",
    "ReduceSum",
    "ReduceMean",
    "ReduceProd",
    "ReduceL1",
    "ReduceL2",
    "ReduceSumSquare",
    "ReduceLogSum",
    "ReduceLogSumExp",
)
#: the ops ORT's layout transformation moves to NHWC for the plugin (layout_transformation.cc
#: GetORTLayoutSensitiveOps, less Resize for WebGPU) and their neighbours, as exporters write them
IMAGE = (
    "Conv",
    "ConvTranspose",
    "MaxPool",
    "AveragePool",
    "GlobalAveragePool",
    "GlobalMaxPool",
    "BatchNormalization",
    "InstanceNormalization",
    "DepthToSpace",
    "SpaceToDepth",
    "LRN",
)
#: recurrent layers as torch exports them: X [seq, batch, input], W and R constants, hidden 4
RNN = ("GRU", "LSTM", "RNN")
#: contrib ops (com.microsoft) that ORT's own optimizer writes into optimized graphs (Kokoro's)
CONTRIB = (
    "FastGelu",
    "Gelu",
    "BiasGelu",
    "QuickGelu",
    "FusedMatMul",
    "SkipLayerNormalization",
    "SkipSimplifiedLayerNormalization",
)
#: quantization ops as quantized exports write them: uint8 zero points, a float scalar scale
QUANT = ("DequantizeLinear", "QuantizeLinear", "DynamicQuantizeLinear", "MatMulInteger")
SCATTER_REDUCTIONS = {
    11: ("none",),
    16: ("none", "add", "mul"),
    18: ("none", "add", "mul", "max", "min"),
}


def contrib_variants(op: str, t: int):
    """[(label, inputs, attrs, n_outputs)] of a CONTRIB op (domain com.microsoft)."""
    x = data_input(t)
    vec = Input("v", t, [D[-1]], init=True)
    if op in ("FastGelu", "BiasGelu"):
        return [("", [x, vec], {}, 1)]
    if op in ("Gelu", "QuickGelu"):
        return [("", [x], {}, 1)]
    if op == "FusedMatMul":
        return [("", [data_input(t, [3, 4], "a"), data_input(t, [4, 5], "b")], {}, 1)]
    skip = data_input(t, D, "skip")
    beta = [Input("beta", t, [D[-1]], init=True)] if op[4] == "L" else []
    return [("", [x, skip, vec, *beta], {}, 1)]


def variants(op: str, opset: int, t: int):
    """[(label, inputs, attrs, n_outputs)] for `op` at `opset` with swept element type `t`."""
    if op in ("Shape", "Size"):
        return [("", [Input("x", t, D, symbolic=True)], {}, 1)]
    if op in UNARY:
        attrs = {"perm": [0, 2, 1]} if op == "Transpose" else {}
        return [("", [data_input(t)], attrs, 1)]
    if op in BINARY:
        b = data_input(t, [4, 5], "b") if op == "MatMul" else data_input(t, D, "b")
        return [
            (
                "",
                [data_input(t, name="a"), b],
                {"fmod": 1}
                if op == "Mod" and t in (T.FLOAT, T.FLOAT16, T.DOUBLE)
                else {},
                1,
            )
        ]
    if op == "Where":
        return [
            (
                "",
                [
                    Input("c", T.BOOL, D),
                    data_input(t, name="a"),
                    data_input(t, name="b"),
                ],
                {},
                1,
            )
        ]
    if op == "Cast":  # every (from, to) pair of DTYPES: `t` is the source type
        return [
            (f"to-{type_str(to)[7:-1]}", [data_input(t)], {"to": to}, 1)
            for to in DTYPES
        ]
    if op in ("CumSum", "CumProd"):  # the axis as int64 and as int32 (T2 allows both)
        axis32 = Input("axis", T.INT32, [], np.array(1), init=True)
        return [
            ("", [data_input(t), i64_input("axis", 1)], {}, 1),
            ("axis-int32", [data_input(t), axis32], {}, 1),
        ]
    if op in ("ScatterElements", "ScatterND", "Scatter"):
        red = (
            [r for v, rs in SCATTER_REDUCTIONS.items() if v <= opset for r in rs][-5:]
            if op != "Scatter"
            else ["none"]
        )
        red = list(dict.fromkeys(red))
        if op == "ScatterND":
            ins = [
                data_input(t, name="data"),
                Input("idx", T.INT64, [2, 1], np.array([[0], [1]])),
                data_input(t, D, "upd"),
            ]
        else:
            idx = np.tile(np.arange(3).reshape(1, 3, 1), (2, 1, 4))
            ins = [
                data_input(t, name="data"),
                Input("idx", T.INT64, D, idx),
                data_input(t, D, "upd"),
            ]
        out = [(r, ins, {} if r == "none" else {"reduction": r}, 1) for r in red]
        if op == "ScatterElements":  # indices as int32 too (Tind allows both)
            ins32 = [ins[0], Input("idx", T.INT32, D, ins[1].value), ins[2]]
            out += [
                (f"{r}-idx-int32", ins32, {} if r == "none" else {"reduction": r}, 1)
                for r in red
            ]
        return out
    if op == "Split":
        if opset >= 13:
            return [("", [data_input(t), i64_input("split", [1, 2])], {"axis": 1}, 2)]
        return [("", [data_input(t)], {"axis": 1, "split": [1, 2]}, 2)]
    if op == "Concat":
        return [
            ("", [data_input(t, name="a"), data_input(t, name="b")], {"axis": 1}, 1)
        ]
    if op == "Reshape":
        return [("", [data_input(t), i64_input("shape", [6, 4])], {}, 1)]
    if op == "Expand":
        return [("", [data_input(t, [1, 3, 1]), i64_input("shape", D)], {}, 1)]
    if op == "Tile":
        return [("", [data_input(t), i64_input("repeats", [1, 2, 1])], {}, 1)]
    if op == "Pad":
        return [
            (
                "",
                [
                    data_input(t),
                    i64_input("pads", [0, 1, 0, 0, 1, 0]),
                    scalar_input("value", t, 1),
                ],
                {},
                1,
            )
        ]
    if op == "Slice":
        # starts / ends / axes as int64 and as int32 (Tind allows both; tf2onnx writes int32)
        i32 = [
            Input(n, T.INT32, [1], np.array([v], np.int32), init=True)
            for n, v in (("starts", 0), ("ends", 2), ("axes", 1))
        ]
        return [
            (
                "",
                [
                    data_input(t),
                    i64_input("starts", [0]),
                    i64_input("ends", [2]),
                    i64_input("axes", [1]),
                ],
                {},
                1,
            ),
            ("i32", [data_input(t), *i32], {}, 1),
        ]
    if op in ("Gather", "GatherElements"):
        idx = (
            np.array([2, 0])
            if op == "Gather"
            else np.tile(np.array([2, 0, 1]).reshape(1, 3, 1), (2, 1, 4))
        )
        return [  # indices as int64 and as int32 (Tind allows both)
            (
                label,
                [data_input(t), Input("idx", it, list(idx.shape), idx)],
                {"axis": 1},
                1,
            )
            for label, it in (("", T.INT64), ("idx-int32", T.INT32))
        ]
    if op == "GatherND":
        return [
            (
                "",
                [data_input(t), Input("idx", T.INT64, [2, 1], np.array([[1], [0]]))],
                {},
                1,
            )
        ]
    if op == "TopK":
        return [("", [data_input(t), i64_input("k", [2])], {"axis": -1}, 2)]
    if op == "ArgMax":
        return [("", [data_input(t)], {"axis": 1}, 1)]
    if op == "OneHot":
        return [
            (
                "",
                [
                    Input("idx", T.INT64, [3], np.array([0, 2, 4])),
                    i64_input("depth", [5]),
                    Input("values", t, [2], np.array([0, 1]), init=True),
                ],
                {},
                1,
            )
        ]
    if op in REDUCE:
        as_input = opset >= (13 if op == "ReduceSum" else 18)
        if as_input:
            return [("", [data_input(t), i64_input("axes", [1])], {"keepdims": 1}, 1)]
        return [("", [data_input(t)], {"axes": [1], "keepdims": 1}, 1)]
    if op == "Flatten":
        return [("", [data_input(t, [2, 3, 4])], {"axis": 1}, 1)]
    if op in ("Unsqueeze", "Squeeze"):
        x = data_input(t) if op == "Unsqueeze" else data_input(t, [2, 1, 4])
        if opset >= 13:
            return [("", [x, i64_input("axes", [1])], {}, 1)]
        return [("", [x], {"axes": [1]}, 1)]
    if op == "MaxUnpool":
        return [
            (
                "",
                [
                    data_input(t, [1, 1, 2, 2]),
                    Input(
                        "i",
                        T.INT64,
                        [1, 1, 2, 2],
                        np.array([0, 3, 9, 14]).reshape(1, 1, 2, 2),
                    ),
                    i64_input("output_shape", [1, 1, 4, 4]),
                ],
                {"kernel_shape": [2, 2], "strides": [2, 2]},
                1,
            )
        ]
    if op == "Range":
        return [
            (
                "",
                [
                    scalar_input("start", t, 0, init=False),
                    scalar_input("limit", t, 5, init=False),
                    scalar_input("delta", t, 1, init=False),
                ],
                {},
                1,
            )
        ]
    if op == "ConstantOfShape":
        return [
            (
                "",
                [Input("shape", T.INT64, [2], np.array([2, 3]))],
                {"value": h.make_tensor("v", t, [1], [1])},
                1,
            )
        ]
    if op == "Clip":
        return [
            (
                "",
                [data_input(t), scalar_input("lo", t, 1), scalar_input("hi", t, 3)],
                {},
                1,
            )
        ]
    if op == "Gemm":
        return [
            (
                "",
                [
                    data_input(t, [3, 4], "a"),
                    data_input(t, [4, 5], "b"),
                    data_input(t, [5], "c"),
                ],
                {},
                1,
            )
        ]
    if op == "LayerNormalization":
        return [
            (
                "",
                [
                    data_input(t),
                    data_input(t, [4], "scale"),
                    data_input(t, [4], "bias"),
                ],
                {},
                1,
            )
        ]
    if op == "Trilu":
        return [("", [data_input(t, [3, 4])], {}, 1)]
    if op == "Einsum":
        return [
            (
                "",
                [data_input(t, [3, 4], "a"), data_input(t, [4, 5], "b")],
                {"equation": "ij,jk->ik"},
                1,
            )
        ]
    if op == "DequantizeLinear":  # swept: the quantized input's type
        return [
            (
                "",
                [
                    data_input(t),
                    scalar_input("scale", T.FLOAT, 0.5),
                    scalar_input("zp", t, 1),
                ],
                {},
                1,
            )
        ]
    if op == "QuantizeLinear":
        # swept: the float input's type (the scale's too from 19); uint8 out
        scale = scalar_input("scale", t if opset >= 19 else T.FLOAT, 0.5)
        return [
            (
                "",
                [data_input(t), scale, scalar_input("zp", T.UINT8, 1)],
                {},
                1,
            )
        ]
    if op == "DynamicQuantizeLinear":
        return [("", [data_input(t)], {}, 3)]
    if op == "MatMulInteger":  # swept: A's type; B uint8 (as onnx.quantize writes it)
        b = Input("b", T.UINT8, [4, 5])
        return [("", [data_input(t, [3, 4], "a"), b], {}, 1)]
    if op == "Resize":
        # nearest x2 by constant scales (the plugin keeps Resize in NCHW)
        roi = (
            Input("roi", T.FLOAT, [0], np.zeros(0, np.float32), init=True)
            if opset < 13
            else Input("", T.FLOAT, [])
        )
        scales = Input(
            "scales", T.FLOAT, [4], np.array([1, 1, 2, 2], np.float32), init=True
        )
        return [
            ("", [data_input(t, [1, 2, 3, 4]), roi, scales], {"mode": "nearest"}, 1)
        ]
    if op in RNN:
        gates = {"GRU": 3, "LSTM": 4, "RNN": 1}[op] * 4
        w = [
            Input("W", t, [1, gates, 3], init=True),
            Input("R", t, [1, gates, 4], init=True),
        ]
        return [("", [data_input(t, [2, 1, 3], "X"), *w], {"hidden_size": 4}, 1)]
    if op in IMAGE:
        x = data_input(t, [1, 2, 4, 4])
        if op in ("Conv", "ConvTranspose"):
            w = [3, 2, 3, 3] if op == "Conv" else [2, 3, 3, 3]
            return [("", [x, Input("w", t, w, init=True)], {"pads": [1, 1, 1, 1]}, 1)]
        if op in ("MaxPool", "AveragePool"):
            return [("", [x], {"kernel_shape": [2, 2]}, 1)]
        if op in ("BatchNormalization", "InstanceNormalization"):
            stats = ["scale", "bias"] + (["mean", "var"] if op[0] == "B" else [])
            consts = [
                Input(
                    n,
                    t,
                    [2],
                    np.ones(2) if n in ("scale", "var") else np.zeros(2),
                    init=True,
                )
                for n in stats
            ]
            return [("", [x, *consts], {}, 1)]
        if op in ("DepthToSpace", "SpaceToDepth"):
            return [("", [x], {"blocksize": 2}, 1)]
        if op == "LRN":
            return [("", [x], {"size": 3}, 1)]
        return [("", [x], {}, 1)]
    if op == "If":
        return [("", [Input("cond", T.BOOL, [], np.array(True))], {"_branches": t}, 1)]
    raise KeyError(op)
