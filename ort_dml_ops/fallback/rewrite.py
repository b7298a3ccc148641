"""Rewrite a private copy of a model so the fallback library can run its DOMAIN ops.

Users write DOMAIN::CumProd / CumSum / ScatterElements for any dtype. The extensions library
needs one kernel per dtype and carries no float16/bfloat16, so each such node becomes
KERNEL_DOMAIN::<Op>_<dtype>, with every attribute spelled out, int32 axis/indices cast to
int64, and float16/bfloat16 data carried as float32 (exactly: the kernel computes in the real
type, see kernels.py). The user's model is never modified: this works on a copy.
"""

from __future__ import annotations

from typing import Any

import onnx
import onnx.inliner
from onnx import TensorProto, helper

from .._domain import DOMAIN
from ..domain_schemas import registered
from ..errors import UserError
from .types import (
    KERNEL_DOMAIN,
    KERNEL_DOMAIN_VERSION,
    SCAN_TYPES,
    SCATTER_TYPES,
    VIA_FLOAT32,
    kernel_name,
)

FALLBACK_OPS = ("CumProd", "CumSum", "ScatterElements")
_DEFAULTS: dict[str, dict[str, Any]] = {
    "CumProd": {"exclusive": 0, "reverse": 0},
    "CumSum": {"exclusive": 0, "reverse": 0},
    "ScatterElements": {"axis": 0, "reduction": "none"},
}
_DATA_INPUTS = {"CumProd": (0,), "CumSum": (0,), "ScatterElements": (0, 2)}
_INDEX_INPUT = {"CumProd": 1, "CumSum": 1, "ScatterElements": 1}


def uses_fallback(model: onnx.ModelProto) -> bool:
    return any(
        n.domain == DOMAIN and n.op_type in FALLBACK_OPS for n in _all_nodes(model)
    )


def prepare(model: onnx.ModelProto, session_tag: str = "") -> onnx.ModelProto:
    """Return a copy of `model` whose DOMAIN ops name the per-dtype fallback kernels.

    `session_tag` is stored on every kernel node so its runtime errors reach that session.
    """
    work = onnx.ModelProto()
    work.CopyFrom(model)
    if work.functions and any(
        n.domain == DOMAIN for f in work.functions for n in f.node
    ):
        work = onnx.inliner.inline_local_functions(work)
    types = _element_types(work)
    counter = [0]
    _rewrite_graph(work.graph, types, counter, session_tag)
    if not any(i.domain == KERNEL_DOMAIN for i in work.opset_import):
        work.opset_import.append(
            helper.make_opsetid(KERNEL_DOMAIN, KERNEL_DOMAIN_VERSION)
        )
    return work


def _all_nodes(model: onnx.ModelProto):
    def walk(graph):
        for node in graph.node:
            yield node
            for attr in node.attribute:
                for g in [attr.g] if attr.HasField("g") else list(attr.graphs):
                    yield from walk(g)

    yield from walk(model.graph)
    for f in model.functions:
        yield from f.node


def _element_types(model: onnx.ModelProto) -> dict[str, int]:
    """Element type of every value onnx's shape inference can type (subgraphs included)."""
    try:
        with registered():  # shape inference must see through DOMAIN ops
            inferred = onnx.shape_inference.infer_shapes(model)
    except Exception as exc:  # noqa: BLE001 - report onnx's reason in one line
        raise UserError(f"shape inference failed: {str(exc).splitlines()[0]}") from None
    types: dict[str, int] = {}

    def collect(graph):
        for vi in list(graph.input) + list(graph.output) + list(graph.value_info):
            if vi.type.HasField("tensor_type") and vi.type.tensor_type.elem_type:
                types[vi.name] = vi.type.tensor_type.elem_type
        for init in graph.initializer:
            types[init.name] = init.data_type
        for node in graph.node:
            if node.op_type == "Constant":
                for attr in node.attribute:
                    if attr.name == "value":
                        types[node.output[0]] = attr.t.data_type
            for attr in node.attribute:
                for g in [attr.g] if attr.HasField("g") else list(attr.graphs):
                    collect(g)

    collect(inferred.graph)
    return types


def _rewrite_graph(
    graph: onnx.GraphProto, types: dict[str, int], counter: list[int], tag: str
) -> None:
    new_nodes = []
    for node in graph.node:
        for attr in node.attribute:
            for g in [attr.g] if attr.HasField("g") else list(attr.graphs):
                _rewrite_graph(g, types, counter, tag)
        if node.domain == DOMAIN and node.op_type in FALLBACK_OPS:
            new_nodes.extend(_rewrite_node(node, types, counter, tag))
        else:
            new_nodes.append(node)
    del graph.node[:]
    graph.node.extend(new_nodes)


def _fresh(base: str, counter: list[int]) -> str:
    counter[0] += 1
    return f"{base}__ortdmlops_fb{counter[0]}"


def _rewrite_node(
    node: onnx.NodeProto, types: dict[str, int], counter: list[int], tag: str
) -> list[onnx.NodeProto]:
    op = node.op_type
    label = f"{DOMAIN}::{op} node '{node.name or node.output[0]}'"
    data_name = node.input[0]
    if data_name not in types:
        raise UserError(f"{label}: cannot tell the element type of input '{data_name}'")
    elem = types[data_name]
    dtype = (
        helper.tensor_dtype_to_np_dtype(elem).name
        if elem != TensorProto.STRING
        else "string"
    )
    if elem == TensorProto.BFLOAT16:
        dtype = "bfloat16"
    supported = SCAN_TYPES if op in ("CumSum", "CumProd") else SCATTER_TYPES
    if dtype not in supported and dtype not in VIA_FLOAT32:
        names = ", ".join([*supported, *VIA_FLOAT32])
        raise UserError(
            f"{label}: element type {dtype} is not supported (supported: {names})"
        )

    before, after = [], []
    inputs = list(node.input)
    compute = ""
    kernel_dtype = dtype
    if dtype in VIA_FLOAT32:
        compute, kernel_dtype = dtype, "float32"
        for i in _DATA_INPUTS[op]:
            cast = _fresh(inputs[i], counter)
            before.append(
                helper.make_node(
                    "Cast",
                    [inputs[i]],
                    [cast],
                    to=TensorProto.FLOAT,
                    name=_fresh("cast_in", counter),
                )
            )
            inputs[i] = cast
    idx = _INDEX_INPUT[op]
    if types.get(inputs[idx]) == TensorProto.INT32:
        cast = _fresh(inputs[idx], counter)
        before.append(
            helper.make_node(
                "Cast",
                [inputs[idx]],
                [cast],
                to=TensorProto.INT64,
                name=_fresh("cast_idx", counter),
            )
        )
        inputs[idx] = cast

    attrs: dict[str, Any] = dict(_DEFAULTS[op])
    attrs.update({a.name: helper.get_attribute_value(a) for a in node.attribute})
    attrs = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in attrs.items()}
    attrs["compute"] = compute
    attrs["session"] = tag
    outputs = list(node.output)
    if compute:
        result = _fresh(outputs[0], counter)
        after.append(
            helper.make_node(
                "Cast",
                [result],
                [outputs[0]],
                to=types[data_name],
                name=_fresh("cast_out", counter),
            )
        )
        outputs[0] = result
    kernel = helper.make_node(
        kernel_name(op, kernel_dtype),
        inputs,
        outputs,
        name=node.name or _fresh(op, counter),
        domain=KERNEL_DOMAIN,
        **attrs,
    )
    return [*before, kernel, *after]
