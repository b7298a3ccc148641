"""Value types and opset imports, in the spelling the kernel tables use.

`type_string` turns what a model says about a value (a TensorProto element type, an
onnx.TypeProto, or already a string) into ONNX Runtime's type string ("tensor(float)",
"seq(tensor(int64))"), the spelling of the kernel tables' type constraints
(targets/data/*.json) and of onnx's schemas. `opsets_of` reads a model's opset imports as
{domain: version} with ai.onnx spelled "".
"""

from __future__ import annotations

from collections.abc import Mapping

import onnx

from . import schemas


def type_string(t) -> str | None:
    """Normalize a value type: 'tensor(float)', an onnx.TypeProto, a TensorProto elem type int."""
    if t is None or isinstance(t, str):
        return t
    if isinstance(t, int):
        return _elem_str(t)
    if isinstance(t, onnx.TypeProto):
        which = t.WhichOneof("value")
        if which == "tensor_type":
            return _elem_str(t.tensor_type.elem_type)
        if which == "sequence_type":
            inner = type_string(t.sequence_type.elem_type)
            return f"seq({inner})" if inner else "seq(?)"
        if which == "optional_type":
            inner = type_string(t.optional_type.elem_type)
            return f"optional({inner})" if inner else "optional(?)"
        if which == "sparse_tensor_type":
            return "sparse_tensor"
        return None
    raise TypeError(f"cannot read a value type from {type(t).__name__}")


def _elem_str(e: int) -> str | None:
    return _ELEM_NAMES.get(e) if e else None


_ELEM_NAMES = {
    1: "tensor(float)",
    2: "tensor(uint8)",
    3: "tensor(int8)",
    4: "tensor(uint16)",
    5: "tensor(int16)",
    6: "tensor(int32)",
    7: "tensor(int64)",
    8: "tensor(string)",
    9: "tensor(bool)",
    10: "tensor(float16)",
    11: "tensor(double)",
    12: "tensor(uint32)",
    13: "tensor(uint64)",
    14: "tensor(complex64)",
    15: "tensor(complex128)",
    16: "tensor(bfloat16)",
    17: "tensor(float8e4m3fn)",
    18: "tensor(float8e4m3fnuz)",
    19: "tensor(float8e5m2)",
    20: "tensor(float8e5m2fnuz)",
    21: "tensor(uint4)",
    22: "tensor(int4)",
    23: "tensor(float4e2m1)",
}


def opsets_of(opset) -> dict:
    """domain -> version, from an int (ai.onnx), a mapping, a ModelProto or its opset_import."""
    if isinstance(opset, int):
        return {"": opset}
    if isinstance(opset, onnx.ModelProto):
        opset = opset.opset_import
    if isinstance(opset, Mapping):
        return {schemas.norm_domain(d): int(v) for d, v in opset.items()}
    return {schemas.norm_domain(o.domain): int(o.version) for o in opset}
