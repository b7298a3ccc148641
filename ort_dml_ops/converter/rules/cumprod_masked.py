"""CumProd of float32 along an axis known only at run time -> blocks of masked products
(`masked_scan.py`): Where, ReduceProd, Pad, Slice, Mul, one Range and one Greater, 30 kernels
whatever the other dims (issue 28).

Tried before `cumprod.py`'s scans, which it replaces where it applies: the doubling scan (every
dim at run time) takes 62 kernels and 62 passes; the radix scan (only the axis at run time) 88–
139 kernels and about 8 passes, fewer bytes than these blocks' 21 (DeviceModel, cost.py: the
blocks win below about 2.2M elements, the sizes real models scan). Both remain options for
`tune`, which measures them on the device (tuning/candidates.py lists every rule that rewrites
the node). Static shapes keep `cumprod.py`'s plans, which cost.py weighs at the known size.
"""

from __future__ import annotations

import onnx_ir as ir

from ._base import Refusal, Rewrite, RewriteContext
from .cumprod import CumProdLowering
from .emitter import Emitter
from .masked_scan import WIDTHS, scan_masked_product
from .masked_scan import refusal as masked_refusal

#: non-view kernels of the lowering on the DML EP and the WebGPU plugin, whatever the shape
#: (tools/lowering_budget.py; cost.py weighs it, tests/converter/rules/test_cumprod.py counts it);
#: the masked sums of cumsum_masked.py take as many (tests/webgpu/test_lowering_width.py)
KERNELS = 30


class CumProdMaskedBlocks(CumProdLowering):
    name = "cumprod-masked-blocks"

    def check(self, node: ir.Node, ctx: RewriteContext) -> Refusal | None:
        refusal = super().check(node, ctx)
        if refusal is not None:
            return refusal
        x, shape, axis, _, _ = self.parse(node)
        return masked_refusal(
            x,
            shape[axis],
            "masked blocks fold with ReduceProd: ONNX Runtime's CPU EP has none for "
            "float16 and saturates integer products",
            "cumprod.py's plans weigh it",
        )

    def rewrite(self, node: ir.Node, ctx: RewriteContext) -> Rewrite:
        x, shape, axis, exclusive, reverse = self.parse(node)
        e = Emitter(ctx, node.name or "CumProd")
        y = scan_masked_product(e, x, axis, len(shape), exclusive, reverse)
        return e.done(
            [y],
            "symbolic axis length: blocks of masked products (widths "
            f"{', '.join(map(str, WIDTHS))}, then one block of the rest; exact for every "
            "length < 2^31 and for empty tensors)",
        )
