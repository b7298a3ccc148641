"""Loading: what ONNX Runtime's ``Graph`` constructor does to a model before any optimizer runs.

``core/graph/graph.cc`` (``Graph::Graph``): every ONNX ``Constant`` node becomes an initializer
named after its output (value, value_float(s), value_int(s), value_string(s)); the node is gone,
so it never runs and never gets a provider. An initializer that is also listed as a graph input
is "overridable" (a feed may replace it) and is not a constant. Nodes keep their model order
as their index. Model-local functions are inlined beforehand (``ort_dml_ops.inspection``).
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import numpy_helper

from .graph import Graph, Initializer, Node

#: Initializer values above this many elements are not read (placement needs only their size).
VALUE_LIMIT = 1 << 16
_GRAPH, _GRAPHS = onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS


def tensor_initializer(
    t: onnx.TensorProto, name: str | None = None, overridable: bool = False
) -> Initializer:
    dims = tuple(int(d) for d in t.dims)
    init = Initializer(name or t.name, t.data_type, dims, None, overridable)
    external = t.data_location == onnx.TensorProto.EXTERNAL
    if not external and init.numel <= VALUE_LIMIT:
        try:
            init.value = numpy_helper.to_array(t)
        except Exception:  # noqa: BLE001 - an exotic type: its size is all placement needs
            init.value = None
    return init


def constant_value(node: onnx.NodeProto) -> Initializer | None:
    """The initializer graph.cc makes of a Constant node (None for a sparse_value Constant)."""
    name = node.output[0]
    for a in node.attribute:
        if a.name == "value" and a.type == onnx.AttributeProto.TENSOR:
            return tensor_initializer(a.t, name)
        if a.name == "value_float":
            return Initializer(
                name, onnx.TensorProto.FLOAT, (), np.array(a.f, np.float32)
            )
        if a.name == "value_floats":
            return Initializer(
                name,
                onnx.TensorProto.FLOAT,
                (len(a.floats),),
                np.array(a.floats, np.float32),
            )
        if a.name == "value_int":
            return Initializer(
                name, onnx.TensorProto.INT64, (), np.array(a.i, np.int64)
            )
        if a.name == "value_ints":
            return Initializer(
                name, onnx.TensorProto.INT64, (len(a.ints),), np.array(a.ints, np.int64)
            )
        if a.name == "value_string":
            return Initializer(name, onnx.TensorProto.STRING, (), None)
        if a.name == "value_strings":
            return Initializer(name, onnx.TensorProto.STRING, (len(a.strings),), None)
    return None


def build_graph(
    g: onnx.GraphProto, parent: Graph | None = None, label: str = ""
) -> Graph:
    """A Graph from a GraphProto whose nodes are already inlined and uniquely named."""
    input_names = [i.name for i in g.input]
    inits = {
        t.name: tensor_initializer(t, overridable=t.name in input_names)
        for t in g.initializer
    }
    graph = Graph(
        [],
        inits,
        [x for x in input_names if x not in inits],
        [o.name for o in g.output],
        parent,
    )
    graph.model_order = [p.name for p in g.node]
    index = 0
    with_subgraphs = []
    for p in g.node:
        op, domain = p.op_type, p.domain
        if op == "Constant" and domain in ("", "ai.onnx") and p.output:
            init = constant_value(p)
            if init is not None:
                graph.initializers[init.name] = init
                why = "Constant node: ONNX Runtime loads it as an initializer (graph.cc); it never runs"
                graph.removed[_constant_stub(p)] = ("load", why)
                continue
        node = Node(
            index,
            p.name,
            op,
            domain if domain != "ai.onnx" else "",
            list(p.input),
            list(p.output),
            p,
        )
        index += 1
        graph.nodes.append(node)
        attributes = p.attribute
        if attributes and any(a.type in (_GRAPH, _GRAPHS) for a in attributes):
            with_subgraphs.append(node)
    graph.next_index = index
    for node in with_subgraphs:
        for a in node.proto.attribute:
            subs = (
                [a.g]
                if a.type == _GRAPH
                else list(a.graphs)
                if a.type == _GRAPHS
                else []
            )
            for j, sg in enumerate(subs):
                lab = a.name if a.type == _GRAPH else f"{a.name}[{j}]"
                node.subgraphs.append((lab, build_graph(sg, graph, lab)))
    return graph


def _constant_stub(p: onnx.NodeProto) -> Node:
    return Node(-1, p.name, p.op_type, "", [], list(p.output), p)
