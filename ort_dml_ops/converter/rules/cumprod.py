"""CumProd (the project's DOMAIN::CumProd and ONNX CumProd-26) -> Mul, Split, Concat, Reshape:
the blocked scan of blockscan.py with Mul, laid out at convert time for a static axis length and
with run-time block counts for a symbolic one (the module's docstring says how).

Where every dim is static and the target's Pad takes negative pads (DML, WebGPU), the doubling
scan is the other option: ⌈log2 n⌉ steps y = y · shift(y, 2^k), each ONE Pad and one Mul (a
Pad, a Slice and a Mul in a reverse scan on DML, whose Pad mishandles a negative start pad) — fewer
kernels than the blocked scan's Splits, chains and Concats, more full-size passes. Each
kernel is a dispatch on a GPU, each pass a read and write of the tensor (issue 28): the one
`cost.DEVICE` estimates cheaper is emitted, and the report says which and why.

The axis must be a constant and the rank known. Never Exp/Log. Integers are exact (wrapping
multiplication is associative); floats differ from the sequential reference only by rounding:
see docs/convert.md for the bound.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import onnx_ir as ir

from ..._domain import DOMAIN
from . import cost
from ._base import (
    Refusal,
    Rewrite,
    RewriteContext,
    Rule,
    const_array,
    scan_operands,
    static_shape,
)
from .blockscan import op_identity, scan_kernels, scan_plan, scan_static
from .blockscan_symbolic import crops, hillis_steele, scan_symbolic
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

    #: (x, its shape, the axis in [0, rank), exclusive, reverse) of a node `check` passed
    parse = staticmethod(scan_operands)

    def rewrite(self, node: ir.Node, ctx: RewriteContext) -> Rewrite:
        x, shape, axis, exclusive, reverse = self.parse(node)
        assert x.dtype is not None  # check() passed
        e = Emitter(ctx, node.name or "CumProd")
        n = shape[axis]
        width = ctx.options.get("max_io_width")
        if n is None:
            y, note = scan_symbolic(
                e, x, shape, axis, "Mul", exclusive, reverse, x.dtype, max_width=width
            )
        else:
            plan = static_plan(ctx, x.dtype, shape, axis, exclusive, reverse, width)
            if plan is not None and plan.doubling:
                one = e.scalar(op_identity("Mul", x.dtype), x.dtype)
                steps = math.ceil(math.log2(n))
                y = hillis_steele(
                    e,
                    x,
                    n,
                    axis,
                    len(shape),
                    "Mul",
                    one,
                    exclusive,
                    reverse,
                    x.dtype,
                    steps,
                )
                note = f"axis length {n}: {plan.reason}"
            else:
                y = scan_static(
                    e,
                    x,
                    shape,
                    axis,
                    "Mul",
                    exclusive,
                    reverse,
                    x.dtype,
                    max_width=width,
                )
                note = f"axis length {n}: {scan_plan(shape, axis, max_width=width)}"
        return e.done([y], note)


class StaticPlan(NamedTuple):
    """The scan a CumProd of static sizes takes, and what it costs: `kernels` dispatches and
    `passes` full-size writes; `reason`, where the doubling scan is taken, says why."""

    doubling: bool
    kernels: int
    passes: float
    reason: str = ""


def static_plan(
    ctx: RewriteContext,
    dtype: ir.DataType,
    shape: list[int | None],
    axis: int,
    exclusive: bool,
    reverse: bool,
    width: int | None,
) -> StaticPlan | None:
    """The cheaper of the blocked and the doubling scan for this node, or None where the sizes
    are not all known (then the blocked scan: its kernels are `blockscan.scan_kernels`').

    Both are counted, not guessed: the blocked plan's kernels from its layout
    (blockscan.scan_kernels, what `inspect` counts); its passes are `cost.SCAN_PASSES`
    (measured; `cost.CHAIN_PASSES` for one chain); the doubling plan's are its shifts' and
    Muls' (`shift`), each writing the whole tensor. Where the target's Pad takes no negative
    pads there is no doubling scan. `cost` reports the plan's figures, the rewrite emits it."""
    n = shape[axis]
    if n is None or n < 2 or any(d is None for d in shape):
        return None
    blocked_kernels = scan_kernels(shape, axis, exclusive, width)
    assert blocked_kernels is not None  # every dim is known
    scratch = Emitter(RewriteContext(opset=ctx.opset, target=ctx.target), "count")
    plan = scan_plan(shape, axis, max_width=width)
    blocked_passes = cost.CHAIN_PASSES if plan == "single chain" else cost.SCAN_PASSES
    blocked_plan = StaticPlan(False, blocked_kernels, blocked_passes)
    if not crops(scratch, False):
        return blocked_plan
    steps = math.ceil(math.log2(n))
    per_shift = 1 if crops(scratch, reverse) else 2  # else a Pad and a Slice (`shift`)
    kernels = (1 + per_shift) * steps + per_shift * int(exclusive)
    passes = float(kernels)
    full_bytes = math.prod(d for d in shape if d is not None) * int(dtype.itemsize)
    mine = cost.DEVICE.device_us(kernels, passes, full_bytes, 0)
    blocked = cost.DEVICE.device_us(blocked_kernels, blocked_passes, full_bytes, 0)
    if mine >= blocked:
        return blocked_plan
    return StaticPlan(
        True,
        kernels,
        passes,
        f"doubling scan, {steps} steps of {'Pad (negative pads)' if per_shift == 1 else 'Pad, Slice'}"
        f" and Mul: {kernels} kernels, "
        f"{passes:g} passes, estimated {mine:.0f} µs; the blocked scan ({plan}): "
        f"{blocked_kernels} kernels, {blocked_passes:g} passes, {blocked:.0f} µs "
        "(rules/cost.py DeviceModel)",
    )
