"""The converter behind `ort_dml_ops.convert`: rewrite a model so its CumSum, CumProd and scatter
nodes run on the target EP. (Not named `convert`: a subpackage would shadow that function.)

`pipeline.py` runs the steps (load, opset, shapes, per-node decision, rules, validate, report);
`rules/` holds the rewrite rules, one per module.
"""

from __future__ import annotations

from .pipeline import (
    INLINE_LIMIT,
    STRATEGIES,
    TARGETS,
    ConvertReport,
    ConvertResult,
    NodeReport,
    convert,
)

__all__ = [
    "INLINE_LIMIT",
    "STRATEGIES",
    "TARGETS",
    "ConvertReport",
    "ConvertResult",
    "NodeReport",
    "convert",
]
