"""Single-op and small-pattern models for the DML lane: the test corpus and conformance record.

Each `Spec` is a tiny model plus inputs. `reference(spec)` computes the expected outputs on
the Linux side with the stock onnxruntime CPU EP (a different build from the DML lane's), so a
lane result is never compared with itself. Used by tests/dml/ and tools/dml_lane/conformance.py.

Every case must run on the DML EP and match the reference: the cases that failed under the old
Wine 8 lane (vkd3d 1.6: vec4 element-wise shaders, 64-bit integer math and casts) are ordinary
cases now (`former_emulator_failure_specs()` keeps their minimal models). See docs/dml-lane.md.
"""

from __future__ import annotations

from ..driver import CPU, DML
from .families import cumsum_spec, scatter_elements_spec, scatter_nd_spec
from .patterns import (
    conv_transpose_output_padding_specs,
    cpu_fallback_guard_spec,
    cumprod_custom_model,
    former_emulator_failure_specs,
    reshape_allowzero_specs,
    slice_pad_mul_spec,
    where_signed_zero_spec,
    working_pattern_specs,
)
from .reference import compare, numpy_cumsum, reference
from .single_ops import (
    _cast_spec,
    _concat_spec,
    _expand_spec,
    _gather_spec,
    _maxunpool_spec,
    _onehot_spec,
    _pad_spec,
    _range_spec,
    _reduce_spec,
    _shape_spec,
    _slice_spec,
    _topk_gather_spec,
    _transpose_unsqueeze_spec,
    unary_binary_spec,
)
from .spec import ALL_OPSETS, REPRESENTATIVE_OPSETS, Spec

__all__ = [
    "ALL_OPSETS",
    "REPRESENTATIVE_OPSETS",
    "Spec",
    "all_specs",
    "compare",
    "conv_transpose_output_padding_specs",
    "cpu_fallback_guard_spec",
    "cumprod_custom_model",
    "cumsum_spec",
    "former_emulator_failure_specs",
    "known_specs",
    "numpy_cumsum",
    "op_specs",
    "reference",
    "representative_specs",
    "reshape_allowzero_specs",
    "scatter_elements_spec",
    "scatter_nd_spec",
    "slice_pad_mul_spec",
    "unary_binary_spec",
    "where_signed_zero_spec",
    "working_pattern_specs",
]


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
