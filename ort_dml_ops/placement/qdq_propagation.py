"""``QDQPropagationTransformer`` (level 1, QDQ models): Q/DQ pairs copied across data movement.

Mirrors ``core/optimizer/qdq_transformer/qdq_propagation.cc``. Over the graph's topological
order, first every QuantizeLinear propagates backwards, then every DequantizeLinear forwards,
through the nodes that only move data (``CanNodePropagate``: MaxPool 12, Reshape 5/13/14/19,
Transpose 1/13, Squeeze and Unsqueeze 1/11/13, Slice 1/10/11/13), each with a constant scalar
scale (and zero point, where it has one):

* backwards: from Q's input edge (one reader, no graph output) up through such nodes, until a
  DequantizeLinear or a node that does not propagate; a Q/DQ pair goes on each edge passed;
* forwards: from a DQ with exactly one reader, through such nodes to every reader of their
  output (none a Q), and on, depth first; a Q and one DQ per reader go on each group of edges.

A pair on value ``v``: the writer of ``v`` now writes ``v_pre_q`` (unless ``v`` is a graph input
or initializer), ``Q`` node ``v_q`` reads it and writes ``v_q_to_dq``, and per reader i a ``DQ``
node ``v_dq<i>`` (no suffix for the first) writes ``v_post_dq<i>`` for it (``v`` itself where the
edge ends at a graph output). Names from the graph's one counter (``GenerateNodeArgName`` /
``GenerateNodeName``), in that order.
"""

from __future__ import annotations

import onnx

from .graph import Graph, Node, since_version

STEP = "QDQPropagationTransformer"
_PROPAGATES = {
    "MaxPool": (12,),
    "Reshape": (5, 13, 14, 19),
    "Transpose": (1, 13),
    "Squeeze": (1, 11, 13),
    "Unsqueeze": (1, 11, 13),
    "Slice": (1, 10, 11, 13),
}
_Q_DOMAINS = ("", "ai.onnx", "com.microsoft")


class _Edge:
    """ExtendedGraphEdge: `value` from `src` (None: a graph input or initializer) to input
    `slot` of `dst` (None: a graph output)."""

    def __init__(self, src: Node | None, value: str, dst: Node | None, slot: int = -1):
        self.src, self.value, self.dst, self.slot = src, value, dst, slot


def _propagates(node: Node, opsets: dict) -> bool:
    versions = _PROPAGATES.get(node.op_type)
    return (
        versions is not None
        and node.domain in ("", "ai.onnx")
        and since_version(node, opsets) in versions
    )


def _is(node: Node | None, op: str) -> bool:
    return node is not None and node.op_type == op and node.domain in _Q_DOMAINS


def _scale_and_zero_point(graph: Graph, node: Node) -> tuple[str, str] | None:
    """QOrDQNodeHasConstantScalarScaleAndZeroPoint: (scale, zero point or "")."""
    ins = list(node.inputs) + [""] * (3 - len(node.inputs))
    for name in ins[1:3]:
        if not name:
            continue
        init = graph.initializer(name)
        if init is None or init.overridable or init.numel != 1 or len(init.dims) > 1:
            return None
    if not ins[1]:
        return None
    return ins[1], ins[2]


def _previous_edge(graph: Graph, node: Node) -> _Edge | None:
    """GetPreviousEdge: the edge into input 0, where its writer has no other reader of it."""
    if not node.inputs or not node.inputs[0]:
        return None
    value = node.inputs[0]
    src = graph.producers().get(value)
    if src is None:
        return _Edge(None, value, node, 0)
    if value in graph.outputs or len(graph.reads(value)) != 1:
        return None
    return _Edge(src, value, node, 0)


def _next_edges(graph: Graph, node: Node) -> list:
    """GetNextEdges: every edge out of output 0 (or to the graph output it makes)."""
    if not node.outputs or not node.outputs[0]:
        return []
    value = node.outputs[0]
    readers = graph.reads(value)
    if not readers:
        return [_Edge(node, value, None)] if value in graph.outputs else []
    if value in graph.outputs:
        return []
    return [_Edge(node, value, c, i) for c, i in readers]


