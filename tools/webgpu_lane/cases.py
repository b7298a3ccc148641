"""Record the WebGPU plugin EP's kernel coverage from the plugin itself, one single-op model at a time.

The plugin (onnxruntime-ep-webgpu) keeps its kernel registry inside its shared library:
``get_all_opkernel_def()`` lists only the EPs built into onnxruntime. So the table is measured:
for every op of ``OPS`` (the three families, every op their lowerings emit, and the common ops
of exported models), at each since-version the op has between opsets ``MIN_OPSET`` and
``MAX_OPSET``, for each element type its schema allows out of ``DTYPES``, one model holding that
single node is opened on the WebGPU EP with ``session.record_ep_graph_assignment_info`` = "1",
and ``get_provider_graph_assignment_info()`` says which EP took the node. Parameters a model
usually holds as constants (axes, shapes, pads, K, ...) are initializers, data inputs are graph
inputs (so constant folding keeps the node).

Which inputs the kernel reads from CPU memory (``InputMemoryType(OrtMemTypeCPU, i)`` in the
plugin's source) is measured too: for a node the EP took, each int64 parameter input is fed from
an int64 ``Mul`` (which runs on the CPU EP there) and the run's profile is searched for Memcpy
events (``*_kernel_time`` with ``op_name`` Memcpy*): none means the kernel takes that input in
CPU memory.

Used by ``tools/gen_kernel_tables.py webgpu`` (writes ``data/webgpu_0.4.0.json``) and by the
webgpu tests. Needs the WebGPU lane's environment (``make webgpu-lane``; ``. env.sh``).
"""

from __future__ import annotations

import onnx
import onnx.defs
from onnx import TensorProto as T

from .single_op import DTYPES, MAX_OPSET, MIN_OPSET, OpCase, type_str
from .variants import (
    BINARY,
    CONTRIB,
    IMAGE,
    QUANT,
    REDUCE,
    RNN,
    UNARY,
    contrib_variants,
    variants,
)

OPS = tuple(
    sorted(
        set(UNARY)
        | set(BINARY)
        | set(REDUCE)
        | set(IMAGE)
        | set(RNN)
        | set(QUANT)
        | {
            "If",
            "Where",
            "Cast",
            "CumSum",
            "CumProd",
            "ScatterElements",
            "ScatterND",
            "Scatter",
            "Split",
            "Concat",
            "Reshape",
            "Expand",
            "Tile",
            "Pad",
            "Slice",
            "Gather",
            "GatherElements",
            "GatherND",
            "TopK",
            "ArgMax",
            "OneHot",
            "ReduceMax",
            "ReduceMin",
            "ReduceSum",
            "ReduceMean",
            "Unsqueeze",
            "Squeeze",
            "Flatten",
            "MaxUnpool",
            "Range",
            "ConstantOfShape",
            "Clip",
            "Gemm",
            "LayerNormalization",
            "Trilu",
            "Einsum",
            "Resize",
        }
    )
)

#: the domain of the CONTRIB ops (ORT's contrib kernels; the plugin registers some of them)
MS_DOMAIN = "com.microsoft"

#: the constraint each op's sweep varies (the schema's first one unless named here)
SWEPT = {
    "OneHot": "T3",
    "ConstantOfShape": "T2",
    "Cast": None,
    "Range": "T",
    "Where": "T",
    "If": "V",
}
#: CPU-side inputs not measurable by feeding an int64 (If's bool condition is read on the host, as
#: by every ORT If kernel: onnxruntime/core/providers/cpu/controlflow/if.cc; Range's three
#: float / int32 scalars, which the plugin's kernel reads on the host —
#: webgpu/generator/range.cc — measured on the lane: a lowered scatter with symbolic shapes, whose
#: Ranges take their scalars from CPU-side Casts, makes no copy for them,
#: tests/webgpu/test_scatter_clean_webgpu.py); Resize's roi, scales and sizes, read on the host
#: (InputMemoryType(OrtMemTypeCPUInput, 1..3) in webgpu/tensor/resize.cc; only `sizes` is int64)
KNOWN_CPU_INPUTS = {"If": [0], "Range": [0, 1, 2], "Resize": [1, 2, 3]}


def since_versions(
    op: str, lo: int = MIN_OPSET, hi: int = MAX_OPSET
) -> list[tuple[int, int]]:
    """[(since-version, opset to write)]: each distinct since-version `op` has at opsets lo..hi."""
    out: dict[int, int] = {}
    for v in range(lo, hi + 1):
        try:
            s = onnx.defs.get_schema(op, v, "")
        except onnx.defs.SchemaError:
            continue
        if s.deprecated:
            continue
        out.setdefault(s.since_version, v)
    if op == "Scatter":
        out = {9: 10}  # deprecated at 11: only models importing opset 9 or 10 hold it
    return sorted(out.items())


def cases(ops=OPS, dtypes=DTYPES, contrib=CONTRIB) -> list[OpCase]:
    out = []
    for op in ops:
        for _since, opset in since_versions(op):
            schema = onnx.defs.get_schema(op, opset, "")
            allowed = {
                c.type_param_str: set(c.allowed_type_strs)
                for c in schema.type_constraints
            }
            swept = SWEPT.get(
                op,
                schema.type_constraints[0].type_param_str
                if schema.type_constraints
                else None,
            )
            for t in dtypes:
                ts = type_str(t)
                if swept is not None and ts not in allowed.get(swept, ()):
                    continue
                if op == "Cast" and ts not in allowed["T1"]:
                    continue
                for label, ins, attrs, n_out in variants(op, opset, t):
                    out.append(OpCase(op, opset, t, ins, attrs, n_out, label))
    for op in contrib:
        for t in (T.FLOAT, T.FLOAT16):
            for label, ins, attrs, n_out in contrib_variants(op, t):
                out.append(
                    OpCase(op, 17, t, ins, attrs, n_out, label, domain=MS_DOMAIN)
                )
    return out
