"""Level-1 rewrite rules that remove nodes before partitioning (``Level1_RuleBasedTransformer``).

Each mirrors a rule of ``core/optimizer/graph_transformer_utils.cc`` ``GenerateRewriteRules``
(level 1), applied to every node in topological order; a removed node's consumers read its
input instead (``graph_utils::RemoveNode``). A node whose output is a graph output is kept
(``graph_utils::CanRemoveNode``).

* ``EliminateIdentity`` (identity_elimination.cc): every Identity; one whose output is a graph
  output only when its input is made by a node, is no graph output itself and has no other
  consumer: that node then writes the graph output directly.
* ``EliminateDropout`` (dropout_elimination.cc): Dropout whose mask output is unused.
* ``CastElimination`` (cast_elimination.cc): a Cast to the type its input already has.
* ``ExpandElimination`` (expand_elimination.cc): Expand to a constant 1-D int64 shape that does
  not grow its input (from the last dimension: each target is 1 or the input's known size, and
  the target has no more dimensions than the input).
* ``NoopElimination`` (noop_elimination.cc): Add/Sub/Mul/Div with a one-element constant
  operand that leaves the other unchanged (x+0, 0+x, x-0, x*1, 1*x, x/1), same type and shape.
* ``ConvBNFusion`` (conv_bn_fusion.cc): a Conv / ConvTranspose with constant weights read only
  by a BatchNormalization of constant 1-D statistics (floating point, one length, one type, the
  weights' output channels) and no optional output: the BatchNormalization goes, the Conv
  writes its output with two new initializers (``ConvBnFusion_W_*``, ``ConvBnFusion_BN_B_*``).
* ``DivMulFusion`` (div_mul_fusion.cc): Div(1, x) read only by a Mul becomes Div(y, x), the
  Mul goes (a T5 layer norm's x · (1 / sqrt(...))).
* ``EliminateSlice`` (slice_elimination.cc): Slice 1 / 10 / 11 / 13 from 0 to INT64_MAX on every
  axis it names (constant starts, ends, axes; steps of 1 where the axes are given).
* ``GemmTransposeFusion`` (gemm_transpose_fusion.cc): matrix Transposes around a Gemm folded
  into its transA / transB (``gemm_transpose_fusion.py``).
"""

from __future__ import annotations

import numpy as np

from ..targets.value_types import type_string
from . import gemm_transpose_fusion
from .graph import Graph, Initializer, Node, since_version


def _removable(graph: Graph, node: Node) -> bool:
    return not any(o in graph.outputs for o in node.outputs if o)


def _bypass(graph: Graph, node: Node, src: str, rule: str, why: str) -> None:
    graph.remove(node, rule, why)
    for o in node.outputs:
        if o:
            graph.replace_uses(o, src)


def _can_feed_output(graph: Graph, node: Node, cons: dict) -> bool:
    """EliminateIdentity::SatisfyCondition for an Identity that makes a graph output."""
    src = node.inputs[0] if node.inputs else ""
    prod = graph.producers().get(src)
    if prod is None or src in graph.outputs or len(node.outputs) != 1:
        return False
    return sum(x == src for c in cons.get(src, ()) for x in c.inputs) == 1


def _identity_to_output(graph: Graph, node: Node, cons: dict) -> None:
    src, out = node.inputs[0], node.outputs[0]
    prod = graph.producers()[src]
    graph.remove(
        node,
        "EliminateIdentity",
        "Identity removed by ORT's EliminateIdentity (identity_elimination.cc); "
        "its producer writes the graph output",
    )
    prod.outputs = [out if o == src else o for o in prod.outputs]
    graph.touch()


def _expand_is_noop(graph: Graph, node: Node, shapes: dict) -> bool:
    if len(node.inputs) < 2:
        return False
    dims = shapes.get(node.inputs[0])
    init = graph.initializer(node.inputs[1])
    if (
        dims is None
        or init is None
        or init.overridable
        or init.value is None
        or init.elem_type != 7
        or len(init.dims) != 1
        or init.dims[0] <= 0
    ):
        return False
    target = [int(v) for v in init.value.reshape(-1)]
    i, j = len(dims) - 1, len(target) - 1
    while i >= 0 and j >= 0:
        if target[j] != 1 and dims[i] != target[j]:
            return False
        i, j = i - 1, j - 1
    return i >= j


