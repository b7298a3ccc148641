"""ORT's level-1 ``TransposeOptimizer`` (run last in each round): Transposes pushed through the
nodes that read them, where they cancel or merge with others.

Behaviour of ``core/optimizer/transpose_optimization/onnx_transpose_optimization.cc``, written
anew from it and from measurements of onnxruntime 1.31 (where it differs from that source):

* ``OptimizeImpl``: nodes are visited once, in ORT's topological order as it stood when the
  pass began; for a node reading a Transpose (valid ``perm``), ``ProcessTranspose`` looks up the
  node's handler (``handler_map`` plus ORT's extended handlers: Resize, MaxPool, which never push
  at level 1) and the inputs it may transpose, asks the cost check and runs the handler. After
  one push the node's other inputs are not looked at.
* Cost (``ShouldPushTranspose`` / ``CalculateCost`` / ``EstimateTransposeInputsCost``): a
  Transpose node always merges. Else each transposable input costs 0 when it is a constant
  initializer, minus its rank (``EstimateValueRank``: dims other than 1; 5 when unknown) when it
  is the pushed Transpose's output and every reader of that has a handler
  (``CanLikelyRemoveTranspose``), 0 for another Transpose, else its rank. When that is negative
  and the handler transposes its outputs, the largest output rank is added unless an output
  leads to a Transpose (``outputs_leading_to_transpose``: through handled nodes, Gather
  included) *and* (measured on 1.31) either has one reader, or a Transpose with the inverse perm
  can be reached from it. Push when the total is negative.
* Handlers: elementwise (``HandleSimpleNode``), broadcasting ops (``HandleSimpleNodeBroadcast``:
  lower-rank inputs unsqueezed first, ``NormalizeInputRanks`` / ``UnsqueezeInput``), Concat,
  Split, Softmax (``HandleSimpleNodeWithAxis``), Shape (``HandleShape``), Slice
  (``HandleSlice``), the Reduce ops (``HandleReduceOps``), Squeeze, Unsqueeze
  (``HelpHandleUnsqueeze``), Gather with rank-0 indices (measured: 1.31 has such a handler and
  refuses other Gathers) and Transpose (``HandleTranspose``: cancel or merge; the second keeps
  its name and gets the composed perm).
* ``TransposeInputs`` (``TransposeInputImpl``): a constant initializer is transposed in place
  (a 1-D one as long as the rank is permuted into a new initializer; other readers get a
  Transpose back); a Transpose producer cancels (removed once unread) or composes into a new
  Transpose; an existing Transpose with the same perm is reused; else a new Transpose.
  ``TransposeOutputs``: a new Transpose takes over each output (``MoveOutput``), the node's
  output is renamed after the node.
* Names: ``Graph::GenerateNodeName`` / ``GenerateNodeArgName`` (``ApiGraph::AddNode``: node
  ``<Op>``, output ``<name>_out0``; ``AddInitializer``: ``const_transpose_optimizer``;
  ``MoveOutput``: the node's name), one counter per graph (graph.py).
* Pad (``HandlePad`` / ``PermuteInput``): a constant pads input is permuted into a new
  initializer, any other pads value is read through a new Gather.
* The layout transformation's run (layout_transformation.py) adds its cost check
  (``PostLayoutTransformCostCheck``): the two layout perms go through any node but a Concat.

Not modelled: the handlers of Tile, ArgMin/ArgMax, Quantize/DequantizeLinear, Reshape and
Resize (they count as handled for the cost, but push nothing here), looking past a
DequantizeLinear for a constant, and the QDQ clean-up after the pass (``TryConstantFoldNode``,
``FixQDQNodeUnits``).
"""

from __future__ import annotations

import numpy as np
import onnx

from ..targets import type_string
from .graph import Graph, Initializer, Node

STEP = "TransposeOptimizer"
REMOVED = "Transpose pushed past the nodes that read it by ORT's TransposeOptimizer"
MIN_OPSET, MAX_OPSET = 7, 25

