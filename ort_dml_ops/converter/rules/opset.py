"""Models importing ai.onnx 22–26 -> ai.onnx 21, the newest opset the DML EP registers kernels for.

onnxruntime-directml 1.24.4 loads opset ≤ 25, but its DML EP registers nothing past 21, so at
22–25 every op whose schema changed at 22+ finds no DML kernel; opset 26 does not load.

The rewrite is exact or refused: each node's schema at the model's opset is compared with its
schema at 21. A node whose schema did not change after 21 is the same operator. A node whose
schema changed only by widening type sets (the 22–25 changes that added bfloat16 / float8 /
int4 / float4 types) is the same operator when its inputs, outputs and attributes (names and
defaults) are identical and its actual element types are allowed at 21. ONNX CumProd-26 becomes
the project's DOMAIN::CumProd (identical semantics), which the CumProd rule then lowers. Any
other node refuses the change, and the report names it and why.
"""

from __future__ import annotations

from typing import Any

import onnx
import onnx_ir as ir
from onnx import defs

from ..._domain import DOMAIN, DOMAIN_VERSION
from ...modelio import without_external_data
from ..light import serialize_light

#: newest ai.onnx opset whose kernels the DML EP registers
DML_MAX_OPSET = 21


def _schema(op: str, version: int):
    try:
        return defs.get_schema(op, version, "")
    except Exception:  # noqa: BLE001 - onnx raises SchemaError or others: no schema
        return None


def _sig(schema) -> tuple:
    attrs = tuple(
        sorted(
            (name, a.default_value.SerializeToString())
            for name, a in schema.attributes.items()
        )
    )
    ins = tuple((i.name, i.option) for i in schema.inputs)
    outs = tuple((o.name, o.option) for o in schema.outputs)
    return ins, outs, attrs


def _allowed_types(schema) -> dict[str, set[str]]:
    return {
        tc.type_param_str: set(tc.allowed_type_strs) for tc in schema.type_constraints
    }


def _type_strs(graph: onnx.GraphProto) -> dict[str, str]:
    out = {}
    for vi in list(graph.input) + list(graph.output) + list(graph.value_info):
        if vi.type.HasField("tensor_type") and vi.type.tensor_type.elem_type:
            out[vi.name] = (
                f"tensor({onnx.helper.tensor_dtype_to_string(vi.type.tensor_type.elem_type).split('.')[-1].lower()})"
            )
    for init in graph.initializer:
        out[init.name] = (
            f"tensor({onnx.helper.tensor_dtype_to_string(init.data_type).split('.')[-1].lower()})"
        )
    return out


def check_node(
    node: onnx.NodeProto, src: int, dst: int, types: dict[str, str]
) -> str | None:
    """None when `node` means the same at opset `dst` as at `src`, else the reason."""
    new = _schema(node.op_type, src)
    if new is None:
        return f"no schema for {node.op_type} at opset {src}"
    if new.since_version <= dst:
        return None
    old = _schema(node.op_type, dst)
    if old is None:
        return f"{node.op_type} does not exist at opset {dst} (added at {new.since_version})"
    if _sig(new) != _sig(old):
        return f"{node.op_type}-{new.since_version} differs from {node.op_type}-{old.since_version} in inputs, outputs or attributes"
    allowed = _allowed_types(old)
    formals = list(old.inputs) + list(old.outputs)
    actuals = list(node.input) + list(node.output)
    for formal, actual in zip(formals, actuals):
        if not actual or formal.type_str not in allowed:
            continue
        t = types.get(actual)
        if t is None:
            return f"the type of {actual!r} is unknown, cannot check it against {node.op_type}-{old.since_version}"
        if t not in allowed[formal.type_str]:
            return f"{t} is not allowed for {node.op_type}-{old.since_version}"
    return None


def _nodes(graph: onnx.GraphProto):
    for n in graph.node:
        yield graph, n
        for a in n.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                yield from _nodes(a.g)
            for g in a.graphs:
                yield from _nodes(g)