_INT64_MAX = np.iinfo(np.int64).max


def _constant_ints(graph: Graph, node: Node, at: int) -> list | None:
    """Input `at`'s values where it is a constant int32 / int64 initializer, else None."""
    return graph.int_values(node.inputs[at] if len(node.inputs) > at else "")


def _slice_is_noop(graph: Graph, node: Node, opsets: dict) -> bool:
    """EliminateSlice::SatisfyCondition: Slice 1, 10, 11 or 13 whose every start is 0 and every
    end INT64_MAX (constants; steps, where read, all 1). ORT reads the steps only when the axes
    input is there, and does not look at the input's shape. Slice-13 is measured (ORT 1.31
    removes it; slice_elimination.cc as read lists 1, 10, 11)."""
    since = since_version(node, opsets)
    if since == 1:
        starts, ends = node.attr("starts"), node.attr("ends")
        if starts is None or ends is None or len(starts) != len(ends):
            return False
        axes = node.attr("axes")
        if axes is not None and len(axes) != len(starts):
            return False
    elif since in (10, 11, 13):
        starts, ends = _constant_ints(graph, node, 1), _constant_ints(graph, node, 2)
        if not starts or not ends or len(starts) != len(ends):
            return False
        if len(node.inputs) > 3 and node.inputs[3]:
            axes = graph.initializer(node.inputs[3])
            if (
                axes is None
                or axes.overridable
                or len(axes.dims) != 1
                or axes.dims[0] != len(starts)
            ):
                return False
            if len(node.inputs) > 4 and node.inputs[4]:
                steps = _constant_ints(graph, node, 4)
                if (
                    steps is None
                    or len(steps) != len(starts)
                    or any(x != 1 for x in steps)
                ):
                    return False
    else:
        return False
    return all(a == 0 and b >= _INT64_MAX for a, b in zip(starts, ends))


def _mul_after_reciprocal(
    graph: Graph, div: Node, cons: dict, opsets: dict
) -> Node | None:
    """DivMulFusion::SatisfyCondition: the Mul that alone reads Div(1, x) (Div and Mul 7 / 13 /
    14; a one-element constant 1 of float, float16, double, int32 or int64; the Div makes no
    graph output), else None."""
    if (
        since_version(div, opsets) not in (7, 13, 14)
        or len(div.inputs) != 2
        or not div.outputs
    ):
        return None
    out = div.outputs[0]
    readers = cons.get(out, [])
    if len(readers) != 1 or sum(x == out for x in readers[0].inputs) != 1:
        return None
    mul = readers[0]
    if mul.op_type != "Mul" or mul.domain not in ("", "ai.onnx"):
        return None
    if since_version(mul, opsets) not in (7, 13, 14):
        return None
    one = graph.initializer(div.inputs[0])
    if one is None or one.overridable or one.value is None or one.numel != 1:
        return None
    if one.elem_type not in (1, 10, 11, 6, 7) or one.value.reshape(-1)[0] != 1:
        return None
    return None if out in graph.outputs else mul


def _fuse_div_mul(graph: Graph, div: Node, mul: Node) -> None:
    """DivMulFusion::Apply: the Div reads the Mul's other input as its numerator and writes the
    Mul's output (FinalizeNodeFusion); the Mul goes."""
    other = mul.inputs[1] if mul.inputs[0] == div.outputs[0] else mul.inputs[0]
    graph.remove(
        mul,
        "DivMulFusion",
        "Mul of a reciprocal folded into the Div before it (1 / x · y → y / x) by ORT's "
        "DivMulFusion (div_mul_fusion.cc)",
    )
    div.inputs = [other, div.inputs[1]]
    div.outputs = list(mul.outputs)
    graph.touch()


