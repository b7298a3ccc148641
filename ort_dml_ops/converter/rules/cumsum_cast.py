"""CumSum of a type the target EP has no kernel for -> Cast to a type it has, CumSum, Cast back.

DML (OperatorRegistration.cpp) registers CumSum for float16, float32, int32, uint32, int64,
uint64. float64 goes through float32: each element is rounded to float32 (relative error
2^-24) and the sum accumulates in float32 (error ≤ n·2^-24·Σ|x| per output, instead of
n·2^-53·Σ|x|) — the report states it. bfloat16 goes through float32: more precise than a
bfloat16 accumulation, the result rounded once to bfloat16.
"""

from __future__ import annotations

import onnx_ir as ir

from ..._domain import DOMAIN
from ._base import Refusal, Rewrite, RewriteContext, Rule
from .emitter import Emitter

#: source dtype -> (compute dtype, precision consequence)
CASTS = {
    ir.DataType.DOUBLE: (
        ir.DataType.FLOAT,
        (
            "float64 summed in float32: inputs rounded to float32 (rel. 2^-24) and "
            "accumulation error up to n*2^-24*sum|x| instead of n*2^-53*sum|x|"
        ),
    ),
    ir.DataType.BFLOAT16: (
        ir.DataType.FLOAT,
        (
            "bfloat16 summed in float32, result rounded once to bfloat16 "
            "(more precise than a bfloat16 accumulation)"
        ),
    ),
}


class CumSumCast(Rule):
    name = "cumsum-cast"
    ops = (("", "CumSum"), (DOMAIN, "CumSum"))
    action = "cast"
    targets = ("dml", "cuda")
    summary = "Cast -> CumSum -> Cast"

    def check(self, node: ir.Node, ctx: RewriteContext) -> Refusal | None:
        x = node.inputs[0]
        if x is None or x.type is None:
            return Refusal("dtype-unknown", "the input element type is unknown")
        if x.dtype not in CASTS:
            name = x.dtype.name if x.dtype is not None else "unknown"
            return Refusal("no-cast-needed", f"{name} CumSum needs no cast")
        return None

    def rewrite(self, node: ir.Node, ctx: RewriteContext) -> Rewrite:
        x = node.inputs[0]
        assert x is not None and x.dtype is not None  # check() passed
        source = x.dtype
        to, note = CASTS[source]
        e = Emitter(ctx, node.name or "CumSum")
        attrs: dict = {
            k: int(a.value)
            for k, a in node.attributes.items()
            if k in ("exclusive", "reverse")
        }
        y = e.op("CumSum", e.cast(x, to), node.inputs[1], dtype=to, **attrs)
        return e.done([e.cast(y, source)], note)
