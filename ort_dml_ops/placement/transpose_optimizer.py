"""The parts of ORT's ``TransposeOptimizer`` (level 1, run last) met on real exports: Shape and Slice.

Mirrors ``core/optimizer/transpose_optimization/onnx_transpose_optimization.cc`` ``OptimizeImpl``:
nodes are visited in ORT's topological order; a node whose input is made by a Transpose gets the
Transpose pushed through it when its handler exists and the cost estimate says so
(``ShouldPushTranspose``): the input cost is minus the rank of the transposed value (dimensions
of size 1 not counted, ``EstimateValueRank``; 5 when unknown) when every consumer of the Transpose
has a handler (``CanLikelyRemoveTranspose``), else 0; for a handler that transposes its outputs
the output's rank is added unless the output leads to another Transpose; push when < 0.

* ``HandleShape``: ``Shape(Transpose(x, perm))`` becomes ``Gather(Shape(x), perm[start:end])``:
  the Shape keeps its name and reads ``x``; ORT adds the Gather (``Gather``, ``Gather_token_<n>``).
* ``HandleSlice``: the Slice reads ``x`` with its axes mapped through ``perm`` (a new constant,
  ``const_transpose_optimizer``...), and a new ``Transpose`` (``Transpose``,
  ``Transpose_token_<n>``) after it writes the Slice's old output.

A Transpose nobody reads any more is removed. The names come from ``Graph::GenerateNodeName`` /
``GenerateNodeArgName`` (one counter per graph). Other handlers (elementwise, Squeeze, Concat,
Reshape...) are not modelled: on the measured models their cost estimate did not push.
"""

from __future__ import annotations

import numpy as np
import onnx

from .graph import Graph, Initializer, Node

_SIMPLE = [
    "Cast",
    "Exp",
    "Identity",
    "LeakyRelu",
    "Log",
    "Reciprocal",
    "Relu",
    "Sigmoid",
    "Sqrt",
    "Tanh",
    "Abs",
    "Not",
    "Ceil",
    "Floor",
    "Neg",
    "Erf",
    "HardSigmoid",
    "Round",
    "IsInf",
    "IsNaN",
    "Selu",
    "Shrink",
    "Sign",
    "Softplus",
    "Softsign",
    "ThresholdedRelu",
    "Celu",
    "HardSwish",
    "Sin",
    "Cos",
    "Tan",
    "Sinh",
    "Cosh",
    "Asin",
    "Acos",
    "Atan",
    "Asinh",
    "Acosh",
    "Atanh",
    "Clip",
    "CastLike",
    "Split",
    "Pad",
    "ReduceLogSum",
    "ReduceLogSumExp",
    "ReduceMax",
    "ReduceMean",
    "ReduceMin",
    "ReduceProd",
    "ReduceSum",
    "ReduceSumSquare",
    "ReduceL1",
    "ReduceL2",
    "ArgMin",
    "ArgMax",
    "Squeeze",
    "Unsqueeze",
    "Slice",
    "Tile",
    "Softmax",
    "Hardmax",
    "LogSoftmax",
    "QuantizeLinear",
    "DequantizeLinear",
]
_ALL_INPUTS = [
    "Add",
    "Max",
    "Min",
    "Mul",
    "Sub",
    "Div",
    "And",
    "Or",
    "Xor",
    "Mod",
    "PRelu",
    "BitShift",
    "Equal",
    "Greater",
    "Less",
    "GreaterOrEqual",
    "LessOrEqual",
    "Mean",
    "Sum",
    "Pow",
    "Where",
    "Concat",
]
#: ONNX ops with a handler in ``handler_map``; value: (all inputs transposable, transposes outputs)
HANDLERS = {
    **{op: (False, True) for op in _SIMPLE},
    **{op: (True, True) for op in _ALL_INPUTS},
    "Transpose": (False, True),
    "Shape": (False, False),
    "Reshape": (False, False),
}


def _rank(shapes: dict, value: str) -> int:
    """EstimateValueRank: the number of dimensions not of size 1; 5 when the shape is unknown."""
    dims = shapes.get(value)
    if dims is None:
        return 5
    return sum(1 for d in dims if d != 1)


def _handled(node: Node) -> bool:
    return node.domain == "" and node.op_type in HANDLERS


def _leading_to_transpose(order: list) -> set:
    """OptimizeImpl's first pass: values with a path through output-transposing handlers to a Transpose."""
    out: set = set()
    for node in reversed(order):
        if node.op_type == "Transpose" and node.domain == "":
            if node.inputs:
                out.add(node.inputs[0])
            continue
        if (
            any(o in out for o in node.outputs)
            and _handled(node)
            and HANDLERS[node.op_type][1]
        ):
            ins = node.inputs if HANDLERS[node.op_type][0] else node.inputs[:1]
            out.update(x for x in ins if x)
    return out


