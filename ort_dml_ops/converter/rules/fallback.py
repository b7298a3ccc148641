"""Route a node to the project's Python custom ops: same op type in DOMAIN, same inputs/attrs.

`ort_dml_ops.InferenceSession` runs the DOMAIN ops on any dtype (it casts float16/bfloat16
around its kernels in its private copy of the model). The legacy `Scatter` op is
ScatterElements without reduction, so it goes to DOMAIN::ScatterElements. ScatterND goes there
too, on the flattened data: its update elements' flat positions (the scatter rule's position
graph, which also normalises negative indices) in update order, so duplicates reduce in the
same order as ONNX Runtime's sequential ScatterND kernel.
"""

from __future__ import annotations

import onnx_ir as ir

from ..._domain import DOMAIN
from ._base import Rewrite, RewriteContext
from .emitter import Emitter

#: ONNX op type -> the fallback op that computes it
FALLBACK_OPS = {
    "CumSum": "CumSum",
    "CumProd": "CumProd",
    "ScatterElements": "ScatterElements",
    "Scatter": "ScatterElements",
}


def route_to_fallback(node: ir.Node, ctx: RewriteContext) -> Rewrite | None:
    if node.op_type == "ScatterND" and node.domain in ("", "ai.onnx"):
        return _scatter_nd_via_elements(node, ctx)
    op = FALLBACK_OPS.get(node.op_type)
    if op is None:
        return None
    name = ctx.unique(f"{node.name or node.op_type}/fallback")
    outs = [ir.Value(name=ctx.unique(f"{name}:{i}")) for i in range(len(node.outputs))]
    attrs = [a for a in node.attributes.values()]
    new = ir.Node(
        DOMAIN,
        op,
        list(node.inputs),
        [ir.Attr(a.name, a.type, a.value) for a in attrs],
        outputs=outs,
        name=name,
    )
    x = node.inputs[0]
    note = ""
    if x is not None and x.dtype in (ir.DataType.FLOAT16, ir.DataType.BFLOAT16):
        note = f"{x.dtype.name} runs through float32 casts inside ort_dml_ops.InferenceSession"
    return Rewrite([new], outs, note)


def _scatter_nd_via_elements(node: ir.Node, ctx: RewriteContext) -> Rewrite | None:
    from . import sizes
    from .scatter import positions_nd

    data, indices, updates = (list(node.inputs) + [None] * 3)[:3]
    if (
        data is None
        or indices is None
        or updates is None
        or indices.shape is None
        or data.shape is None
        or not isinstance(indices.shape[-1], int)
        or indices.shape[-1] < 1
    ):
        return None
    e = Emitter(ctx, f"{node.name or node.op_type}/fallback")
    idx = (
        e.cast(indices, ir.DataType.INT64)
        if indices.dtype != ir.DataType.INT64
        else indices
    )
    pos, _, _, _ = positions_nd(
        e, idx, sizes.dims(e, indices), sizes.dims(e, data), check=False
    )
    reduction = node.attributes.get("reduction")
    flat = e.op(
        "ScatterElements",
        e.reshape(data, [-1]),
        pos,
        e.reshape(updates, [-1]),
        domain=DOMAIN,
        axis=0,
        reduction=reduction.value if reduction is not None else "none",
    )
    y = e.reshape(flat, sizes.shape_tensor(e, data))
    note = "ScatterND on the flattened data through the fallback ScatterElements"
    if data.dtype in (ir.DataType.FLOAT16, ir.DataType.BFLOAT16):
        note += f"; {data.dtype.name} runs through float32 casts inside ort_dml_ops.InferenceSession"
    return e.done([y], note)
