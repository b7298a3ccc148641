"""CumSum on a long axis, for WebGPU -> the blocked Add scan of blockscan.py (Split, Add, Concat).

ORT's WebGPU CumSum (onnxruntime/core/providers/webgpu/math/cumsum.cc) computes every output
element by a loop over its whole prefix along the axis: O(n) reads per element, O(n²) work per
line. Measured on the plugin (docs/performance.md), it is tens of times slower than the CPU EP at
an axis length of 1000. The blocked scan of blockscan.py with Add does O(1) full passes per level
and log_w(n) levels (w = the target's Split/Concat width, 8 on WebGPU).

`auto` uses this rule on WebGPU only where the native kernel costs more (cost.native_costlier):
where the sizes are known, static or hinted with `convert --input-shape`, by cost.DeviceModel's
estimates of both; where only the axis length is, above the crossover measured on the plugin
(``cost_facts["cumsum_native_max_axis"]``); `lower` uses it everywhere it applies. A symbolic axis takes the run-time-length form of the scan
(blockscan_symbolic.scan_symbolic): the same radix levels with block counts computed at run
time, so the converted model still takes every length the original did.
Integers are exact (wrapping addition is associative). Floats are summed in another order than
the sequential loop: the result differs by rounding only, within the bound of any summation
order, (n-1)·2^-24·Σ|x| for float32 (n = axis length) — the report says so. Signed zeros are
ORT's CPU kernel's: its identity is −0.0 (blockscan.op_identity), so a prefix of −0.0 alone
sums to −0.0 as cumsum.cc's does, and an exclusive scan adds +0.0 last, as cumsum.cc starts
from it. (The plugin's own kernel starts every sum from +0.0, so it differs there: measured.)
"""

from __future__ import annotations

import onnx_ir as ir

from ..._domain import DOMAIN
from ._base import (
    FLOATS,
    Refusal,
    Rewrite,
    RewriteContext,
    Rule,
    const_array,
    scan_operands,
    static_shape,
)
from .blockscan import scan_plan, scan_static
from .blockscan_symbolic import scan_symbolic
from .emitter import Emitter

#: element types the WebGPU EP runs Add, Split and Concat for (recorded table, webgpu_0.4.0.json)
SUPPORTED = {
    ir.DataType.FLOAT,
    ir.DataType.FLOAT16,
    ir.DataType.INT32,
    ir.DataType.UINT32,
}


class CumSumScan(Rule):
    name = "cumsum-scan"
    ops = (("", "CumSum"), (DOMAIN, "CumSum"))
    action = "lowered"
    targets = ("webgpu",)
    summary = "blocked Add scan (Split, Add, Concat), no Split/Concat wider than the target allows"

    def check(self, node: ir.Node, ctx: RewriteContext) -> Refusal | None:
        x = node.inputs[0]
        axis_value = const_array(node.inputs[1]) if len(node.inputs) > 1 else None
        if x is None or axis_value is None:
            return Refusal(
                "axis-not-constant",
                "the axis input is not a constant; the scan is laid out at convert time",
            )
        shape = static_shape(x)
        if shape is None:
            return Refusal("rank-unknown", "the rank of the input is unknown")
        if x.dtype not in SUPPORTED:
            return Refusal(
                "dtype-unsupported",
                f"no exact device scan for element type {x.dtype.name if x.dtype else 'unknown'}",
            )
        axis = int(axis_value.reshape(-1)[0])
        if not -len(shape) <= axis < len(shape):
            return Refusal(
                "axis-out-of-range",
                f"axis {axis} is out of range for rank {len(shape)}",
            )
        return None

    def rewrite(self, node: ir.Node, ctx: RewriteContext) -> Rewrite:
        x, shape, axis, exclusive, reverse = scan_operands(node)
        assert x.dtype is not None  # check() passed
        width = ctx.options.get("max_io_width")
        e = Emitter(ctx, node.name or "CumSum")
        if shape[axis] is None:
            y, note = scan_symbolic(
                e, x, shape, axis, "Add", exclusive, reverse, x.dtype, width
            )
            note = f"axis length known at run time: {note}"
        else:
            y = scan_static(
                e, x, shape, axis, "Add", exclusive, reverse, x.dtype, max_width=width
            )
            note = (
                f"axis length {shape[axis]}: {scan_plan(shape, axis, max_width=width)}"
            )
        if x.dtype in FLOATS:
            note += "; float sums in blocked order: differs from the sequential sum by rounding, within (n-1)·eps·Σ|x|"
            if exclusive:
                # ORT's exclusive CumSum sums from +0.0 (cumsum.cc), so no output of it is −0.0;
                # the scan's identity is −0.0 (blockscan.op_identity), so its first item would be
                y = e.op("Add", y, e.scalar(0.0, x.dtype), dtype=x.dtype)
        return e.done([y], note)
