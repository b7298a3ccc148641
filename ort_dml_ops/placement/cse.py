"""Common-subexpression elimination and constant sharing (level 1, before partitioning).

* ``ConstantSharing`` (``core/optimizer/constant_sharing.cc``): constant initializers of at
  most ``SHARE_LIMIT`` elements and rank <= 1 with the same type, shape and value become one
  initializer, so nodes reading equal constants read the same value.
* ``CommonSubexpressionElimination`` (``core/optimizer/common_subexpression_elimination.cc``):
  in topological order, a deterministic node without subgraphs whose op, domain, attributes and
  input values equal an earlier node's is removed and its consumers read the earlier node's
  outputs. A node producing a graph output is kept.
"""

from __future__ import annotations

from .graph import NONDETERMINISTIC, Graph

SHARE_LIMIT = 8


def share_constants(graph: Graph) -> bool:
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


def eliminate(graph: Graph) -> bool:
    value_class: dict = {}
    representative: dict = {}
    changed = False
    for node in graph.topological():
        if node.subgraphs or node.op_type in NONDETERMINISTIC or not node.outputs:
            continue
        attrs = tuple(
            sorted(
                a.SerializeToString(deterministic=True) for a in node.proto.attribute
            )
        )
        key = (
            node.op_type,
            node.domain,
            attrs,
            tuple(value_class.get(x, x) for x in node.inputs),
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
