"""Python custom-op fallback (onnxruntime-extensions) for DOMAIN::CumProd, CumSum, ScatterElements.

Always runs on the CPU EP. Use it through `ort_dml_ops.InferenceSession`, which registers
the kernels and rewrites a private copy of the model for them.
"""

from .rewrite import FALLBACK_OPS, prepare, uses_fallback
from .types import KERNEL_DOMAIN

# registry.py imports onnxruntime-extensions (and through it transformers and torch where they
# are installed: seconds): only a session that runs the kernels pays for it, not convert/inspect


def register() -> str:
    """Register every fallback kernel (idempotent) and return the custom-op library path."""
    from .registry import register as _register

    return _register()


def take_errors(session: str) -> list:
    """The errors the kernels recorded for a session tag (registry.take_errors)."""
    from .registry import take_errors as _take_errors

    return _take_errors(session)


__all__ = [
    "FALLBACK_OPS",
    "KERNEL_DOMAIN",
    "prepare",
    "register",
    "take_errors",
    "uses_fallback",
]
