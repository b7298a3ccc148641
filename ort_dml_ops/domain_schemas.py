"""ONNX schemas for the project's custom domain, so onnx's checker and shape inference know it.

Inside `with registered():`, `onnx.checker.check_model(full_check=True)` and
`onnx.shape_inference` see through DOMAIN::CumProd / CumSum / ScatterElements (output type
and shape = input 0's), which the fallback rewrite, the builder and the converter rely on.
They are registered only for the duration of the block: onnx's ReferenceEvaluator refuses
to work while two domains hold an op of the same name (CumProd), so a process-wide
registration would break it for everyone.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager

from onnx import defs

from ._domain import DOMAIN, DOMAIN_VERSION

_NUMERIC = [
    "tensor(uint32)",
    "tensor(uint64)",
    "tensor(int32)",
    "tensor(int64)",
    "tensor(float16)",
    "tensor(float)",
    "tensor(double)",
    "tensor(bfloat16)",
]
_ALL = sorted(
    set(_NUMERIC)
    | {
        "tensor(uint8)",
        "tensor(uint16)",
        "tensor(int8)",
        "tensor(int16)",
        "tensor(string)",
        "tensor(bool)",
    }
)
_INDEX = ["tensor(int32)", "tensor(int64)"]


def _same_as_input0(ctx) -> None:
    ctx.set_output_type(0, ctx.get_input_type(0))


def _scan_schema(name: str, doc: str) -> defs.OpSchema:
    P, A = defs.OpSchema.FormalParameter, defs.OpSchema.Attribute
    return defs.OpSchema(
        name,
        DOMAIN,
        DOMAIN_VERSION,
        doc=doc,
        inputs=[
            P("x", "T", "An input tensor"),
            P("axis", "T2", "0-d or 1-element tensor: the axis"),
        ],
        outputs=[P("y", "T", "Same shape and type as x")],
        type_constraints=[
            ("T", _NUMERIC, "Numeric tensors"),
            ("T2", _INDEX, "axis type"),
        ],
        attributes=[
            A(
                "exclusive",
                defs.OpSchema.AttrType.INT,
                "1: the j-th output excludes the j-th element",
                required=False,
            ),
            A(
                "reverse",
                defs.OpSchema.AttrType.INT,
                "1: scan from the end of the axis",
                required=False,
            ),
        ],
    )


def _scatter_schema() -> defs.OpSchema:
    P, A = defs.OpSchema.FormalParameter, defs.OpSchema.Attribute
    return defs.OpSchema(
        "ScatterElements",
        DOMAIN,
        DOMAIN_VERSION,
        doc="ONNX ScatterElements-18, run by the Python fallback.",
        inputs=[P("data", "T", ""), P("indices", "Tind", ""), P("updates", "T", "")],
        outputs=[P("output", "T", "")],
        type_constraints=[
            ("T", _ALL, "Any tensor type"),
            ("Tind", _INDEX, "index type"),
        ],
        attributes=[
            A("axis", defs.OpSchema.AttrType.INT, "Axis to scatter on", required=False),
            A(
                "reduction",
                defs.OpSchema.AttrType.STRING,
                "none, add, mul, max or min",
                required=False,
            ),
        ],
    )


def _schemas() -> tuple[defs.OpSchema, ...]:
    return (
        _scan_schema(
            "CumProd", "Cumulative product; semantics identical to ONNX CumProd-26."
        ),
        _scan_schema("CumSum", "ONNX CumSum-14, run by the Python fallback."),
        _scatter_schema(),
    )


def op_schema(name: str) -> defs.OpSchema:
    """The DOMAIN schema of `name` ("CumProd", "CumSum", "ScatterElements"), not registered:
    for tools that take a schema object (onnxscript's `values.Op`, used by ort_dml_ops.torch)."""
    for schema in _schemas():
        if schema.name == name:
            return schema
    raise KeyError(f"no {DOMAIN} schema named {name!r}")


_lock = threading.RLock()


@contextmanager
def registered():
    """Register the DOMAIN schemas for the block; leave any already registered in place."""
    with _lock:
        added = []
        for schema in _schemas():
            try:
                defs.get_schema(schema.name, DOMAIN_VERSION, DOMAIN)
                continue
            except defs.SchemaError:
                pass
            schema.set_type_and_shape_inference_function(_same_as_input0)
            defs.register_schema(schema)
            added.append(schema.name)
        try:
            yield
        finally:
            for name in added:
                defs.deregister_schema(name, DOMAIN_VERSION, DOMAIN)
