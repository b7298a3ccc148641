"""onnxscript rewrite rules (onnxscript.rewriter.pattern) mirroring two of convert's rules;
see ort_dml_ops/passes.py for which and why. Each rule's decision comes from the same table
or kernel query `convert` uses, so the two views cannot disagree.
"""

from __future__ import annotations

import onnx_ir as ir
from onnxscript.rewriter import pattern

from ._domain import DOMAIN
from .converter.rules.cumprod_native import cpu_has_cumprod
from .converter.rules.cumsum_cast import CASTS
from .errors import UserError

#: the EPs whose CumSum kernels lack float64 / bfloat16 (targets of convert's cumsum-cast rule)
CAST_TARGETS = ("dml", "cuda")
TARGETS = ("dml", "cuda", "webgpu", "cpu")


def _scan_attrs(node: ir.Node) -> dict[str, int]:
    return {
        k: int(a.value)
        for k, a in node.attributes.items()
        if k in ("exclusive", "reverse")
    }


class _Rule(pattern.RewriteRuleClassBase):
    """Keeps the matched node from `check` for `rewrite` (which reads its exclusive / reverse)."""

    _node: ir.Node

    def check(self, op, *args, **kwargs):
        # op: the match context (named as in the base class); then the pattern's values
        self._node = op.root
        x = kwargs["x"] if "x" in kwargs else args[0]
        return self.applies(op, x)

    def applies(self, context, x) -> bool:
        raise NotImplementedError


class CumSumCast(_Rule):
    """CumSum(x: float64 | bfloat16) -> Cast(CumSum(Cast(x, float32)), back) (converter/rules/cumsum_cast.py)."""

    def pattern(self, op, x, axis):
        return op.CumSum(x, axis, _allow_other_attributes=True)

    def applies(self, context, x) -> bool:
        return x.dtype in CASTS

    def rewrite(self, op, x, axis, **_):
        node = self._node
        to = CASTS[x.dtype][0]
        summed = op.CumSum(op.Cast(x, to=int(to)), axis, **_scan_attrs(node))
        return op.Cast(summed, to=int(x.dtype))


class CumProdToOnnx26(_Rule):
    """DOMAIN::CumProd -> ONNX CumProd-26 (converter/rules/cumprod_native.py): only where the model imports ai.onnx >= 26
    and the installed ONNX Runtime has the CPU kernel."""

    def pattern(self, op, x, axis):
        return op.CumProd(x, axis, _domain=DOMAIN, _allow_other_attributes=True)

    def applies(self, context, x) -> bool:
        return context.model.opset_imports.get("", 0) >= 26 and cpu_has_cumprod()

    def rewrite(self, op, x, axis, **_):
        return op.CumProd(x, axis, **_scan_attrs(self._node))


def rule_set(target: str) -> pattern.RewriteRuleSet:
    if target not in TARGETS:
        raise UserError(
            f"unknown target {target!r}; choose one of: {', '.join(TARGETS)}"
        )
    rules = []
    if target in CAST_TARGETS:
        rules.append(CumSumCast.rule())
    if target == "cpu":
        rules.append(CumProdToOnnx26.rule())
    return pattern.RewriteRuleSet(rules)
