"""DOMAIN::CumProd -> ONNX CumProd-26 for the CPU target, where the installed ONNX Runtime has it.

Only in models that already import ai.onnx 26: moving a whole model to opset 26 to gain one
kernel is not worth the risk of changing other nodes.
"""

from __future__ import annotations

import functools

import onnx_ir as ir

from ..._domain import DOMAIN
from ._base import Refusal, Rewrite, RewriteContext, Rule


@functools.cache
def cpu_has_cumprod() -> bool:
    try:
        from onnxruntime.capi import _pybind_state as C

        return any(
            k.op_name == "CumProd"
            and k.domain in ("", "ai.onnx")
            and k.provider == "CPUExecutionProvider"
            for k in C.get_all_opkernel_def()
        )
    except Exception:  # noqa: BLE001  # pragma: no cover - no kernel registry: no kernel
        return False


class CumProdToOnnx(Rule):
    name = "cumprod-onnx26"
    ops = ((DOMAIN, "CumProd"),)
    action = "native"
    targets = ("cpu",)
    summary = "DOMAIN::CumProd -> ONNX CumProd-26 (same semantics)"

    def check(self, node: ir.Node, ctx: RewriteContext) -> Refusal | None:
        if ctx.opset < 26:
            return Refusal("opset-too-old", f"the model imports opset {ctx.opset} < 26")
        if not cpu_has_cumprod():
            return Refusal(
                "no-runtime-kernel",
                "the installed ONNX Runtime has no CPU CumProd kernel",
            )
        return None

    def rewrite(self, node: ir.Node, ctx: RewriteContext) -> Rewrite:
        name = ctx.unique(f"{node.name or 'CumProd'}/onnx")
        out = ir.Value(name=ctx.unique(f"{name}:0"))
        attrs = [ir.Attr(a.name, a.type, a.value) for a in node.attributes.values()]
        return Rewrite(
            [
                ir.Node(
                    "", "CumProd", list(node.inputs), attrs, outputs=[out], name=name
                )
            ],
            [out],
        )
