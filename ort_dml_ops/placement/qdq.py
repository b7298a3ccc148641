"""``EnsureUniqueDQForNodeUnit`` (QDQ models): one DequantizeLinear per consumer.

Mirrors ``core/optimizer/qdq_transformer/ensure_unique_dq_for_node_unit.cc``. ORT runs it once
before the level-1 optimizers (``InferenceSession::TransformGraph``: QDQ node units must be whole
when the graph is partitioned) and again in every level-1 round. In topological order, a
DequantizeLinear (ONNX, or com.microsoft's) read by more than one node input of its graph, or by
one and also a graph output or a subgraph's outer value, gets a copy per further reader (the
first reader keeps the original, unless the original makes a graph output or feeds a subgraph:
then every reader gets a copy). A copy is named ``<dq>/duplicated`` (``Graph::GenerateNodeName``)
and writes ``<value>/duplicated`` (``GenerateNodeArgName``): the graph's one name counter, value
first. Readers are taken in ORT's edge order: by node index, then input slot.

Common-subexpression elimination leaves DequantizeLinear alone (``cse.py``), so copies stay;
a rule that bypasses a reader (a Cast to the type it has) gives the copy new readers, and the
next round splits those again: traceforge's ``…_DequantizeLinear/duplicated_token_1/duplicated``.
"""

from __future__ import annotations

from .graph import Graph, Node, implicit_inputs

STEP = "EnsureUniqueDQForNodeUnit"


def is_dq(node: Node) -> bool:
    return node.op_type == "DequantizeLinear" and node.domain in (
        "",
        "ai.onnx",
        "com.microsoft",
    )


def _duplicate(
    graph: Graph, dq: Node, reader: Node, slot: int, types: dict, shapes: dict
) -> None:
    value = dq.outputs[0]
    new_value = graph.generate_value_name(f"{value}/duplicated")
    name = graph.generate_node_name(f"{dq.name}/duplicated")
    if value in types:
        types[new_value] = types[value]
    if value in shapes:
        shapes[new_value] = shapes[value]
    proto = type(dq.proto)()
    proto.CopyFrom(dq.proto)
    del proto.input[:]
    del proto.output[:]
    proto.name = name
    graph.add(
        Node(
            graph.next_index,
            name,
            dq.op_type,
            dq.domain,
            list(dq.inputs),
            [new_value],
            proto,
            origin=STEP,
        )
    )
    graph.next_index += 1
    reader.inputs = [new_value if i == slot else x for i, x in enumerate(reader.inputs)]
    graph.touch()


def ensure_unique_dq(graph: Graph, types: dict, shapes: dict) -> bool:
    """One ApplyImpl over this graph level; True if a DequantizeLinear was duplicated."""
    changed = False
    for dq in graph.topological():
        if dq.dead or not is_dq(dq) or not dq.outputs or not dq.outputs[0]:
            continue
        value = dq.outputs[0]
        readers = graph.consumers().get(value, [])
        edges = graph.reads(value)
        in_subgraph = any(value in implicit_inputs(c) for c in readers)
        makes_output = value in graph.outputs
        if not edges or (len(edges) + in_subgraph == 1 and not makes_output):
            continue
        keep_first = not in_subgraph and not makes_output
        for reader, slot in edges[1:] if keep_first else edges:
            _duplicate(graph, dq, reader, slot, types, shapes)
            changed = True
    return changed