def _insert_pairs(
    graph: Graph, edges: list, scale: str, zero_point: str, domain: str, opsets: dict
) -> None:
    """InsertQDQPairs: one Q on the edges' value, one DQ per edge."""
    base = edges[0].value
    src = edges[0].src
    pre_q = base if src is None else graph.generate_value_name(f"{base}_pre_q")
    q_to_dq = graph.generate_value_name(f"{base}_q_to_dq")
    q_name = graph.generate_node_name(f"{base}_q")
    tail = [scale] + ([zero_point] if zero_point else [])
    _add(graph, q_name, "QuantizeLinear", domain, [pre_q, *tail], q_to_dq)
    if src is not None:
        src.outputs = [pre_q if o == base else o for o in src.outputs]
    for i, edge in enumerate(edges):
        suffix = "" if i == 0 else str(i)
        post = (
            base
            if edge.dst is None
            else graph.generate_value_name(f"{base}_post_dq{suffix}")
        )
        _add(
            graph,
            graph.generate_node_name(f"{base}_dq{suffix}"),
            "DequantizeLinear",
            domain,
            [q_to_dq, *tail],
            post,
        )
        if edge.dst is not None:
            edge.dst.inputs = [
                post if k == edge.slot else x for k, x in enumerate(edge.dst.inputs)
            ]
    graph.touch()


def _add(
    graph: Graph, name: str, op: str, domain: str, inputs: list, output: str
) -> None:
    proto = onnx.helper.make_node(op, inputs, [output], name=name, domain=domain)
    graph.add(
        Node(graph.next_index, name, op, domain, inputs, [output], proto, origin=STEP)
    )
    graph.next_index += 1


def _backwards(graph: Graph, q: Node, opsets: dict) -> bool:
    found = _scale_and_zero_point(graph, q)
    edge = _previous_edge(graph, q) if found else None
    changed = False
    while edge is not None and found is not None:
        if edge.src is None or not _propagates(edge.src, opsets):
            break
        edge = _previous_edge(graph, edge.src)
        if edge is None or (edge.src is not None and _is(edge.src, "DequantizeLinear")):
            break
        _insert_pairs(graph, [edge], *found, q.domain, opsets)
        changed = True
    return changed


def _forward_group(graph: Graph, edge: _Edge, opsets: dict) -> list:
    """GetNextPropagationEdges: past a propagating reader, its out-edges not into a Q."""
    if edge.dst is None or not _propagates(edge.dst, opsets):
        return []
    return [e for e in _next_edges(graph, edge.dst) if not _is(e.dst, "QuantizeLinear")]


def _forwards(graph: Graph, dq: Node, opsets: dict) -> bool:
    found = _scale_and_zero_point(graph, dq)
    if found is None or not dq.outputs or dq.outputs[0] in graph.outputs:
        return False
    readers = graph.reads(dq.outputs[0])
    if len(readers) != 1:  # CheckOutputEdges(dq, 1)
        return False
    first = _forward_group(graph, _Edge(dq, dq.outputs[0], *readers[0]), opsets)
    groups = [first] if first else []
    changed = False
    while groups:
        group = groups.pop()
        # each edge's reader, as ORT's edges remember it, before the pair moves the reads
        following = [_forward_group(graph, e, opsets) for e in group]
        _insert_pairs(graph, group, *found, dq.domain, opsets)
        changed = True
        groups += [g for g in following if g]
    return changed


def propagate(graph: Graph, opsets: dict) -> bool:
    """One ApplyImpl over this graph level; True if a pair was inserted."""
    order = list(graph.topological())
    changed = False
    for node in order:
        if not node.dead and _is(node, "QuantizeLinear"):
            changed |= _backwards(graph, node, opsets)
    for node in order:
        if not node.dead and _is(node, "DequantizeLinear"):
            changed |= _forwards(graph, node, opsets)
    return changed
