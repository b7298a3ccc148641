"""Export PyTorch models whose cumprod / scatter_reduce / index_reduce torch.onnx gets wrong.

    from ort_dml_ops.torch import export
    export(model, (x, index, src), "model.onnx")      # torch.onnx.export(..., dynamo=True) + the table below

What torch 2.13's exporters do without it (measured; tests/test_torch_export.py pins each):
`torch.cumprod` cannot be exported at all (pytorch #102948); dynamo writes
`scatter_reduce(reduce="mean")` as a plain sum (silently wrong) and fails on `index_reduce`
and `segment_reduce`; TorchScript refuses `cumprod`, `index_reduce`, `segment_reduce`, `mean`,
`include_self=False` and `index_add` with duplicate indices. The public pieces, usable on their own:

- `custom_translation_table`: {aten overload: translation} for
  `torch.onnx.export(..., dynamo=True, custom_translation_table=...)`; `cumprod` becomes the
  project's `DOMAIN::CumProd` (ONNX CumProd-26 semantics), the scatters exact ScatterElements.
- `register_torchscript_symbolics()` / `TORCHSCRIPT_CUSTOM_OPSETS`: the same for `dynamo=False`.
- `onnx_schemas()`: a context manager registering the DOMAIN OpSchemas, inside which
  `onnx.checker.check_model(full_check=True)` accepts the exported model.

The exported model runs as it is through `ort_dml_ops.InferenceSession` (DOMAIN CumProd via
the Python fallback) and, after `ort_dml_ops.convert`, on the DirectML GPU. Needs torch and
onnxscript: `pip install 'ort-dml-ops[torch]'`; `import ort_dml_ops` never imports torch.
"""

from __future__ import annotations

from .._domain import DOMAIN, DOMAIN_VERSION
from ..domain_schemas import registered as onnx_schemas

#: `torch.onnx.export(..., dynamo=False, custom_opsets=...)`: the domain at its version
TORCHSCRIPT_CUSTOM_OPSETS = {DOMAIN: DOMAIN_VERSION}

__all__ = [
    "TORCHSCRIPT_CUSTOM_OPSETS",
    "custom_translation_table",
    "export",
    "onnx_schemas",
    "register_torchscript_symbolics",
]


def _require():
    try:
        import onnxscript  # noqa: F401 - the dynamo exporter needs it; say so before torch does
        import torch
    except ImportError as exc:
        raise ImportError(
            f"ort_dml_ops.torch needs torch and onnxscript ({exc}): pip install 'ort-dml-ops[torch]'"
        ) from None
    return torch


def export(model, args=(), f=None, **kwargs):
    """`torch.onnx.export(model, args, f, dynamo=True, **kwargs)` with this package's translations
    (a `custom_translation_table` you pass wins over ours, entry by entry). With `dynamo=False`
    the TorchScript symbolics are registered instead and opset 18 is the default. Returns what
    torch.onnx.export returns (an ONNXProgram for dynamo)."""
    torch = _require()
    if kwargs.get("dynamo", True):
        from .dynamo import translation_table

        kwargs["custom_translation_table"] = {
            **translation_table(),
            **(kwargs.get("custom_translation_table") or {}),
        }
    else:
        register_torchscript_symbolics()
        kwargs["custom_opsets"] = {
            **TORCHSCRIPT_CUSTOM_OPSETS,
            **(kwargs.get("custom_opsets") or {}),
        }
        kwargs.setdefault("opset_version", 18)
    return torch.onnx.export(model, args, f, **kwargs)


def register_torchscript_symbolics() -> None:
    """Register the `dynamo=False` symbolics (process-wide, as torch keeps them); idempotent."""
    _require()
    from .torchscript import register

    register()


def __getattr__(name: str):
    if name == "custom_translation_table":
        _require()
        from .dynamo import translation_table

        return translation_table()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
