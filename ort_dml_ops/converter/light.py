"""The onnx-ir model as a ModelProto for onnx's C API (shape inference, the checker), without
copying its weights.

onnx's shape inference and checker need a ModelProto, but not the bytes of large tensors.
Like onnx-ir's own `ShapeInferencePass` (onnx_ir/passes/common/_c_api_utils.py,
`call_onnx_api`), a large main-graph initializer is left out of the serialized copy; here it
is written as the same stub `large_tensors.detach_large_initializers` writes (external data at
`ort-dml-ops-detached:<name>`), so `modelio.without_external_data` turns it and every real
external tensor into a graph input of the same type. The model itself is not changed.
"""

from __future__ import annotations

import onnx
import onnx_ir as ir

from ..large_tensors import DETACHED, STREAM_BYTES


def serialize_light(model: ir.Model) -> onnx.ModelProto:
    """`model` serialized with its large inline main-graph initializers as external stubs."""
    swapped = []
    for value in model.graph.initializers.values():
        tensor = value.const_value
        if (
            tensor is None
            or isinstance(tensor, ir.ExternalTensor)
            or tensor.nbytes < STREAM_BYTES
        ):
            continue
        stub = ir.ExternalTensor(
            DETACHED + str(value.name),
            None,
            tensor.nbytes,
            tensor.dtype,
            shape=ir.Shape(tensor.shape.numpy()),
            name=str(value.name),
        )
        swapped.append((value, tensor))
        value.const_value = stub
    try:
        return ir.serde.serialize_model(model)
    finally:
        for value, tensor in swapped:
            value.const_value = tensor


def subgraph_pairs(graph: ir.Graph, proto: onnx.GraphProto):
    """(ir graph, its GraphProto) for `graph` and every If/Loop/Scan body inside it, where
    `proto` is `graph` serialized (same nodes in the same order)."""
    yield graph, proto
    if len(proto.node) != len(graph):
        return
    for node, node_proto in zip(graph, proto.node):
        if not node_proto.attribute:
            continue
        attrs = {a.name: a for a in node_proto.attribute}
        for name, attr in node.attributes.items():
            attr_proto = attrs.get(name)
            if attr_proto is None:
                continue
            if attr.type == ir.AttributeType.GRAPH:
                yield from subgraph_pairs(attr.as_graph(), attr_proto.g)
            elif attr.type == ir.AttributeType.GRAPHS:
                for sub, sub_proto in zip(attr.as_graphs(), attr_proto.graphs):
                    yield from subgraph_pairs(sub, sub_proto)
