"""CumSum of float32 along an axis known only at run time, for WebGPU -> blocks of masked sums
(`masked_scan.py` with ReduceSum and Add): about 30 kernels whatever the other dims (issue 28).

The run-time form of the blocked Add scan (`cumsum_scan.py`, blockscan_symbolic.scan_symbolic)
takes 87–100 kernels where the other dims are static and the 31-step doubling scan (62
kernels, 62 passes) where they are not. These blocks are CumProd's (`cumprod_masked.py`) with
the sum's fold: Where puts +0.0 where an item is not in the target's prefix, ReduceSum folds
each block, Add applies the carry. Values: the same additions in blocks, within the bound of any
summation order, (n − 1)·2^-24·Σ|x|. Signed zeros: no output is −0.0 (masked_scan.SUM says
why), as with the plugin's own CumSum, which sums from +0.0; ORT's CPU kernel gives −0.0 for a
prefix of −0.0 alone, and the blocked scan of `cumsum_scan.py` keeps that.

Tried before `cumsum_scan.py`, which stays an option for `tune` (tuning/candidates.py lists
every rule that rewrites a node): the blocks write more bytes (21–30 passes against about 8) for
a third of the dispatches. float32 only: the blocks cut with Slice, which the plugin has no
integer kernel for (an int32 scan would copy), and float16 keeps the scan whose bound is
tested.
"""

from __future__ import annotations

import onnx_ir as ir

from ._base import Refusal, Rewrite, RewriteContext, scan_operands
from .cumsum_scan import CumSumScan
from .emitter import Emitter
from .masked_scan import SUM, WIDTHS, scan_masked
from .masked_scan import refusal as masked_refusal


class CumSumMaskedBlocks(CumSumScan):
    name = "cumsum-masked-blocks"
    summary = "blocks of masked sums (Where, ReduceSum, Add), along a run-time axis"

    def check(self, node: ir.Node, ctx: RewriteContext) -> Refusal | None:
        refusal = super().check(node, ctx)
        if refusal is not None:
            return refusal
        x, shape, axis, _, _ = scan_operands(node)
        return masked_refusal(
            x,
            shape[axis],
            "masked blocks cut with Slice, which the plugin has no integer kernel for; "
            "other types take the blocked scan",
            "the blocked scan's plan fits it",
        )

    def rewrite(self, node: ir.Node, ctx: RewriteContext) -> Rewrite:
        x, shape, axis, exclusive, reverse = scan_operands(node)
        e = Emitter(ctx, node.name or "CumSum")
        y = scan_masked(e, x, axis, len(shape), exclusive, reverse, SUM)
        return e.done(
            [y],
            "axis length known at run time: blocks of masked sums (widths "
            f"{', '.join(map(str, WIDTHS))}, then one block of the rest; exact for every "
            "length < 2^31 and for empty tensors); float sums in blocked order: differs from "
            "the sequential sum by rounding, within (n-1)·eps·Σ|x|; a zero sum is +0.0, as the "
            "plugin's own CumSum gives it",
        )