def _noop_operand(graph: Graph, node: Node, types: dict, shapes: dict) -> str | None:
    """The input a no-op Add/Sub/Mul/Div passes through, or None."""
    neutral = 0 if node.op_type in ("Add", "Sub") else 1
    sides = (0, 1) if node.op_type in ("Add", "Mul") else (1,)
    ins = node.inputs
    if len(ins) != 2 or not all(ins):
        return None
    for k in sides:
        init = graph.initializer(ins[k])
        other = ins[1 - k]
        if init is None or init.overridable or init.value is None or init.numel != 1:
            continue
        if not np.all(init.value == neutral):
            continue
        if types.get(other) != types.get(node.outputs[0]):
            continue
        oshape, xshape = shapes.get(node.outputs[0]), shapes.get(other)
        if (
            oshape is None
            or xshape is None
            or len(oshape) != len(xshape)
            or len(init.dims) > len(xshape)
        ):
            continue
        return other
    return None


#: the ops a rule above applies to (a node of any other op is left alone)
RULE_OPS = frozenset(
    {
        "Identity",
        "Dropout",
        "Cast",
        "Expand",
        "Add",
        "Sub",
        "Mul",
        "Div",
        "Conv",
        "ConvTranspose",
        "Gemm",
        "Slice",
    }
)
#: onnx TensorProto element types that optimizer_utils::IsFloatingPointDataType accepts
_FLOATING = frozenset({1, 10, 11, 16})  # float, float16, double, bfloat16


def _batch_norm_after(graph: Graph, conv: Node, cons: dict) -> Node | None:
    """ConvBNFusion::SatisfyCondition and the checks its Apply makes before changing anything:
    the BatchNormalization `conv` alone feeds, when ORT fuses the two, else None."""
    out = conv.outputs[0] if conv.outputs else ""
    readers = cons.get(out, [])
    if len(readers) != 1 or sum(x == out for x in readers[0].inputs) != 1:
        return None  # GetOutputEdgesCount() != 1
    bn = readers[0]
    if bn.op_type != "BatchNormalization" or bn.domain not in ("", "ai.onnx"):
        return None
    if len(bn.inputs) != 5 or bn.inputs[0] != out or any(o for o in bn.outputs[1:]):
        return None
    weights = conv.inputs[1:3]
    if len(weights) < 1 or not all(graph.is_constant(x) for x in weights if x):
        return None
    if not all(graph.is_constant(x) for x in bn.inputs[1:]):
        return None
    eps = next((a for a in bn.proto.attribute if a.name == "epsilon"), None)
    if eps is not None and eps.type != eps.FLOAT:
        return None
    stats = [graph.initializer(x) for x in bn.inputs[1:]]
    w = graph.initializer(weights[0])
    b = graph.initializer(weights[1]) if len(weights) > 1 and weights[1] else None
    if any(len(t.dims) != 1 for t in stats) or (b is not None and len(b.dims) != 1):
        return None
    channels, dtype = stats[0].dims[0], stats[0].elem_type
    if dtype not in _FLOATING or w.elem_type != dtype:
        return None
    if any(t.dims[0] != channels or t.elem_type != dtype for t in stats):
        return None
    if b is not None and (b.dims[0] != channels or b.elem_type != dtype):
        return None
    if len(w.dims) <= 2:
        return None
    if conv.op_type == "Conv":
        return bn if w.dims[0] == channels else None
    group = int(conv.attr("group", 1))
    if group <= 0 or w.dims[0] <= 0 or w.dims[0] % group:
        return None
    return bn if w.dims[1] * group == channels else None


def _fuse_conv_bn(graph: Graph, conv: Node, bn: Node) -> None:
    """ConvBNFusion::Apply: new weight and bias initializers (their names use the graph's name
    counter, as GenerateNodeArgName does), then FinalizeNodeFusion: the Conv writes the
    BatchNormalization's output and the BatchNormalization goes."""
    w = graph.initializer(conv.inputs[1])
    new_w = graph.generate_value_name(f"ConvBnFusion_W_{conv.inputs[1]}")
    new_b = graph.generate_value_name(f"ConvBnFusion_BN_B_{bn.inputs[2]}")
    channels = graph.initializer(bn.inputs[1]).dims
    graph.initializers[new_w] = Initializer(new_w, w.elem_type, w.dims)
    graph.initializers[new_b] = Initializer(new_b, w.elem_type, channels)
    graph.remove(
        bn,
        "ConvBNFusion",
        "BatchNormalization folded into the Conv before it by ORT's ConvBNFusion "
        "(conv_bn_fusion.cc)",
    )
    conv.inputs = [conv.inputs[0], new_w, new_b]
    conv.outputs = [bn.outputs[0]]
    graph.touch()


