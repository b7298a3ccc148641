"""The part of ORT's ``TransposeOptimizer`` (level 1, run last) that placement has met on real exports.

Mirrors ``core/optimizer/transpose_optimization/onnx_transpose_optimization.cc`` ``HandleShape``:
``Shape(Transpose(x, perm))`` becomes ``Gather(Shape(x), perm[start:end], axis=0)``: the Shape node
keeps its name, reads ``x`` and loses its start/end; ORT adds the Gather, named by
``Graph::GenerateNodeName("Gather")`` (``Gather``, then ``Gather_token_<n>``, the counter shared
with the names of the constants it adds, ``const_transpose_optimizer``...); the Transpose goes
when nothing else reads it. Not modelled: pushing Transposes through other ops (Slice, Squeeze,
elementwise ops...), which the optimizer does when its cost estimate says so.
"""

from __future__ import annotations

import numpy as np
import onnx

from .graph import Graph, Initializer, Node


def handle_shape(graph: Graph, types: dict, shapes: dict) -> bool:
    changed = False
    for node in graph.topological():
        if node.dead or node.op_type != "Shape" or node.domain != "" or not node.inputs:
            continue
        prod = graph.producers().get(node.inputs[0])
        if prod is None or prod.op_type != "Transpose" or prod.domain != "":
            continue
        perm = prod.attr("perm")
        if not perm:
            continue
        rank = len(perm)
        start, end = int(node.attr("start", 0)), int(node.attr("end", rank))
        start = min(max(start + rank if start < 0 else start, 0), rank)
        end = min(max(end + rank if end < 0 else end, 0), rank)
        sliced = np.array(perm[start:end], dtype=np.int64)
        perm_name = graph.generate_value_name("const_transpose_optimizer")
        graph.initializers[perm_name] = Initializer(perm_name, 7, sliced.shape, sliced)
        old_out = node.outputs[0]
        new_out = graph.generate_value_name(f"{old_out}_shape")
        x = prod.inputs[0]
        proto = onnx.NodeProto()
        proto.CopyFrom(node.proto)
        kept = [a for a in proto.attribute if a.name not in ("start", "end")]
        del proto.attribute[:]
        proto.attribute.extend(kept)
        node.proto = proto
        node.inputs = [x]
        node.outputs = [new_out]
        graph.touch()
        types[new_out] = "tensor(int64)"
        shapes[new_out] = (rank,)
        name = graph.generate_node_name("Gather")
        gproto = onnx.helper.make_node(
            "Gather", [new_out, perm_name], [old_out], axis=0, name=name
        )
        graph.add(
            Node(
                graph.next_index,
                name,
                "Gather",
                "",
                [new_out, perm_name],
                [old_out],
                gproto,
                origin="TransposeOptimizer",
            )
        )
        graph.next_index += 1
        if (
            not graph.consumers().get(prod.outputs[0])
            and prod.outputs[0] not in graph.outputs
        ):
            graph.remove(
                prod,
                "TransposeOptimizer",
                "Transpose no longer read once ORT's TransposeOptimizer "
                "moved it past a Shape",
            )
        changed = True
    return changed
