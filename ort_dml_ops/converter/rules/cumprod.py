"""CumProd (the project's DOMAIN::CumProd and ONNX CumProd-26) -> Mul, Split, Concat, Reshape:
the blocked scan of blockscan.py with Mul, laid out at convert time for a static axis length and
with run-time block counts for a symbolic one (the module's docstring says how).

The axis must be a constant and the rank known. Never Exp/Log. Integers are exact (wrapping
multiplication is associative); floats differ from the sequential reference only by rounding:
see docs/convert.md for the bound.
"""

from __future__ import annotations

import onnx_ir as ir

from ..._domain import DOMAIN
from ._base import (
    Refusal,
    Rewrite,
    RewriteContext,
    Rule,
    attr_int,
    const_array,
    static_shape,
)
from .blockscan import scan_plan, scan_static
from .blockscan_symbolic import scan_symbolic
from .emitter import Emitter

#: dtypes the Mul-based lowering supports (ONNX Mul-14 type set minus bool).
SUPPORTED = {
    ir.DataType.FLOAT,
    ir.DataType.FLOAT16,
    ir.DataType.DOUBLE,
    ir.DataType.BFLOAT16,
    ir.DataType.INT32,
    ir.DataType.INT64,
    ir.DataType.UINT32,
    ir.DataType.UINT64,
    ir.DataType.INT8,
    ir.DataType.INT16,
    ir.DataType.UINT8,
    ir.DataType.UINT16,
}


class CumProdLowering(Rule):
    name = "cumprod-scan"
    ops = ((DOMAIN, "CumProd"), ("", "CumProd"))

    def check(self, node: ir.Node, ctx: RewriteContext) -> Refusal | None:
        x = node.inputs[0]
        if len(node.inputs) < 2 or node.inputs[1] is None:
            return Refusal("no-axis", "CumProd has no axis input")
        axis_value = const_array(node.inputs[1])
        if axis_value is None:
            return Refusal(
                "axis-not-constant",
                "the axis input is not a constant; the scan is laid out at convert time",
            )
        # the data input is required (an empty one would fail in static_shape anyway)
        assert x is not None
        shape = static_shape(x)
        if shape is None:
            return Refusal(
                "rank-unknown",
                "the rank of the input is unknown (run shape inference or give input shapes)",
            )
        if x.dtype not in SUPPORTED:
            return Refusal(
                "dtype-unsupported",
                f"no Mul for element type {x.dtype.name if x.dtype else 'unknown'}",
            )
        axis = int(axis_value.reshape(-1)[0])
        if not -len(shape) <= axis < len(shape):
            return Refusal(
                "axis-out-of-range",
                f"axis {axis} is out of range for rank {len(shape)}",
            )
        if ctx.opset < 11:
            return Refusal("opset-too-old", f"opset {ctx.opset} < 11")
        return None

    def rewrite(self, node: ir.Node, ctx: RewriteContext) -> Rewrite:
        x = node.inputs[0]
        assert x is not None and x.dtype is not None  # check() passed
        shape = static_shape(x)
        axis_value = const_array(node.inputs[1])
        assert shape is not None and axis_value is not None  # check() passed
        rank = len(shape)
        axis = int(axis_value.reshape(-1)[0]) % rank
        exclusive = bool(attr_int(node, "exclusive"))
        reverse = bool(attr_int(node, "reverse"))
        e = Emitter(ctx, node.name or "CumProd")
        n = shape[axis]
        width = ctx.options.get("max_io_width")
        if n is None:
            y, note = scan_symbolic(
                e, x, shape, axis, "Mul", exclusive, reverse, x.dtype, max_width=width
            )
        else:
            y = scan_static(
                e, x, shape, axis, "Mul", exclusive, reverse, x.dtype, max_width=width
            )
            note = f"axis length {n}: {scan_plan(shape, axis, max_width=width)}"
        return e.done([y], note)
