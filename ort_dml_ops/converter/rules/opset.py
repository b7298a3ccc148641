"""Models importing ai.onnx 22–26 -> ai.onnx 21, the newest opset the DML EP registers kernels for;
models importing 18–26 -> 17 where that gives a ScatterElements / ScatterND without a reduction
the DML EP's own kernel.

onnxruntime-directml 1.24.4 loads opset ≤ 25, but its DML EP registers nothing past 21, so at
22–25 every op whose schema changed at 22+ finds no DML kernel; opset 26 does not load.

ScatterElements and ScatterND are registered at 11, 13 and 16 with no end version, and ORT
matches such a kernel only at the node's own since-version (kernel_registry.cc,
`VerifyVersion`): at 18 on (where both schemas added the max and min reductions) no DML kernel
serves them, and a scatter without a reduction, one kernel at opset 17, became a lowering of
19 kernels (25 with run-time shapes). So under strategy auto a model importing 18–26 that holds
such a node moves to 17 where every node reads the same there (the checks below, with the
allowances of `_ALLOWED_AT_17`) and where the shapes rule out the ScatterElements DirectML
refuses (`_unsafe_scatters`); then the rules see the scatter at 17, where the DML EP has its
kernel. A node that blocks the move keeps the opset, and the report names it. That kernel
writes repeated indices in no fixed order (DirectML's contract, docs/dml-lane.md; ONNX calls
them invalid without a reduction), where ORT's CPU kernel and the lowering keep the last
update: the report says so, and `--strategy lower` keeps ORT's order.

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
from ...targets.dml_rules import scatter_fit
from ..light import serialize_light

#: newest ai.onnx opset whose kernels the DML EP registers
DML_MAX_OPSET = 21
#: newest ai.onnx opset at which the DML EP runs ScatterElements / ScatterND (since-version 16)
DML_SCATTER_OPSET = 17
#: ops whose schemas changed between 17 and 21 by what a node may leave unused: the opset-17
#: schema means the same for a node that sets none of the listed attributes (or sets them to
#: what is listed) and gives none of the listed inputs, except a constant `axes`, which moves
#: into the attribute of that name (`_axes_to_attribute`). Cast / CastLike-19 added `saturate`,
#: which acts on float8 only (types opset 13 does not allow, checked as for every node);
#: Reduce*-18 moved `axes` to an input and added `noop_with_empty_axes` (0: the old meaning);
#: Pad-18 added `axes` and Pad-19 the mode `wrap` (a tuple lists the values a node may set);
#: Split-18 added `num_outputs`.
_REDUCES = (
    "ReduceL1",
    "ReduceL2",
    "ReduceLogSum",
    "ReduceLogSumExp",
    "ReduceMax",
    "ReduceMean",
    "ReduceMin",
    "ReduceProd",
    "ReduceSumSquare",
)
_ALLOWED_AT_17: dict[str, tuple[dict[str, object], tuple[str, ...]]] = {
    "Cast": ({"saturate": None}, ()),
    "CastLike": ({"saturate": None}, ()),
    "Pad": ({"mode": (b"constant", b"reflect", b"edge")}, ("axes",)),
    "Split": ({"num_outputs": None}, ()),
    **{r: ({"noop_with_empty_axes": 0}, ("axes",)) for r in _REDUCES},
}


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
    node: onnx.NodeProto,
    src: int,
    dst: int,
    types: dict[str, str],
    constants: frozenset[str] = frozenset(),
) -> str | None:
    """None when `node` means the same at opset `dst` as at `src`, else the reason. `constants`:
    the names of constant values (initializers, Constant outputs) an allowance may read."""
    new = _schema(node.op_type, src)
    if new is None:
        return f"no schema for {node.op_type} at opset {src}"
    if new.since_version <= dst:
        return None
    old = _schema(node.op_type, dst)
    if old is None:
        return f"{node.op_type} does not exist at opset {dst} (added at {new.since_version})"
    if node.op_type in ("ScatterElements", "ScatterND"):
        reduction = _reduction(node)
        if reduction in ("max", "min"):
            return f"reduction {reduction} exists from {node.op_type}-18 on"
    if _sig(new) != _sig(old) and not _allowed_difference(
        node, new, old, dst, constants
    ):
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


def _allowed_difference(
    node: onnx.NodeProto, new, old, dst: int, constants: frozenset[str]
) -> bool:
    """Whether `node` uses only what the `old` schema has (`_ALLOWED_AT_17`)."""
    if dst > DML_SCATTER_OPSET or node.op_type not in _ALLOWED_AT_17:
        return False
    attrs, inputs = _ALLOWED_AT_17[node.op_type]
    new_ins, new_outs, new_attrs = _sig(new)
    old_ins, old_outs, old_attrs = _sig(old)
    if node.op_type in _REDUCES:  # axes: Reduce*-13's attribute, Reduce*-18's input
        old_attrs = tuple(a for a in old_attrs if a[0] != "axes")
    stripped = (
        tuple(i for i in new_ins if i[0] not in inputs),
        new_outs,
        # an allowance on an attribute both schemas have limits its values only (Pad's mode)
        tuple(a for a in new_attrs if a[0] not in attrs or a[0] in dict(old_attrs)),
    )
    if stripped != (old_ins, old_outs, old_attrs):
        return False
    for a in node.attribute:
        if a.name not in attrs:
            continue
        value, allowed = onnx.helper.get_attribute_value(a), attrs[a.name]
        if value not in (allowed if isinstance(allowed, tuple) else (allowed,)):
            return False
    names = [i.name for i in new.inputs]
    for name, actual in zip(names, node.input):
        movable = name == "axes" and node.op_type in _REDUCES and actual in constants
        if name in inputs and actual and not movable:
            return False
    return True


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
    """Bring `model` to opset 21, or to 17 (see the module docstring), in place for the DML
    target when needed; returns the report part.

    The nodes are checked on a serialized copy without the weights (light.serialize_light;
    only element types are inferred: no data propagation, memory: docs/robustness.md); the
    change itself (opset imports, CumProd-26 -> DOMAIN::CumProd, constant Reduce axes into
    their attribute) is made on `model`. `light`: that copy when the caller already has it (it
    is only read).
    """
    src = model.opset_imports.get("", model.opset_imports.get("ai.onnx", 0))
    info: dict[str, Any] = {"from": src, "to": src, "changed": False, "reason": ""}
    if target != "dml" or src <= DML_SCATTER_OPSET:
        return info
    scatters = _native_scatters(model) if strategy == "auto" else 0
    if src <= DML_MAX_OPSET and not scatters:
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
    constants = frozenset(
        [i.name for g, _ in _nodes(inferred.graph) for i in g.initializer]
        + [i.name for i in inferred.graph.initializer]
        + [
            o
            for _, n in _nodes(inferred.graph)
            if n.op_type == "Constant" and n.domain in ("", "ai.onnx")
            for o in n.output
        ]
    )
    cumprods = sum(
        1
        for _, n in _nodes(inferred.graph)
        if n.domain in ("", "ai.onnx") and n.op_type == "CumProd"
    )
    kept = ""
    unsafe = _unsafe_scatters(inferred) if scatters else []
    if unsafe:
        kept = (
            f"kept opset {src}: at {DML_SCATTER_OPSET} the DML EP would run "
            + ", ".join(unsafe[:5])
            + " itself, and DirectML fails a ScatterElements whose indices exceed the data "
            "on its axis (80070057, measured on the lane) — shapes this graph does not bound"
        )
        scatters = 0
        if src <= DML_MAX_OPSET:
            info["reason"] = kept
            return info
    if scatters:
        blockers = _blockers(inferred, light, src, DML_SCATTER_OPSET, types, constants)
        if not blockers:
            del light, inferred
            _move(model, DML_SCATTER_OPSET, cumprods)
            info.update(
                to=DML_SCATTER_OPSET,
                changed=True,
                reason=f"opset {src} -> {DML_SCATTER_OPSET}: {scatters} ScatterElements / "
                "ScatterND without a reduction get the DML EP's own kernel (registered up to "
                f"since-version 16), which writes repeated indices in no fixed order (ONNX "
                "leaves them undefined; --strategy lower keeps ORT's last update); every node "
                f"checked against its opset-{DML_SCATTER_OPSET} schema"
                + _cumprod_note(cumprods),
            )
            return info
        kept = _kept(src, DML_SCATTER_OPSET, blockers)
        if src <= DML_MAX_OPSET:
            info.update(reason=kept, blockers=blockers)
            return info
    blockers = _blockers(inferred, light, src, DML_MAX_OPSET, types, constants)
    del light, inferred
    if blockers:
        info["reason"] = _kept(src, DML_MAX_OPSET, blockers)
        info["blockers"] = blockers
        return info
    _move(model, DML_MAX_OPSET, cumprods)
    info.update(
        to=DML_MAX_OPSET,
        changed=True,
        reason=f"opset {src} -> {DML_MAX_OPSET}: every node checked against its opset-{DML_MAX_OPSET} schema"
        + _cumprod_note(cumprods)
        + (f"; {kept}" if kept else ""),
    )
    return info


def _cumprod_note(cumprods: int) -> str:
    if not cumprods:
        return ""
    return f"; {cumprods} ONNX CumProd-26 node(s) -> {DOMAIN}::CumProd (same semantics)"


def _kept(src: int, dst: int, blockers: list[str]) -> str:
    why = f"kept opset {src}: cannot move to {dst} exactly: " + "; ".join(blockers[:5])
    if len(blockers) > 5:
        why += f"; and {len(blockers) - 5} more"
    return why


def _native_scatters(model: ir.Model) -> int:
    """ScatterElements / ScatterND nodes without a reduction (ai.onnx, any graph)."""
    count = 0
    for node in ir.traversal.RecursiveGraphIterator(model.graph):
        if node.domain in ("", "ai.onnx") and node.op_type in (
            "ScatterElements",
            "ScatterND",
        ):
            red = node.attributes.get("reduction")
            count += red is None or red.as_string() == "none"
    return count


def _dims(graph: onnx.GraphProto, name: str) -> list | None:
    """The dims of value `name` as inferred (int, dim_param or None), or None where unranked."""
    for vi in list(graph.input) + list(graph.value_info) + list(graph.output):
        if vi.name == name and vi.type.tensor_type.HasField("shape"):
            return [
                d.dim_value if d.HasField("dim_value") else (d.dim_param or None)
                for d in vi.type.tensor_type.shape.dim
            ]
    for init in graph.initializer:
        if init.name == name:
            return list(init.dims)
    return None


def _reduction(node: onnx.NodeProto) -> str:
    """A scatter node's reduction attribute ("none" where unset)."""
    return next((a.s.decode() for a in node.attribute if a.name == "reduction"), "none")