_UNARY = [
    "Cast",
    "Exp",
    "Gelu",
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
]
_BROADCAST = [
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
]
_REDUCE = [
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
]
#: handled ops whose handler is not modelled (they still count as handled for the cost)
_UNMODELLED = [
    "Tile",
    "ArgMin",
    "ArgMax",
    "QuantizeLinear",
    "DequantizeLinear",
    "Resize",
    "MaxPool",
]
#: ops whose handler does not transpose the outputs
_KEEPS_OUTPUTS = {"Transpose", "Shape", "Reshape"}


# -- permutations ---------------------------------------------------------------------------------
def invert(perm: list) -> list:
    out = [0] * len(perm)
    for i, p in enumerate(perm):
        out[p] = i
    return out


def compose(first: list, second: list) -> list:
    """The perm of Transpose(second) after Transpose(first)."""
    return [first[p] for p in second]


def channels_last_perm(rank: int) -> list:
    """ChannelFirstToLastPerm: NCHW -> NHWC (0, 2, 3, ..., 1)."""
    return [0, *range(2, rank), 1]


def channels_first_perm(rank: int) -> list:
    """ChannelLastToFirstPerm: NHWC -> NCHW (0, rank - 1, 1, ..., rank - 2)."""
    return invert(channels_last_perm(rank))


def is_layout_perm(perm: list) -> bool:
    """One of the two perms the layout transformation adds."""
    rank = len(perm)
    return rank >= 2 and perm in (channels_last_perm(rank), channels_first_perm(rank))


def _valid_perm(perm) -> bool:
    return perm is not None and sorted(perm) == list(range(len(perm)))


def _perm_of(node: Node) -> list | None:
    """GetPermAttrIfValid: a Transpose's perm (None when absent or not a permutation)."""
    perm = node.attr("perm")
    perm = [int(p) for p in perm] if perm is not None else None
    return perm if _valid_perm(perm) else None


def _normalize_axes(axes: list, rank: int) -> list | None:
    out = [a + rank if a < 0 else a for a in axes]
    if any(not 0 <= a < rank for a in out) or len(set(out)) != len(out):
        return None
    return out


def _squeeze_perm(axes: list, perm: list) -> list:
    kept = [i for i in range(len(perm)) if i not in axes]
    return [kept.index(p) for p in perm if p not in axes]


def _unsqueezed(dims, axes: list):
    """A shape with 1s inserted at `axes` (None stays None)."""
    if dims is None:
        return None
    out = list(dims)
    for a in sorted(axes):
        out.insert(a, 1)
    return tuple(out)


def _unsqueeze_perm(axes: list, perm: list) -> list:
    rank = len(perm) + len(axes)
    old_to_new = [i for i in range(rank) if i not in axes]
    rest = iter(perm)
    return [i if i in axes else old_to_new[next(rest)] for i in range(rank)]


# -- handler table --------------------------------------------------------------------------------
def _first_input(node: Node, shapes: dict) -> list:
    return [0]


def _all_inputs(node: Node, shapes: dict) -> list:
    return list(range(len(node.inputs)))


def _non_scalar_inputs(node: Node, shapes: dict) -> list:
    return [i for i, x in enumerate(node.inputs) if shapes.get(x) != ()]


def _inputs_of(node: Node, shapes: dict) -> list:
    """The inputs a node's handler may transpose (``transposible_inputs_fn``)."""
    op = node.op_type
    if op in _BROADCAST:
        return _non_scalar_inputs(node, shapes)
    if op == "Concat":
        return _all_inputs(node, shapes)
    return _first_input(node, shapes)


HANDLED = frozenset(
    _UNARY
    + _BROADCAST
    + _REDUCE
    + _UNMODELLED
    + [
        "Clip",
        "CastLike",
        "Transpose",
        "Concat",
        "Split",
        "Shape",
        "Softmax",
        "Hardmax",
        "LogSoftmax",
        "Squeeze",
        "Unsqueeze",
        "Slice",
        "Reshape",
        "Gather",
        "Pad",
    ]
)


def _handled(node: Node) -> bool:
    return node.domain == "" and node.op_type in HANDLED


def _transposes_outputs(node: Node) -> bool:
    return node.op_type not in _KEEPS_OUTPUTS


