"""The steps of `convert`, as `onnx_ir.passes` passes (one per module) on the one onnx-ir
model, run in this order by `pipeline.run_passes`:

1. `OpsetPass` — bring ai.onnx 22–26 down to one the target serves, or 18–26 to 17 where a
   scatter without a reduction gets the DML EP's own kernel there (rules/opset.py);
2. `InlineFamilyFunctionsPass` — inline the model-local functions that hold a family node;
3. `InferShapesPass` — onnx's shape inference, the project's domain ops read as their twins;
4. `FoldStaticIfsPass` — inline the If nodes the declared shapes decide (rules/fold_if.py);
5. `CollectNamesPass` — the names in use (new names avoid them);
6. `RefuseStaticErrorsPass` — refuse a family node whose error shows without running it;
7. `DropAllowzeroPass` — DML's whole-graph normalization (report: `normalized`);
8. `RewritePass` — place (the Target says which EP runs the node and why) and rewrite (rules/);
9. `CheckFallbackTypesPass` — what the Python fallback receives it can run;
10. `FixDomainImportPass` — the project's domain imported exactly where it is used;
11. `RestoreDeclarationsPass` — graph I/O and value_info as the input declared them;
12. `NameRunTimeDimsPass` — the values the rules made declared, their run-time dims named
    equal only where provably equal, so ONNX Runtime reuses their buffers (converter/dim_names.py).
"""

from __future__ import annotations

import onnx_ir.passes

from .allowzero import DropAllowzeroPass
from .declarations import Declared, RestoreDeclarationsPass
from .dim_names import NameRunTimeDimsPass
from .domain_import import FixDomainImportPass
from .fallback_types import CheckFallbackTypesPass
from .fold_if import FoldStaticIfsPass
from .inline_functions import InlineFamilyFunctionsPass
from .names import CollectNamesPass
from .opset import OpsetPass
from .rewrite import RewritePass
from .shapes import InferShapesPass
from .state import ConvertState
from .static_errors import RefuseStaticErrorsPass


def convert_passes(state: ConvertState) -> onnx_ir.passes.PassManager:
    """The passes above for one conversion, each run once."""
    return onnx_ir.passes.PassManager(
        [
            OpsetPass(state),
            InlineFamilyFunctionsPass(state),
            InferShapesPass(state),
            FoldStaticIfsPass(state),
            CollectNamesPass(state),
            RefuseStaticErrorsPass(),
            DropAllowzeroPass(state),
            RewritePass(state),
            CheckFallbackTypesPass(state),
            FixDomainImportPass(),
            RestoreDeclarationsPass(state),
            NameRunTimeDimsPass(state),
        ],
        steps=1,
    )


__all__ = [
    "CheckFallbackTypesPass",
    "CollectNamesPass",
    "ConvertState",
    "Declared",
    "DropAllowzeroPass",
    "FixDomainImportPass",
    "FoldStaticIfsPass",
    "InferShapesPass",
    "InlineFamilyFunctionsPass",
    "NameRunTimeDimsPass",
    "OpsetPass",
    "RefuseStaticErrorsPass",
    "RestoreDeclarationsPass",
    "RewritePass",
    "convert_passes",
]
