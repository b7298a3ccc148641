"""Small multi-node patterns: the shapes that once failed under the old Wine 8 lane, the
CPU-fallback guard, Reshape(allowzero), Where's signed zero, and working fused patterns.
"""

from __future__ import annotations

import numpy as np
import onnx.helper as oh

from ..driver import DML
from .families import cumsum_spec
from .single_ops import unary_binary_spec
from .spec import DTYPES, Spec, T, _data, _vi, model


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


def where_signed_zero_spec() -> Spec:
    """Where-16 picking −0.0 from each branch (issue 19: why the scatter lowering copies bits).

    ONNX's Where selects elements, so a selected −0.0 stays −0.0. ORT's CPU kernel
    (where_op.cc) selects each branch against a zero default and merges them with
    `x != 0 ? x : y`, so a −0.0 picked from the true branch comes out +0.0; the false branch
    keeps it. The lowered scatter's float picks are GatherElements for that reason
    (segscan.select_bits, scatter_write.choose): a converted model must be exact on the CPU EP
    too. Rows: true with −0.0, false with −0.0, true with −0.0 against +0.0, false with NaN."""
    node = oh.make_node("Where", ["c", "x", "y"], ["w"], name="where")
    m = model(
        [node],
        [_vi("c", T.BOOL, [4]), _vi("x", T.FLOAT, [4]), _vi("y", T.FLOAT, [4])],
        [_vi("w", T.FLOAT, [4])],
        opset=18,
    )
    inputs = {
        "c": np.array([True, False, True, False]),
        "x": np.array([-0.0, 1.0, -0.0, 1.0], np.float32),
        "y": np.array([2.0, -0.0, 0.0, np.nan], np.float32),
    }
    return Spec(
        "Where-signed-zero-float32-op18",
        "Where",
        "float32",
        18,
        m,
        inputs,
        expect_placement={"where": DML},
    )


def conv_transpose_output_padding_specs() -> list[Spec]:
    """ConvTranspose with output_padding, 1-D and 2-D (a lane finding, third-party corpus).

    Kokoro's text encoder upsamples with a depthwise 1-D ConvTranspose (stride 2, pads 1,
    output_padding 1). On the lane the DML EP fails that node at session creation
    (MLOperatorAuthorImpl.cpp, 80070057), with graph fusion on and off; the same 1-D node
    without output_padding and the 2-D node with it run and match the CPU EP. Whether real
    DirectML hardware fails too is not known here (no GPU was lent): the record is the lane's.
    Rows: 1-D with output_padding (fails), 1-D without, 2-D with (both run)."""
    out = []
    for dims, output_padding in ((1, 1), (1, 0), (2, 1)):
        channels, length = 4, [5] * dims
        attrs = {
            "kernel_shape": [3] * dims,
            "strides": [2] * dims,
            "pads": [1] * (2 * dims),
        }
        if output_padding:
            attrs["output_padding"] = [output_padding] * dims
        node = oh.make_node("ConvTranspose", ["x", "w"], ["y"], name="up", **attrs)
        y_len = [2 * n - 1 + output_padding for n in length]
        weights = _data(
            "float32", (channels, channels, *attrs["kernel_shape"]), seed=71
        )
        m = model(
            [node],
            [_vi("x", T.FLOAT, [1, channels, *length])],
            [_vi("y", T.FLOAT, [1, channels, *y_len])],
            [oh.make_tensor("w", T.FLOAT, list(weights.shape), weights.ravel())],
        )
        out.append(
            Spec(
                f"ConvTranspose-{dims}d-output_padding{output_padding}-op17",
                "ConvTranspose",
                "float32",
                17,
                m,
                {"x": _data("float32", (1, channels, *length), seed=72)},
                expect_placement={"up": DML},
            )
        )
    return out
