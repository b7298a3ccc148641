"""The converter behind `ort_dml_ops.convert`: rewrite a model so its CumSum, CumProd and scatter
nodes run on the target EP. (Not named `convert`: a subpackage would shadow that function.)

`pipeline.py` runs the steps (load, opset, shapes, per-node decision, rules, validate, report);
`rules/` holds the rewrite rules, one per module; `in_place.convert_model` converts an
`onnx_ir.Model` in place and returns the report.
"""

from __future__ import annotations

from .in_place import convert_model
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
    "convert_model",
]
