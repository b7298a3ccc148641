"""Reference semantics: numpy kernels for CumSum, CumProd and ScatterElements.

These are what the Python fallback runs and what the lowerings are held against; they are
themselves held against ONNX Runtime's CPU EP and onnx's ReferenceEvaluator in the tests.
"""

from .scan import cumprod, cumsum
from .scatter import REDUCTIONS, ScatterIndexError, scatter_elements

__all__ = ["REDUCTIONS", "ScatterIndexError", "cumprod", "cumsum", "scatter_elements"]
