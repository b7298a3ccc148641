"""Rewrite rules, one per file, each with its tests under tests/converter/rules/.

`RULES` is tried in order for each node of the three families (`FAMILY_OPS`); the first rule
whose `check` passes rewrites the node. `opset.plan` is the whole-model opset step that runs
before them; `fallback.route_to_fallback` routes a node to the Python custom ops.
"""

from __future__ import annotations

from ..._domain import DOMAIN
from ._base import Refusal, Rewrite, RewriteContext, Rule
from .cumprod import CumProdLowering
from .cumprod_masked import CumProdMaskedBlocks
from .cumprod_native import CumProdToOnnx
from .cumsum_cast import CumSumCast
from .cumsum_masked import CumSumMaskedBlocks
from .cumsum_scan import CumSumScan
from .emitter import Emitter
from .narrow import NarrowToInt32
from .scatter import ScatterLowering

#: (domain, op_type) of every node convert() considers
FAMILY_OPS = {
    ("", "CumSum"),
    ("", "CumProd"),
    ("", "ScatterElements"),
    ("", "ScatterND"),
    ("", "Scatter"),
    (DOMAIN, "CumSum"),
    (DOMAIN, "CumProd"),
    (DOMAIN, "ScatterElements"),
}

#: tried in order; the first whose check passes rewrites the node
RULES: tuple[Rule, ...] = (
    CumProdToOnnx(),
    CumProdMaskedBlocks(),
    CumProdLowering(),
    CumSumCast(),
    NarrowToInt32(),
    CumSumMaskedBlocks(),
    CumSumScan(),
    ScatterLowering(),
)

__all__ = [
    "FAMILY_OPS",
    "RULES",
    "Emitter",
    "Refusal",
    "Rewrite",
    "RewriteContext",
    "Rule",
]