class _Pass:
    """One OptimizeImpl run on one graph level.

    `layout_cost`: the layout transformation's cost check (``PostLayoutTransformCostCheck``,
    layout_transformation.cc) in front of the default one."""

    def __init__(
        self,
        graph: Graph,
        types: dict,
        shapes: dict,
        opset: int,
        layout_cost: bool = False,
    ):
        self.graph, self.types, self.shapes, self.opset = graph, types, shapes, opset
        self.layout_cost = layout_cost

    # -- graph edits, as ORT's ApiGraph makes them ----------------------------------------------
    def readers(self, value: str) -> list:
        return list(self.graph.consumers().get(value, ()))

    def comprehensive(self, value: str) -> bool:
        """ApiGraph::GetValueConsumers' `comprehensive`: no graph output, no subgraph read."""
        return value not in self.graph.outputs and not any(
            value not in n.inputs for n in self.readers(value)
        )

    def has_readers(self, value: str) -> bool:
        return bool(self.readers(value)) or value in self.graph.outputs

    def set_input(self, node: Node, i: int, value: str) -> None:
        self.graph.set_input(node, i, value)

    def replace_reads(self, nodes: list, old: str, new: str) -> None:
        for n in nodes:
            for i, x in enumerate(n.inputs):
                if x == old:
                    self.set_input(n, i, new)

    def add_node(self, op: str, inputs: list, **attrs) -> Node:
        """ApiGraph::AddNode: node `<op>`, its one output `<name>_out0` (generated names)."""
        name = self.graph.generate_node_name(op)
        outs = [self.graph.generate_value_name(f"{name}_out0")]
        proto = onnx.helper.make_node(op, inputs, outs, name=name, **attrs)
        node = Node(
            self.graph.next_index, name, op, "", list(inputs), outs, proto, origin=STEP
        )
        self.graph.next_index += 1
        self.graph.add(node)
        return node

    def remove(self, node: Node) -> None:
        self.graph.remove(node, STEP, REMOVED)

    def set_attr(self, node: Node, name: str, value) -> None:
        proto = onnx.NodeProto()
        proto.CopyFrom(node.proto)
        kept = [a for a in proto.attribute if a.name != name]
        del proto.attribute[:]
        proto.attribute.extend(kept)
        if value is not None:
            proto.attribute.append(onnx.helper.make_attribute(name, value))
        node.proto = proto
        node.cse_attributes = None

    def add_initializer(self, values, elem_type: int = 7) -> str:
        value = np.array(values, dtype=onnx.helper.tensor_dtype_to_np_dtype(elem_type))
        name = self.graph.generate_value_name("const_transpose_optimizer")
        self.graph.initializers[name] = Initializer(name, elem_type, value.shape, value)
        self.shapes[name] = tuple(value.shape)
        self.types[name] = type_string(elem_type)
        return name

    def drop_initializer_if_unread(self, name: str) -> None:
        if name in self.graph.initializers and not self.has_readers(name):
            del self.graph.initializers[name]

    def move_output(self, src: Node, i: int, dst: Node, j: int) -> str:
        """ApiGraph::MoveOutput: `dst` writes src's output i; src's gets the name of src."""
        value = src.outputs[i]
        dst.outputs[j] = value
        renamed = self.graph.generate_value_name(src.name)
        src.outputs[i] = renamed
        self.types[renamed] = self.types.get(value)
        self.graph.touch()
        return renamed

    def copy_info(self, src: str, dst: str, dims=None) -> None:
        self.types[dst] = self.types.get(src)
        self.shapes[dst] = dims if dims is not None else self.shapes.get(src)

    def constant(self, value: str) -> Initializer | None:
        """GetLocalConstant: an initializer of this graph level no feed can override."""
        init = self.graph.initializers.get(value)
        return None if init is None or init.overridable else init

    def transpose_of(self, value: str) -> tuple[Node, list] | None:
        """The Transpose writing `value` and its perm, where it has a valid one (the producer
        check each of TransposeInput, the cost estimate and OptimizeImpl makes)."""
        producer = self.graph.producers().get(value)
        if producer is None or producer.op_type != "Transpose" or producer.domain:
            return None
        perm = _perm_of(producer)
        return None if perm is None else (producer, perm)

    def rank_of(self, value: str) -> int:
        """EstimateValueRank: dims other than 1 (5 when the shape is unknown)."""
        dims = self.shapes.get(value)
        return 5 if dims is None else sum(1 for d in dims if d != 1)

    # -- TransposeInput / UnsqueezeInput / TransposeOutputs ---------------------------------------
    def transpose_input(self, node: Node, i: int, perm: list) -> None:
        value, inverse = node.inputs[i], invert(perm)
        self.set_input(node, i, "")
        init = self.constant(value)
        others = self.readers(value)
        if init is not None and self.comprehensive(value):
            self.set_input(node, i, value)
            self.transpose_constant(node, i, init, perm, inverse, others)
            return
        transposed = self.transpose_of(value)
        if transposed is not None and len(transposed[1]) == len(perm):
            producer, perm2 = transposed
            self.set_input(
                node, i, self.through_transpose(producer, perm2, perm, value)
            )
            return
        for reader in others:
            if reader.op_type == "Transpose" and _perm_of(reader) == perm:
                self.set_input(node, i, reader.outputs[0])
                return
        added = self.add_node("Transpose", [value], perm=perm)
        self.copy_info(value, added.outputs[0], self.permuted(value, perm))
        self.set_input(node, i, added.outputs[0])

    def transpose_constant(self, node, i, init, perm, inverse, others) -> None:
        if init.numel == 1:
            return
        if len(init.dims) == 1 and init.dims[0] == len(perm) and init.value is not None:
            name = self.add_initializer(init.value[perm], init.elem_type)
            self.set_input(node, i, name)
            self.drop_initializer_if_unread(init.name)
            return
        if others:
            back = self.add_node("Transpose", [init.name], perm=inverse)
            self.copy_info(init.name, back.outputs[0])
            self.replace_reads(others, init.name, back.outputs[0])
        init.dims = tuple(init.dims[p] for p in perm)
        if init.value is not None:
            init.value = np.transpose(init.value, perm)
        self.shapes[init.name] = init.dims

    def through_transpose(
        self, producer: Node, perm2: list, perm: list, value: str
    ) -> str:
        """An input made by a Transpose: cancel it, or compose the two perms into a new one."""
        source = producer.inputs[0]
        if perm2 == invert(perm):
            if self.comprehensive(value) and not self.readers(value):
                self.remove(producer)
            return source
        added = self.add_node("Transpose", [source], perm=compose(perm2, perm))
        self.copy_info(value, added.outputs[0], self.permuted(value, perm))
        if self.comprehensive(value) and not self.readers(value):
            self.remove(producer)
        return added.outputs[0]

    def permuted(self, value: str, perm: list):
        dims = self.shapes.get(value)
        return (
            None
            if dims is None or len(dims) != len(perm)
            else tuple(dims[p] for p in perm)
        )

    def axes_input(self, axes: list) -> list:
        """MakeSqueezeOrUnsqueeze: the axes as an attribute (opset < 13) or a new initializer."""
        return [] if self.opset < 13 else [self.add_initializer(axes)]

    def squeeze_or_unsqueeze(self, op: str, value: str, axes: list) -> Node:
        extra = self.axes_input(axes)
        attrs = {"axes": axes} if self.opset < 13 else {}
        return self.add_node(op, [value, *extra], **attrs)

    def unsqueeze_input(self, node: Node, i: int, axes: list) -> None:
        value = node.inputs[i]
        self.set_input(node, i, "")
        init = self.constant(value)
        others = self.readers(value)
        if init is not None and self.comprehensive(value):
            if others:
                squeeze = self.squeeze_or_unsqueeze("Squeeze", value, axes)
                self.copy_info(value, squeeze.outputs[0])
                self.replace_reads(others, value, squeeze.outputs[0])
            init.dims = _unsqueezed(init.dims, axes)
            if init.value is not None:
                init.value = init.value.reshape(init.dims)
            self.shapes[value] = init.dims
            self.set_input(node, i, value)
            return
        producer = self.graph.producers().get(value)
        if (
            producer is not None
            and producer.op_type == "Squeeze"
            and producer.domain == ""
            and self.read_axes(producer, "axes", 1, 13) == axes
        ):  # a Squeeze with these axes: undone
            self.set_input(node, i, producer.inputs[0])
            if self.comprehensive(value) and not others:
                self.remove(producer)
                if self.opset >= 13 and len(producer.inputs) > 1:
                    self.drop_initializer_if_unread(producer.inputs[1])
            return
        unsqueeze = self.squeeze_or_unsqueeze("Unsqueeze", value, axes)
        self.copy_info(
            value, unsqueeze.outputs[0], _unsqueezed(self.shapes.get(value), axes)
        )
        transposed = self.transpose_of(value)
        if transposed is not None:  # the Transpose moves past the new Unsqueeze at once
            self.set_input(node, i, self.help_unsqueeze(unsqueeze, transposed[1], axes))
            return
        self.set_input(node, i, unsqueeze.outputs[0])

    def help_unsqueeze(self, unsqueeze: Node, perm: list, axes: list) -> str:
        """HelpHandleUnsqueeze: the Transpose moves past the Unsqueeze; its new output."""
        self.transpose_input(unsqueeze, 0, invert(perm))
        new_perm = _unsqueeze_perm(axes, perm)
        return self.transpose_output(unsqueeze, 0, new_perm)

    def transpose_output(self, node: Node, i: int, perm: list) -> str:
        added = self.add_node("Transpose", [""], perm=perm)
        old = node.outputs[i]
        dims = self.shapes.get(old)
        new = self.move_output(node, i, added, 0)
        self.set_input(added, 0, new)
        inverse = invert(perm)
        if dims is not None and len(dims) == len(perm):
            self.shapes[new] = tuple(dims[p] for p in inverse)
        else:
            self.shapes[new] = dims
        return old

    def transpose_outputs(self, node: Node, perm: list) -> None:
        if perm == list(range(len(perm))):
            return
        for i in range(len(node.outputs)):
            self.transpose_output(node, i, perm)

    def read_axes(self, node: Node, attr: str, index: int, since: int) -> list | None:
        """ReadFromAttrOrInput: an attribute before opset `since`, else a constant input."""
        if self.opset < since:
            value = node.attr(attr)
            return None if value is None else [int(a) for a in value]
        if len(node.inputs) <= index or not node.inputs[index]:
            return None
        return self.graph.int_values(node.inputs[index])

    # -- cost ----------------------------------------------------------------------------------
    def can_likely_remove(self, transpose: Node) -> bool:
        out = transpose.outputs[0]
        return self.comprehensive(out) and all(_handled(n) for n in self.readers(out))

    def input_cost(self, value: str, perm: list) -> int:
        if self.graph.is_constant(value):
            return 0
        transposed = self.transpose_of(value)
        if transposed is not None:
            producer, perm2 = transposed
            if perm2 == perm and self.can_likely_remove(producer):
                return -self.rank_of(value)
            return 0
        return self.rank_of(value)

    def reaches_inverse(self, value: str, inverse: list, seen: set) -> bool:
        """A Transpose with perm `inverse` reachable from `value` through handled nodes."""
        for reader in self.readers(value):
            if reader in seen:
                continue
            seen.add(reader)
            if reader.op_type == "Transpose":
                if _perm_of(reader) == inverse:
                    return True
            elif _handled(reader) and _transposes_outputs(reader):
                slots = _inputs_of(reader, self.shapes)
                reads = any(
                    reader.inputs[j] == value for j in slots if j < len(reader.inputs)
                )
                if reads and any(
                    self.reaches_inverse(o, inverse, seen) for o in reader.outputs if o
                ):
                    return True
        return False

    def output_waived(self, value: str, perm: list, leading: set) -> bool:
        if value not in leading:
            return False
        if self.comprehensive(value) and len(self.readers(value)) == 1:
            return True
        return self.reaches_inverse(value, invert(perm), set())

    def should_push(self, node: Node, perm: list, indices: list, leading: set) -> bool:
        if node.op_type == "Transpose":
            return True
        if self.layout_cost and node.op_type != "Concat" and is_layout_perm(perm):
            return (
                True  # PostLayoutTransformCostCheck: the layout's Transposes go far out
            )
        cost = sum(self.input_cost(node.inputs[j], perm) for j in indices)
        if cost < 0 and _transposes_outputs(node):
            outputs = [o for o in node.outputs if o]
            if not any(self.output_waived(o, perm, leading) for o in outputs):
                cost += max((self.rank_of(o) for o in outputs), default=0)
        return cost < 0

    # -- handlers -------------------------------------------------------------------------------
    def simple(self, node: Node, perm: list, indices: list) -> bool:
        for j in indices:
            self.transpose_input(node, j, invert(perm))
        self.transpose_outputs(node, perm)
        return True

    def broadcast(self, node: Node, perm: list, indices: list) -> bool:
        ranks = []
        for j in indices:
            dims = self.shapes.get(node.inputs[j])
            if dims is None or len(dims) > len(perm):
                return False
            ranks.append(len(dims))
        for j, rank in zip(indices, ranks):
            if rank < len(perm):
                self.unsqueeze_input(node, j, list(range(len(perm) - rank)))
        return self.simple(node, perm, indices)

    def with_axis(self, node: Node, perm: list, indices: list, default=None) -> bool:
        axis = node.attr("axis", default)
        if axis is None:
            return False
        axis = int(axis) + len(perm) if int(axis) < 0 else int(axis)
        if not 0 <= axis < len(perm):
            return False
        self.simple(node, perm, indices)
        self.set_attr(node, "axis", perm[axis])
        return True

    def softmax(self, node: Node, perm: list, indices: list) -> bool:
        if self.opset >= 13:
            return self.with_axis(node, perm, indices, -1)
        axis = int(node.attr("axis", 1))
        axis = axis + len(perm) if axis < 0 else axis
        if not 0 <= axis < len(perm):
            return False
        if any((i < axis) != (p < axis) for i, p in enumerate(perm)):
            return False
        return self.simple(node, perm, indices)

    def shape(self, node: Node, perm: list, indices: list) -> bool:
        self.transpose_input(node, 0, invert(perm))
        rank = len(perm)
        kept = list(perm)
        if self.opset >= 15:
            start, end = int(node.attr("start", 0)), int(node.attr("end", rank))
            start = min(max(start + rank if start < 0 else start, 0), rank)
            end = min(max(end + rank if end < 0 else end, 0), rank)
            kept = perm[start:end]
            self.set_attr(node, "start", None)
            self.set_attr(node, "end", None)
        indices_name = self.add_initializer(kept)
        gather = self.add_node("Gather", ["", indices_name], axis=0)
        old = node.outputs[0]
        new = self.move_output(node, 0, gather, 0)
        self.set_input(gather, 0, new)
        self.copy_info(old, new, (rank,))
        return True

    def slice(self, node: Node, perm: list, indices: list) -> bool:
        rank = len(perm)
        if self.opset < 10:
            return False  # attribute-style Slice: not met on the measured models
        if len(node.inputs) < 4 or not node.inputs[3]:
            starts = self.shapes.get(node.inputs[1])
            if starts is None or len(starts) != 1 or starts[0] is None:
                return False
            axes = list(range(starts[0]))
            elem = self.elem_type(node.inputs[1])
        else:
            init = self.graph.initializer(node.inputs[3])
            values = self.graph.int_values(node.inputs[3])
            if values is None:
                return False
            normalized = _normalize_axes(values, rank)
            if normalized is None:
                return False
            axes = normalized
            elem = init.elem_type if init is not None else 7
        old_axes = node.inputs[3] if len(node.inputs) > 3 else ""
        self.set_input(node, 3, self.add_initializer([perm[a] for a in axes], elem))
        if old_axes:
            self.drop_initializer_if_unread(old_axes)
        return self.simple(node, perm, [0])

    def pad(self, node: Node, perm: list, indices: list) -> bool:
        """HandlePad: the pads (all starts, then all ends) follow the inverse perm."""
        inverse = invert(perm)
        pads_perm = inverse + [p + len(perm) for p in inverse]
        if self.opset < 11:
            pads = node.attr("pads")
            if pads is None or len(pads) != len(pads_perm):
                return False
            self.set_attr(node, "pads", [int(pads[i]) for i in pads_perm])
        elif len(node.inputs) > 3 and node.inputs[3]:
            return False  # Pad-18's axes input: not met on the measured models
        else:
            self.permute_input(node, 1, pads_perm)
        return self.simple(node, perm, [0])

    def permute_input(self, node: Node, i: int, perm: list) -> None:
        """PermuteInput: a 1-D constant of that length is permuted into a new initializer;
        any other value is read through a new Gather with the perm as indices."""
        value = node.inputs[i]
        init = self.constant(value)
        if init is not None and init.value is not None and init.dims == (len(perm),):
            name = self.add_initializer(init.value[perm], init.elem_type)
            self.set_input(node, i, name)
            self.drop_initializer_if_unread(init.name)
            return
        if init is not None and init.dims == (0,):
            return  # Permute1DConstant of an empty constant: nothing to permute
        indices = self.add_initializer(perm)
        gather = self.add_node("Gather", [value, indices], axis=0)
        self.copy_info(value, gather.outputs[0])
        self.set_input(node, i, gather.outputs[0])

    def elem_type(self, value: str) -> int:
        t = self.types.get(value) or ""
        return 6 if "int32" in t else 7

    def reduce(self, node: Node, perm: list, indices: list) -> bool:
        keepdims = int(node.attr("keepdims", 1)) != 0
        old_style = (node.op_type == "ReduceSum" and self.opset < 13) or (
            node.op_type != "ReduceSum" and self.opset < 18
        )
        if old_style:
            axes = node.attr("axes")
            if axes is None:
                out_perm = perm if keepdims else []
            else:
                axes = _normalize_axes([int(a) for a in axes], len(perm))
                if axes is None:
                    return False
                new_axes = sorted(perm[a] for a in axes)
                self.set_attr(node, "axes", new_axes)
                out_perm = perm if keepdims else _squeeze_perm(new_axes, perm)
            self.transpose_input(node, 0, invert(perm))
            self.transpose_outputs(node, out_perm)
            return True
        given = node.inputs[1] if len(node.inputs) > 1 else ""
        values = self.graph.int_values(given) if given else None
        if not given or values == []:
            self.transpose_input(node, 0, invert(perm))
            if keepdims or int(node.attr("noop_with_empty_axes", 0)):
                self.transpose_outputs(node, perm)
            return True
        if values is None:
            return False
        axes = _normalize_axes(values, len(perm))
        if axes is None:
            return False
        new_axes = sorted(perm[a] for a in axes)
        self.set_input(node, 1, self.add_initializer(new_axes))
        self.drop_initializer_if_unread(given)
        self.transpose_input(node, 0, invert(perm))
        self.transpose_outputs(
            node, perm if keepdims else _squeeze_perm(new_axes, perm)
        )
        return True

    def squeeze(self, node: Node, perm: list, indices: list) -> bool:
        axes = self.read_axes(node, "axes", 1, 13)
        axes = _normalize_axes(axes, len(perm)) if axes is not None else None
        if axes is None:
            return False
        new_axes = sorted(perm[a] for a in axes)
        if self.opset < 13:
            self.set_attr(node, "axes", new_axes)
        else:
            given = node.inputs[1]
            self.set_input(node, 1, self.add_initializer(new_axes))
            self.drop_initializer_if_unread(given)
        self.transpose_input(node, 0, invert(perm))
        self.transpose_outputs(node, _squeeze_perm(new_axes, perm))
        return True

    def unsqueeze(self, node: Node, perm: list, indices: list) -> bool:
        axes = self.read_axes(node, "axes", 1, 13)
        axes = (
            _normalize_axes(axes, len(perm) + len(axes)) if axes is not None else None
        )
        if axes is None:
            return False
        self.transpose_input(node, 0, invert(perm))
        self.transpose_outputs(node, _unsqueeze_perm(axes, perm))
        return True

    def gather(self, node: Node, perm: list, indices: list) -> bool:
        """Measured on 1.31: only a Gather with rank-0 indices is pushed through."""
        if len(node.inputs) < 2 or self.shapes.get(node.inputs[1]) != ():
            return False
        axis = int(node.attr("axis", 0))
        axis = axis + len(perm) if axis < 0 else axis
        if not 0 <= axis < len(perm):
            return False
        self.set_attr(node, "axis", perm[axis])
        self.transpose_input(node, 0, invert(perm))
        self.transpose_outputs(node, _squeeze_perm([perm[axis]], perm))
        return True

    def transpose(self, node: Node, perm: list, transpose: Node) -> bool:
        """HandleTranspose: the two Transposes cancel, or the second takes the composed perm."""
        perm2 = _perm_of(node)
        if perm2 is None or len(perm2) != len(perm):
            return False
        source = transpose.inputs[0]
        if perm2 == invert(perm):
            self.remove_canceling(node, transpose, source)
        else:
            self.set_input(node, 0, source)
            self.set_attr(node, "perm", compose(perm, perm2))
        if not self.has_readers(transpose.outputs[0]):
            self.remove(transpose)
        return True

    def remove_canceling(self, node: Node, transpose: Node, source: str) -> None:
        out = node.outputs[0]
        if self.comprehensive(out):
            self.replace_reads(self.readers(out), out, source)
        else:
            parent = self.graph.producers().get(source)
            if parent is not None and self.comprehensive(source):
                self.set_input(node, 0, "")
                self.replace_reads(self.readers(source), source, out)
                node.outputs[0] = self.graph.generate_value_name(node.name)
                parent.outputs[parent.outputs.index(source)] = out
                self.graph.touch()
            else:
                identity = self.add_node("Identity", [""])
                self.move_output(node, 0, identity, 0)
                self.set_input(identity, 0, source)
        self.remove(node)

    def run_handler(
        self, node: Node, perm: list, indices: list, transpose: Node
    ) -> bool:
        op = node.op_type
        if op == "Transpose":
            return self.transpose(node, perm, transpose)
        if op in _UNARY or op in ("Clip", "CastLike"):
            return self.simple(node, perm, indices)
        if op in _BROADCAST:
            return self.broadcast(node, perm, indices)
        if op == "Concat":
            return self.with_axis(node, perm, indices)
        if op == "Split":
            return self.with_axis(node, perm, indices, 0)
        if op in ("Softmax", "Hardmax", "LogSoftmax"):
            return self.softmax(node, perm, indices)
        if op in _REDUCE:
            return self.reduce(node, perm, indices)
        handler = {
            "Shape": self.shape,
            "Slice": self.slice,
            "Squeeze": self.squeeze,
            "Unsqueeze": self.unsqueeze,
            "Gather": self.gather,
            "Pad": self.pad,
        }.get(op)
        return handler(node, perm, indices) if handler is not None else False

    # -- OptimizeImpl ---------------------------------------------------------------------------
    def leading_to_transpose(self, order: list) -> set:
        """Values with a path through output-transposing handlers to a Transpose."""
        out: set = set()
        for node in reversed(order):
            if node.op_type == "Transpose" and node.domain == "":
                if node.inputs:
                    out.add(node.inputs[0])
                continue
            if (
                _handled(node)
                and _transposes_outputs(node)
                and any(o in out for o in node.outputs)
            ):
                for j in _inputs_of(node, self.shapes):
                    if j < len(node.inputs) and node.inputs[j]:
                        out.add(node.inputs[j])
        return out

    def process(
        self, node: Node, j: int, transpose: Node, perm: list, leading: set
    ) -> bool:
        if not _handled(node):
            return False
        indices = _inputs_of(node, self.shapes)
        if j not in indices or not self.should_push(node, perm, indices, leading):
            return False
        return self.run_handler(node, perm, indices, transpose)

    def run(self) -> bool:
        order = self.graph.topological()
        leading = self.leading_to_transpose(order)
        changed = False
        for node in order:
            if node.dead:
                continue
            for j, value in enumerate(list(node.inputs)):
                transposed = self.transpose_of(value) if value else None
                if transposed is not None and self.process(
                    node, j, *transposed, leading
                ):
                    changed = True
                    break
        return changed


def optimize(
    graph: Graph, types: dict, shapes: dict, opsets: dict | None = None
) -> bool:
    """One OptimizeImpl pass over one graph level; True when it changed the graph."""
    if not any(n.op_type == "Transpose" and n.domain == "" for n in graph.nodes):
        return False  # no Transpose to push: the handlers have nothing to do
    opsets = opsets or {}
    opset = opsets.get("", opsets.get("ai.onnx"))
    if opset is None or not MIN_OPSET <= opset <= MAX_OPSET:
        return False  # MakeOptimizerContext: an unsupported ONNX opset is left alone
    return _Pass(graph, types, shapes, opset).run()
