"""The converter behind `ort_dml_ops.convert`: rewrite a model so its CumSum, CumProd and scatter
nodes run on the target EP. (Not named `convert`: a subpackage would shadow that function.)

`pipeline.py` loads the model into onnx-ir once, runs the steps of `passes/` (opset, shapes,
If folding, per-node decision and rules, ...: onnx-ir passes) on that one model, serializes,
validates and reports; `rules/` holds the rewrite rules, one per module;
`in_place.convert_model` runs the same passes on a caller's `onnx_ir.Model` and returns the
report.
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