def _none_scatter_elements(node: onnx.NodeProto) -> bool:
    return (
        node.op_type == "ScatterElements"
        and node.domain in ("", "ai.onnx")
        and _reduction(node) == "none"
    )


def _unsafe_scatters(model: onnx.ModelProto) -> list[str]:
    """ScatterElements without a reduction that DirectML may refuse at 17: it needs indices
    sized like the data on every axis but `axis` (DML_SCATTER_OPERATOR_DESC; passes/rewrite.py
    `_dml_scatter_shape_mismatch`) and fails with 80070057 where the indices are longer than the
    data on the axis (measured on the lane: [6, 3] indices into [5, 3] data along axis 0; the
    DML EP claims the node, so ORT fails the session or the run). Safe only where the inferred
    shapes prove both (targets/dml_rules.py `scatter_fit`: equal ints or one dim_param, and on
    the axis a length no longer than the data's). ScatterND runs any count of updates there (measured), so it is never listed.
    One in a model-local function is listed too: a body has no shapes to prove it by (it is
    inlined after this step)."""
    unsafe = [
        f"{f.name}/{node.name or node.op_type}"
        for f in model.functions
        for node in f.node
        if _none_scatter_elements(node)
    ]
    for g, node in _nodes(model.graph):
        if not _none_scatter_elements(node):
            continue
        data, idx = _dims(g, node.input[0]), _dims(g, node.input[1])
        axis = next((a.i for a in node.attribute if a.name == "axis"), 0)
        if data is None or idx is None or scatter_fit(data, idx, axis)[0] != "fits":
            unsafe.append(node.name or node.op_type)
    return unsafe


