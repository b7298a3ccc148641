"""Compatibility import: the converter lives in `ort_dml_ops.converter` (issue 14's layout)."""

from __future__ import annotations

from .converter.pipeline import (
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