def _should_push(
    graph: Graph, node: Node, transpose: Node, shapes: dict, leading: set
) -> bool:
    cons = graph.consumers().get(transpose.outputs[0], [])
    removable = transpose.outputs[0] not in graph.outputs and all(
        _handled(c) for c in cons
    )
    cost = -_rank(shapes, transpose.outputs[0]) if removable else 0
    if (
        cost < 0
        and HANDLERS[node.op_type][1]
        and not any(o in leading for o in node.outputs if o)
    ):
        cost += max(_rank(shapes, o) for o in node.outputs if o)
    return cost < 0


def _drop_if_unread(graph: Graph, transpose: Node) -> None:
    if (
        not graph.consumers().get(transpose.outputs[0])
        and transpose.outputs[0] not in graph.outputs
    ):
        graph.remove(
            transpose,
            "TransposeOptimizer",
            "Transpose pushed past the nodes that read it by ORT's TransposeOptimizer",
        )


def _constant(graph: Graph, values) -> str:
    value = np.array(values, dtype=np.int64)
    name = graph.generate_value_name("const_transpose_optimizer")
    graph.initializers[name] = Initializer(name, 7, value.shape, value)
    return name


def _shape(
    graph: Graph, node: Node, transpose: Node, perm: list, types: dict, shapes: dict
) -> None:
    rank = len(perm)
    start, end = int(node.attr("start", 0)), int(node.attr("end", rank))
    start = min(max(start + rank if start < 0 else start, 0), rank)
    end = min(max(end + rank if end < 0 else end, 0), rank)
    perm_name = _constant(graph, perm[start:end])
    old_out = node.outputs[0]
    new_out = graph.generate_value_name(f"{old_out}_shape")
    proto = onnx.NodeProto()
    proto.CopyFrom(node.proto)
    kept = [a for a in proto.attribute if a.name not in ("start", "end")]
    del proto.attribute[:]
    proto.attribute.extend(kept)
    node.proto = proto
    node.inputs = [transpose.inputs[0]]
    node.outputs = [new_out]
    graph.touch()
    types[new_out], shapes[new_out] = "tensor(int64)", (rank,)
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


def _slice_axes(graph: Graph, node: Node, shapes: dict, rank: int):
    if len(node.inputs) > 3 and node.inputs[3]:
        init = graph.initializer(node.inputs[3])
        if init is None or init.overridable or init.value is None:
            return None
        return [int(a) + rank if int(a) < 0 else int(a) for a in init.value.reshape(-1)]
    starts = shapes.get(node.inputs[1]) if len(node.inputs) > 1 else None
    if starts is None or len(starts) != 1 or starts[0] is None:
        return None
    return list(range(starts[0]))


def _slice(
    graph: Graph, node: Node, transpose: Node, perm: list, types: dict, shapes: dict
) -> bool:
    axes = _slice_axes(graph, node, shapes, len(perm))
    if axes is None or any(not 0 <= a < len(perm) for a in axes):
        return False
    axes_name = _constant(graph, [perm[a] for a in axes])
    ins = list(node.inputs) + [""] * (4 - len(node.inputs))
    ins[0], ins[3] = transpose.inputs[0], axes_name
    old_out = node.outputs[0]
    new_out = graph.generate_value_name(node.name)
    node.inputs, node.outputs = ins, [new_out] + list(node.outputs[1:])
    graph.touch()
    types[new_out] = types.get(old_out)
    old = shapes.get(old_out)
    if old is not None:
        shapes[new_out] = tuple(old[perm.index(j)] for j in range(len(perm)))
    name = graph.generate_node_name("Transpose")
    tproto = onnx.helper.make_node(
        "Transpose", [new_out], [old_out], perm=perm, name=name
    )
    graph.add(
        Node(
            graph.next_index,
            name,
            "Transpose",
            "",
            [new_out],
            [old_out],
            tproto,
            origin="TransposeOptimizer",
        )
    )
    graph.next_index += 1
    return True


def optimize(graph: Graph, types: dict, shapes: dict) -> bool:
    """One OptimizeImpl pass (Shape and Slice handlers)."""
    if not any(n.op_type == "Transpose" and n.domain == "" for n in graph.nodes):
        return False  # no Transpose to push: the handlers have nothing to do
    order = graph.topological()
    leading = _leading_to_transpose(order)
    changed = False
    for node in order:
        if (
            node.dead
            or node.domain != ""
            or node.op_type not in ("Shape", "Slice")
            or not node.inputs
        ):
            continue
        transpose = graph.producers().get(node.inputs[0])
        if (
            transpose is None
            or transpose.op_type != "Transpose"
            or transpose.domain != ""
        ):
            continue
        perm = [int(p) for p in (transpose.attr("perm") or [])]
        if not perm or not _should_push(graph, node, transpose, shapes, leading):
            continue
        if node.op_type == "Shape":
            _shape(graph, node, transpose, perm, types, shapes)
        elif not _slice(graph, node, transpose, perm, types, shapes):
            continue
        _drop_if_unread(graph, transpose)
        changed = True
    return changed