def apply(graph: Graph, types: dict, shapes: dict, opsets: dict) -> bool:
    """Run the rules once over the graph; True if a node was removed."""
    changed = False
    cons = graph.consumers()
    for node in graph.topological():
        if (
            node.dead
            or node.op_type not in RULE_OPS
            or node.domain not in ("", "ai.onnx")
        ):
            continue
        if node.op_type == "Gemm":
            if gemm_transpose_fusion.applies(graph, node, shapes, opsets):
                gemm_transpose_fusion.apply(graph, node, shapes)
                changed = True
                cons = graph.consumers()
            continue
        if not _removable(graph, node) and not (
            node.op_type == "Identity" and _can_feed_output(graph, node, cons)
        ):
            continue
        op = node.op_type
        if (
            op == "Identity"
            and node.inputs
            and node.inputs[0]
            and not _removable(graph, node)
        ):
            _identity_to_output(graph, node, cons)
            changed = True
            continue
        if op == "Identity" and node.inputs and node.inputs[0]:
            _bypass(
                graph,
                node,
                node.inputs[0],
                "EliminateIdentity",
                "Identity removed by ORT's EliminateIdentity (identity_elimination.cc)",
            )
            changed = True
        elif (
            op == "Dropout"
            and node.inputs
            and (
                len(node.outputs) < 2
                or not node.outputs[1]
                or not cons.get(node.outputs[1])
            )
        ):
            _bypass(
                graph,
                node,
                node.inputs[0],
                "EliminateDropout",
                "Dropout removed by ORT's EliminateDropout (dropout_elimination.cc)",
            )
            changed = True
        elif (
            op == "Cast"
            and node.inputs
            and types.get(node.inputs[0]) is not None
            # CastElimination (cast_elimination.cc): `to` equals the input's element type, any type
            and types.get(node.inputs[0]) == type_string(node.attr("to"))
        ):
            _bypass(
                graph,
                node,
                node.inputs[0],
                "CastElimination",
                "Cast to the type its input already has, "
                "removed by ORT's CastElimination",
            )
            changed = True
        elif op == "Slice" and node.inputs and _slice_is_noop(graph, node, opsets):
            _bypass(
                graph,
                node,
                node.inputs[0],
                "EliminateSlice",
                "Slice from 0 to INT64_MAX on every axis it names, removed by ORT's "
                "EliminateSlice (slice_elimination.cc)",
            )
            changed = True
        elif op == "Expand" and _expand_is_noop(graph, node, shapes):
            _bypass(
                graph,
                node,
                node.inputs[0],
                "ExpandElimination",
                "Expand that does not change its input, "
                "removed by ORT's ExpandElimination",
            )
            changed = True
        elif op in ("Conv", "ConvTranspose"):
            bn = _batch_norm_after(graph, node, cons)
            if bn is not None:
                _fuse_conv_bn(graph, node, bn)
                changed = True
        elif op in ("Add", "Sub", "Mul", "Div"):
            src = _noop_operand(graph, node, types, shapes)
            mul = (
                _mul_after_reciprocal(graph, node, cons, opsets)
                if op == "Div" and src is None
                else None
            )
            if mul is not None:
                _fuse_div_mul(graph, node, mul)
                changed = True
            if src is not None:
                _bypass(
                    graph,
                    node,
                    src,
                    "NoopElimination",
                    f"{op} by a neutral constant, removed by ORT's "
                    "NoopElimination (noop_elimination.cc)",
                )
                changed = True
        if changed:
            cons = graph.consumers()
    return changed
