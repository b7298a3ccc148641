"""Python custom-op fallback (onnxruntime-extensions) for DOMAIN::CumProd, CumSum, ScatterElements.

Always runs on the CPU EP. Use it through `ort_dml_ops.InferenceSession`, which registers
the kernels and rewrites a private copy of the model for them.
"""

from .registry import KERNEL_DOMAIN, register, take_errors
from .rewrite import FALLBACK_OPS, prepare, uses_fallback

__all__ = [
    "FALLBACK_OPS",
    "KERNEL_DOMAIN",
    "prepare",
    "register",
    "take_errors",
    "uses_fallback",
]
