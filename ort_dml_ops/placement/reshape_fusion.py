"""``ReshapeFusion`` (level 1): a Reshape's Concat-built shape becomes a constant
(``reshape_shape_fusion.py``, tried first), else a chain of reshapes becomes one node.

Both rules take a Reshape of the versions the ORT build lists (``Target.reshape_fusion_versions``:
onnxruntime-directml 1.24.4 fuses no Reshape-19 or -21, ORT 1.31 every version; measured).

The chain rule mirrors ``core/optimizer/reshape_fusion.cc`` ``ReshapeFusion::FuseContiguousReshapes``: starting
at a ``Reshape`` (topological order), follow single consumers while they are
Reshape/Squeeze/Unsqueeze and the current node makes no graph output; if the chain has two or
more nodes and the last one's output shape is fully known, ORT replaces the chain by one new
``Reshape`` named ``<first node>_new_reshape`` (``Graph::GenerateNodeName``) that reads the
first node's data and a new constant shape, and writes the last node's output.
"""

from __future__ import annotations

import numpy as np
import onnx

from .graph import Graph, Initializer, Node, since_version
from .reshape_shape_fusion import fuse_subgraph

_CHAIN = ("Reshape", "Squeeze", "Unsqueeze")


def fuse(
    graph: Graph,
    shapes: dict,
    symbols: dict | None = None,
    opsets: dict | None = None,
    versions: frozenset[int] | None = None,
) -> bool:
    """One pass over the Reshapes; `symbols`: see ``reshape_shape_fusion.fuse_subgraph``;
    `versions`: the Reshape since-versions the build's ReshapeFusion takes (ApplyImpl's
    ``IsSupportedOptypeVersionAndDomain``, before either rule), None for all; `opsets`: the
    model's imports, which resolve a node's version."""
    changed = False
    for first in graph.topological():
        if first.dead or first.op_type != "Reshape" or first.domain != "":
            continue
        if versions is not None and since_version(first, opsets or {}) not in versions:
            continue
        if fuse_subgraph(graph, first, shapes, symbols):
            changed = True
            continue
        chain = [first]
        while True:
            cur = chain[-1]
            if any(o in graph.outputs for o in cur.outputs if o):
                break
            cons = graph.consumers().get(cur.outputs[0], []) if cur.outputs else []
            edges = sum(x == cur.outputs[0] for c in cons for x in c.inputs)
            if (
                len(cons) != 1
                or edges != 1
                or cons[0].op_type not in _CHAIN
                or cons[0].domain != ""
            ):
                break
            chain.append(cons[0])
        last_shape = shapes.get(chain[-1].outputs[0])
        if len(chain) < 2 or last_shape is None or any(d is None for d in last_shape):
            continue
        shape_name = graph.generate_value_name(f"{first.name}_new_shape")
        value = np.array(last_shape, dtype=np.int64)
        graph.initializers[shape_name] = Initializer(shape_name, 7, value.shape, value)
        name = graph.generate_node_name(f"{first.name}_new_reshape")
        proto = onnx.helper.make_node(
            "Reshape", [first.inputs[0], shape_name], [chain[-1].outputs[0]], name=name
        )
        node = Node(
            graph.next_index,
            name,
            "Reshape",
            "",
            [first.inputs[0], shape_name],
            [chain[-1].outputs[0]],
            proto,
            origin="ReshapeFusion",
        )
        graph.next_index += 1
        for c in chain:
            graph.remove(
                c,
                "ReshapeFusion",
                f"contiguous reshapes fused by ORT's ReshapeFusion into '{name}'",
            )
        graph.add(node)
        changed = True
    return changed
