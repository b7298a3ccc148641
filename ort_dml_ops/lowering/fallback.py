"""Route a node to the project's Python custom ops: same op type in DOMAIN, same inputs/attrs.

`ort_dml_ops.InferenceSession` runs the DOMAIN ops on any dtype (it casts float16/bfloat16
around its kernels in its private copy of the model). The legacy `Scatter` op is
ScatterElements without reduction, so it goes to DOMAIN::ScatterElements. ScatterND has no
fallback kernel.
"""

from __future__ import annotations

import onnx_ir as ir

from .._domain import DOMAIN
from ._base import Rewrite, RewriteContext

#: ONNX op type -> the fallback op that computes it
FALLBACK_OPS = {"CumSum": "CumSum", "CumProd": "CumProd", "ScatterElements": "ScatterElements", "Scatter": "ScatterElements"}


def route_to_fallback(node: ir.Node, ctx: RewriteContext) -> Rewrite | None:
    op = FALLBACK_OPS.get(node.op_type)
    if op is None:
        return None
    name = ctx.unique(f"{node.name or node.op_type}/fallback")
    outs = [ir.Value(name=ctx.unique(f"{name}:{i}")) for i in range(len(node.outputs))]
    attrs = [a for a in node.attributes.values()]
    new = ir.Node(DOMAIN, op, list(node.inputs), [ir.Attr(a.name, a.type, a.value) for a in attrs], outputs=outs, name=name)
    x = node.inputs[0]
    note = ""
    if x is not None and x.dtype in (ir.DataType.FLOAT16, ir.DataType.BFLOAT16):
        note = f"{x.dtype.name} runs through float32 casts inside ort_dml_ops.InferenceSession"
    return Rewrite([new], outs, note)