def _blockers(
    inferred: onnx.ModelProto,
    light: onnx.ModelProto,
    src: int,
    dst: int,
    types: dict[str, str],
    constants: frozenset[str],
) -> list[str]:
    """Why the nodes of the model (and of its functions) do not read the same at `dst`."""
    blockers = []
    for _, node in _nodes(inferred.graph):
        if node.domain not in ("", "ai.onnx") or node.op_type == "CumProd":
            continue
        why = check_node(node, src, dst, types, constants)
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
                why = check_node(node, fsrc, dst, {})
                if why and "unknown" not in why:
                    blockers.append(
                        f"function {f.name} node {node.name or node.op_type!r}: {why}"
                    )
    return blockers


def _lower_imports(imports: dict[str, int], dst: int) -> None:
    for domain in ("", "ai.onnx"):
        if imports.get(domain, 0) > dst:
            imports[domain] = dst


def _move(model: ir.Model, dst: int, cumprods: int) -> None:
    """Import ai.onnx `dst` everywhere; ONNX CumProd nodes become DOMAIN::CumProd; below 18, a
    Reduce*'s constant `axes` input becomes its attribute (`_ALLOWED_AT_17`)."""
    for node in ir.traversal.RecursiveGraphIterator(model.graph):
        _node_to(node, dst)
    for f in model.functions.values():
        for node in f:
            _node_to(node, dst)
        _lower_imports(f.opset_imports, dst)
        if cumprods or any(n.domain == DOMAIN for n in f):
            f.opset_imports.setdefault(DOMAIN, DOMAIN_VERSION)
    for domain in ("", "ai.onnx"):
        if domain in model.opset_imports:
            model.opset_imports[domain] = dst
    if cumprods:
        model.opset_imports.setdefault(DOMAIN, DOMAIN_VERSION)


def _node_to(node: ir.Node, dst: int) -> None:
    if node.domain not in ("", "ai.onnx"):
        return
    if node.op_type == "CumProd":
        node.domain = DOMAIN
    elif node.op_type in _REDUCES and dst < 18:
        _axes_to_attribute(node)


def _axes_to_attribute(node: ir.Node) -> None:
    """Reduce*-18's `axes` input (a constant: checked) as Reduce*-13's `axes` attribute."""
    if len(node.inputs) < 2 or node.inputs[1] is None:
        return
    tensor = ir.convenience.get_const_tensor(node.inputs[1])
    assert tensor is not None  # check_node allowed only a constant
    axes = [int(a) for a in tensor.numpy().reshape(-1)]
    if (
        axes
    ):  # none given: every axis, at 13 as at 18 (noop_with_empty_axes is 0: checked)
        node.attributes["axes"] = ir.AttrInt64s("axes", axes)
    node.resize_inputs(1)
