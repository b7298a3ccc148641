"""ort-dml-ops: run ONNX CumSum, CumProd and ScatterElements on the DirectML GPU.

Public names are imported lazily so that `import ort_dml_ops` stays cheap and the pieces
(session, builder, converter, inspector) load only when used.
"""

from ._domain import DOMAIN, DOMAIN_VERSION
from ._version import __version__
from .errors import UserError

# public name -> (module, attribute). Modules are named so they never shadow a function.
_LAZY = {
    "InferenceSession": ("session", "InferenceSession"),
    "GraphBuilder": ("builder", "GraphBuilder"),
    "convert": ("conversion", "convert"),
    "inspect": ("inspection", "inspect"),
}

__all__ = ["DOMAIN", "DOMAIN_VERSION", "UserError", "__version__", *_LAZY]


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        module, attr = _LAZY[name]
        value = getattr(importlib.import_module(f"{__name__}.{module}"), attr)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
