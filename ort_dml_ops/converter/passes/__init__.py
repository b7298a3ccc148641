"""The steps of `convert` that work on the one onnx-ir model, as `onnx_ir.passes` passes
(one per module), run in this order by `pipeline.convert`:

1. `RefuseStaticErrorsPass` — refuse a family node whose error shows without running it;
2. `DropAllowzeroPass` — DML's whole-graph normalization (report: `normalized`);
3. `RewritePass` — place (the Target says which EP runs the node and why) and rewrite (rules/);
4. `CheckFallbackTypesPass` — what the Python fallback receives it can run;
5. `FixDomainImportPass` — the project's domain imported exactly where it is used.
"""

from __future__ import annotations

import onnx_ir.passes

from .allowzero import DropAllowzeroPass
from .domain_import import FixDomainImportPass
from .fallback_types import CheckFallbackTypesPass
from .rewrite import RewritePass
from .state import ConvertState
from .static_errors import RefuseStaticErrorsPass


def convert_passes(state: ConvertState) -> onnx_ir.passes.PassManager:
    """The passes above for one conversion, each run once."""
    return onnx_ir.passes.PassManager(
        [
            RefuseStaticErrorsPass(),
            DropAllowzeroPass(state),
            RewritePass(state),
            CheckFallbackTypesPass(state),
            FixDomainImportPass(),
        ],
        steps=1,
    )


__all__ = [
    "CheckFallbackTypesPass",
    "ConvertState",
    "DropAllowzeroPass",
    "FixDomainImportPass",
    "RefuseStaticErrorsPass",
    "RewritePass",
    "convert_passes",
]