def plan(
    model: ir.Model, target: str, strategy: str, light: onnx.ModelProto | None = None
) -> dict:
    """Bring `model` to opset 21 in place for the DML target when needed; returns the report part.

    The nodes are checked on a serialized copy without the weights (light.serialize_light;
    only element types are inferred: no data propagation, memory: docs/robustness.md); the
    change itself (opset imports, CumProd-26 -> DOMAIN::CumProd) is made on `model`.
    `light`: that copy when the caller already has it (it is only read).
    """
    src = model.opset_imports.get("", model.opset_imports.get("ai.onnx", 0))
    info: dict[str, Any] = {"from": src, "to": src, "changed": False, "reason": ""}
    if target != "dml" or src <= DML_MAX_OPSET:
        return info
    if strategy == "native":
        info["reason"] = (
            f"strategy native keeps opset {src}; the DML EP registers nothing past {DML_MAX_OPSET}"
            + (
                "; onnxruntime-directml 1.24.4 cannot load opset 26"
                if src >= 26
                else ""
            )
        )
        return info
    light = without_external_data(light or serialize_light(model))
    try:
        inferred = onnx.shape_inference.infer_shapes(light)
    except Exception:  # noqa: BLE001 - inference that fails: the types as written
        inferred = light
    types = {}
    for g, _ in _nodes(inferred.graph):
        types.update(_type_strs(g))
    blockers = []
    cumprods = 0
    for _, node in _nodes(inferred.graph):
        if node.domain not in ("", "ai.onnx"):
            continue
        if node.op_type == "CumProd":
            cumprods += 1
            continue
        why = check_node(node, src, DML_MAX_OPSET, types)
        if why:
            blockers.append(
                f"node {node.name or node.op_type!r} ({node.op_type}): {why}"
            )
    for f in light.functions:
        fsrc = next(
            (o.version for o in f.opset_import if o.domain in ("", "ai.onnx")), src
        )
        for node in f.node:
            if node.domain in ("", "ai.onnx") and node.op_type != "CumProd":
                why = check_node(node, fsrc, DML_MAX_OPSET, {})
                if why and "unknown" not in why:
                    blockers.append(
                        f"function {f.name} node {node.name or node.op_type!r}: {why}"
                    )
    del light, inferred
    if blockers:
        info["reason"] = (
            f"kept opset {src}: cannot move to {DML_MAX_OPSET} exactly: "
            + "; ".join(blockers[:5])
        )
        if len(blockers) > 5:
            info["reason"] += f"; and {len(blockers) - 5} more"
        info["blockers"] = blockers
        return info
    _move_to_max(model, cumprods)
    info.update(
        to=DML_MAX_OPSET,
        changed=True,
        reason=f"opset {src} -> {DML_MAX_OPSET}: every node checked against its opset-{DML_MAX_OPSET} schema"
        + (
            f"; {cumprods} ONNX CumProd-26 node(s) -> {DOMAIN}::CumProd (same semantics)"
            if cumprods
            else ""
        ),
    )
    return info


def _lower_imports(imports: dict[str, int]) -> None:
    for domain in ("", "ai.onnx"):
        if imports.get(domain, 0) > DML_MAX_OPSET:
            imports[domain] = DML_MAX_OPSET


def _move_to_max(model: ir.Model, cumprods: int) -> None:
    """Import ai.onnx 21 everywhere; ONNX CumProd nodes become DOMAIN::CumProd."""
    for node in ir.traversal.RecursiveGraphIterator(model.graph):
        if node.domain == "" and node.op_type == "CumProd":
            node.domain = DOMAIN
    for f in model.functions.values():
        for node in f:
            if node.domain == "" and node.op_type == "CumProd":
                node.domain = DOMAIN
        _lower_imports(f.opset_imports)
        if cumprods or any(n.domain == DOMAIN for n in f):
            f.opset_imports.setdefault(DOMAIN, DOMAIN_VERSION)
    for domain in ("", "ai.onnx"):
        if domain in model.opset_imports:
            model.opset_imports[domain] = DML_MAX_OPSET
    if cumprods:
        model.opset_imports.setdefault(DOMAIN, DOMAIN_VERSION)
