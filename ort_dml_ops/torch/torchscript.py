"""`torch.onnx.register_custom_op_symbolic` equivalents of the dynamo translations, for
`torch.onnx.export(..., dynamo=False)` (torch/onnx/_internal/torchscript_exporter/utils.py).

The TorchScript exporter refuses `aten::cumprod`, `aten::index_reduce`, `aten::segment_reduce`, `scatter_reduce` with
`mean` or `include_self=False` (symbolic_opset16.py / symbolic_opset18.py) and `index_add`
with duplicate indices (symbolic_opset9.py). The symbolics here emit the graphs of
`_semantics.py`; registered for opset 18 and later (ScatterElements' max/min reductions),
`cumprod` from opset 9.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch.onnx import symbolic_helper

from .._domain import DOMAIN
from . import _semantics

#: aten name -> the lowest opset its symbolic is registered for
OPSETS = {
    "aten::cumprod": 9,
    "aten::scatter_reduce": 18,
    "aten::index_reduce": 18,
    "aten::index_add": 18,
    "aten::segment_reduce": 18,
}
_FLOAT_KINDS = {"Float", "Double", "Half", "BFloat16"}


class _Ops:
    def __init__(self, g):
        self.g = g

    def __call__(self, op_type, *inputs, domain="", **attrs):
        suffixed = {
            f"{k}_{'s' if isinstance(v, str) else 'i'}": v for k, v in attrs.items()
        }
        return self.g.op(
            f"{domain}::{op_type}" if domain else op_type, *inputs, **suffixed
        )

    def ints(self, values):
        return self.g.op("Constant", value_t=torch.tensor(values, dtype=torch.int64))

    def scalar(self, value):
        return self.g.op(
            "Constant",
            value_t=torch.tensor(
                value, dtype=torch.float64 if isinstance(value, float) else torch.int64
            ),
        )

    def is_float(self, v) -> bool:
        return v.type().scalarType() in _FLOAT_KINDS

    def rank(self, v) -> int:
        rank = symbolic_helper._get_tensor_rank(v)
        if rank is None:
            raise ValueError(
                "ort_dml_ops.torch needs the rank of every input (torch.onnx knows none here)"
            )
        return rank


@symbolic_helper.parse_args("v", "i", "none")
def cumprod(g, x, dim, dtype):
    dtype = symbolic_helper._maybe_get_const(dtype, "i")
    if isinstance(dtype, int):
        from torch.onnx._internal.torchscript_exporter import _type_utils

        x = g.op("Cast", x, to_i=_type_utils.JitScalarType(dtype).onnx_type())
    return _semantics.cumprod(_Ops(g), x, dim, DOMAIN)


@symbolic_helper.parse_args("v", "i", "v", "v", "s", "b")
def scatter_reduce(g, x, dim, index, src, reduce, include_self):
    return _semantics.scatter_reduce(_Ops(g), x, dim, index, src, reduce, include_self)


@symbolic_helper.parse_args("v", "i", "v", "v", "s", "b")
def index_reduce(g, x, dim, index, source, reduce, include_self):
    return _semantics.index_reduce(_Ops(g), x, dim, index, source, reduce, include_self)


@symbolic_helper.parse_args("v", "i", "v", "v", "f")
def index_add(g, x, dim, index, source, alpha=1.0):
    return _semantics.index_add(
        _Ops(g), x, dim, index, source, 1 if alpha == 1 else alpha
    )


@symbolic_helper.parse_args("v", "s", "v", "v", "v", "i", "b", "none")
def segment_reduce(g, data, reduce, lengths, indices, offsets, axis, unsafe, initial):
    if (
        symbolic_helper._is_none(lengths)
        or not symbolic_helper._is_none(indices)
        or not symbolic_helper._is_none(offsets)
    ):
        raise ValueError("segment_reduce: only the lengths= form is translated")
    initial = (
        None
        if symbolic_helper._is_none(initial)
        else float(symbolic_helper._maybe_get_const(initial, "f"))
    )
    return _semantics.segment_reduce(_Ops(g), data, reduce, lengths, axis, initial)


_SYMBOLICS: dict[str, Callable[..., Any]] = {
    "aten::cumprod": cumprod,
    "aten::scatter_reduce": scatter_reduce,
    "aten::index_reduce": index_reduce,
    "aten::index_add": index_add,
    "aten::segment_reduce": segment_reduce,
}


def register() -> None:
    """Register the symbolics (process-wide, as torch keeps them); idempotent."""
    for name, fn in _SYMBOLICS.items():
        torch.onnx.register_custom_op_symbolic(name, fn, OPSETS[name])


def unregister() -> None:
    for name in _SYMBOLICS:
        torch.onnx.unregister_custom_op_symbolic(name, OPSETS[name])
