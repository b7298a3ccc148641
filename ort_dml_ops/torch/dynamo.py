"""`custom_translation_table` for `torch.onnx.export(..., dynamo=True)`.

torch's exporter calls each entry with onnxscript's traced values (see torch/onnx/_internal/
exporter/_building.py: custom translations run under onnxscript's tracing evaluator), so the
graphs of `_semantics.py` are built with onnxscript's opset-18 ops and the project's domain.
"""

from __future__ import annotations

import numpy as np
import onnx
import onnxscript
import torch
from onnxscript import opset18

from .._domain import DOMAIN, DOMAIN_VERSION
from ..domain_schemas import op_schema
from . import _semantics

_DOMAIN_OPSET = onnxscript.values.Opset(DOMAIN, DOMAIN_VERSION)
_FLOAT_TYPES = {
    onnx.TensorProto.FLOAT,
    onnx.TensorProto.FLOAT16,
    onnx.TensorProto.DOUBLE,
    onnx.TensorProto.BFLOAT16,
}


class _Ops:
    def __call__(self, op_type, *inputs, domain="", **attrs):
        if (
            domain
        ):  # an Op built by hand: onnxscript would look its schema up in onnx.defs
            return onnxscript.values.Op(_DOMAIN_OPSET, op_type, op_schema(op_type))(
                *inputs, **attrs
            )
        return getattr(opset18, op_type)(*inputs, **attrs)

    def ints(self, values):
        return opset18.Constant(
            value=onnx.numpy_helper.from_array(np.array(values, np.int64))
        )

    def scalar(self, value):
        return opset18.Constant(
            value=onnx.numpy_helper.from_array(
                np.array(value, np.float64 if isinstance(value, float) else np.int64)
            )
        )

    def is_float(self, v) -> bool:
        return v.dtype is not None and int(v.dtype) in _FLOAT_TYPES

    def rank(self, v) -> int:
        return len(v.shape)


_ops = _Ops()


def cumprod(x, dim: int, dtype=None):
    if dtype is not None:
        x = opset18.Cast(
            x, to=int(dtype)
        )  # torch hands the dtype over as an onnx_ir DataType
    return _semantics.cumprod(_ops, x, dim, DOMAIN)


def scatter_reduce(x, dim: int, index, src, reduce: str, include_self: bool = True):
    return _semantics.scatter_reduce(_ops, x, dim, index, src, reduce, include_self)


def index_reduce(x, dim: int, index, source, reduce: str, include_self: bool = True):
    return _semantics.index_reduce(_ops, x, dim, index, source, reduce, include_self)


def segment_reduce(
    data,
    reduce: str,
    *,
    lengths=None,
    indices=None,
    offsets=None,
    axis: int = 0,
    unsafe=False,
    initial=None,
):
    if lengths is None or indices is not None or offsets is not None:
        raise ValueError("segment_reduce: only the lengths= form is translated")
    return _semantics.segment_reduce(_ops, data, reduce, lengths, axis, initial)


def translation_table() -> dict:
    """aten overload -> translation, for `torch.onnx.export(custom_translation_table=...)`."""
    aten = torch.ops.aten
    return {
        aten.cumprod.default: cumprod,
        aten.scatter_reduce.two: scatter_reduce,
        aten.index_reduce.default: index_reduce,
        aten.segment_reduce.default: segment_reduce,
    }
