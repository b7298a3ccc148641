"""``MatMulAddFusion`` (level 1): a MatMul read only by an Add of a bias becomes one ``Gemm``.

Mirrors ``core/optimizer/matmul_add_fusion.cc`` ``MatMulAddFusion::ApplyImpl`` as ORT's level-1
list registers it (``graph_transformer_utils.cc``: after ConstantFolding, before ReshapeFusion;
no EP filter, the attention pattern preserved). Nodes are visited in topological order; a pair
fuses when

* the MatMul (any version: 1, 9, 13) has exactly one output edge, makes no graph output, and
  that edge goes to an ONNX ``Add`` (7, 13, 14);
* the MatMul's first input and the Add's first input have one type, float, float16 or bfloat16;
* both MatMul inputs have a shape and B has rank 2;
* A of rank 2, or else ("need_reshape") A's shape is fully static, B's two dims are too, A is not
  an attention projection's input (a Reshape ← Transpose ← MatMul ← Softmax chain, or an
  Attention / MultiHeadAttention node) and the pair is not one of an attention block's four
  (``AttentionPatternCache``: a LayerNormalization read by one Add, three MatMuls and Shapes
  only, whose Add's other input is an Add);
* the bias (the Add's other input) has a shape Gemm broadcasts: [N]; with a 2-D A also [1, N],
  [M, 1] or [M, N], dims equal by value or by symbolic name (``dims.same_dim``).

ORT then adds ``Gemm`` ``<matmul>/MatMulAddFusion`` (``Graph::GenerateNodeName``) reading A, B and
the bias and writing the Add's output, and removes both nodes. With a reshape it first adds
``gemm_input_reshape`` (A to [M, K]) and ``gemm_output_reshape`` (the Gemm's [M, N] to the
MatMul's output shape), each with a new int64 shape initializer ``gemm_input_shape`` /
``gemm_output_shape`` named by the same node-name generator.
"""

from __future__ import annotations

import math

import numpy as np
import onnx

from .dims import same_dim
from .graph import Graph, Initializer, Node, since_version

_GEMM_TYPES = frozenset({"tensor(float)", "tensor(float16)", "tensor(bfloat16)"})
STEP = "MatMulAddFusion"


def _is(node: Node | None, op: str, versions: tuple, opsets: dict) -> bool:
    """graph_utils::IsSupportedOptypeVersionAndDomain for the ONNX domain."""
    return (
        node is not None
        and node.op_type == op
        and node.domain in ("", "ai.onnx")
        and since_version(node, opsets) in versions
    )


def _edges(graph: Graph, node: Node) -> list:
    """The node's output edges: (consumer, input slot) per read of any of its outputs."""
    return [edge for o in node.outputs if o for edge in graph.reads(o)]


def _attention_projection_input(graph: Graph, matmul: Node, opsets: dict) -> bool:
    """IsAttentionProjectionInput: A is made by Attention / MultiHeadAttention, or by a Reshape of
    a Transpose of a MatMul of a Softmax (the attention's value product)."""
    prod = graph.producers()
    parent = prod.get(matmul.inputs[0])
    if parent is not None and parent.op_type in ("Attention", "MultiHeadAttention"):
        return True
    if not _is(parent, "Reshape", (5, 13, 14), opsets):
        return False
    assert parent is not None
    transpose = prod.get(parent.inputs[0])
    if not _is(transpose, "Transpose", (1, 13), opsets):
        return False
    assert transpose is not None
    av = prod.get(transpose.inputs[0])
    if not _is(av, "MatMul", (1, 9, 13), opsets):
        return False
    assert av is not None
    return _is(prod.get(av.inputs[0]), "Softmax", (1, 11, 13), opsets)


class _AttentionPatterns:
    """AttentionPatternCache: the four MatMul + Add pairs of an attention block that ORT leaves
    for AttentionFusion."""

    def __init__(self) -> None:
        self.norms: set = set()
        self.adds: set = set()

    def matches(self, graph: Graph, matmul: Node, add: Node) -> bool:
        parent = graph.producers().get(matmul.inputs[0])
        if parent in self.norms or add in self.adds:
            return True
        if parent is None or parent.op_type != "LayerNormalization":
            return False
        edges = _edges(graph, parent)
        kinds = [c.op_type for c, _ in edges]
        adds = [c for c, _ in edges if c.op_type == "Add"]
        if not (
            len(adds) == 1
            and kinds.count("MatMul") == 3
            and kinds.count("Shape") == len(edges) - 4
        ):
            return False
        ln_add = adds[0]
        other = (
            ln_add.inputs[1]
            if ln_add.inputs[0] == parent.outputs[0]
            else ln_add.inputs[0]
        )
        attn_add = graph.producers().get(other)
        if attn_add is None or attn_add.op_type != "Add":
            return False
        self.norms.add(parent)
        self.adds.add(attn_add)
        return True


def _bias_fits(
    shapes: dict, symbols: dict, bias: str, a: str, b: str, reshaped: bool
) -> bool:
    """Gemm broadcasts its C one way: [N]; without a reshape also [1, N], [M, 1], [M, N]. Dims
    compare as ORT compares them (``dims.same_dim``: value, or symbolic name)."""
    rank = len(shapes[bias])

    def eq(i: int, other: str, j: int) -> bool:
        return same_dim(shapes, symbols, bias, i, other, j)

    def one(i: int) -> bool:
        return shapes[bias][i] == 1

    if rank == 1:
        return eq(0, b, 1)
    if reshaped or rank != 2:
        return False
    return (one(0) and eq(1, b, 1)) or (eq(0, a, 0) and (one(1) or eq(1, b, 1)))


def _add_node(graph: Graph, name: str, op: str, inputs: list, outputs: list) -> Node:
    node = Node(
        graph.next_index,
        name,
        op,
        "",
        inputs,
        outputs,
        onnx.helper.make_node(op, inputs, outputs, name=name),
        origin=STEP,
    )
    graph.add(node)
    graph.next_index += 1
    return node


def _reshape(
    graph: Graph,
    base: str,
    source: str,
    target: str | None,
    dims: tuple,
    rows_cols: tuple,
    elem: str,
    types: dict,
    shapes: dict,
) -> tuple[str, str]:
    """The lambda add_reshape: a shape initializer, a new value and a Reshape node, named in
    ORT's order. Returns (the Reshape's input, its output): the input side reshapes `source`
    into the new value, the output side the new value into `target`."""
    shape_name = graph.generate_node_name(f"{base}_shape")
    value = np.array(dims, dtype=np.int64)
    graph.initializers[shape_name] = Initializer(shape_name, 7, value.shape, value)
    new = graph.generate_value_name(f"{base}_reshape_arg")
    types[new], shapes[new] = elem, rows_cols
    name = graph.generate_node_name(f"{base}_reshape")
    src, dst = (source, new) if target is None else (new, target)
    _add_node(graph, name, "Reshape", [src, shape_name], [dst])
    return src, dst


def fuse(
    graph: Graph, types: dict, shapes: dict, opsets: dict, symbols: dict | None = None
) -> bool:
    """One ApplyImpl over this graph level; True if a pair was fused."""
    changed = False
    patterns = _AttentionPatterns()
    for matmul in graph.topological():
        if matmul.dead or not _is(matmul, "MatMul", (1, 9, 13), opsets):
            continue
        edges = _edges(graph, matmul)
        if len(edges) != 1 or any(o in graph.outputs for o in matmul.outputs if o):
            continue
        add, _ = edges[0]
        if not (_is(add, "Add", (7, 13, 14), opsets) and len(add.inputs) == 2):
            continue
        a, b = matmul.inputs[0], matmul.inputs[1]
        elem = types.get(a)
        if elem is None or elem != types.get(add.inputs[0]) or elem not in _GEMM_TYPES:
            continue
        a_shape, b_shape = shapes.get(a), shapes.get(b)
        if a_shape is None or b_shape is None or len(b_shape) != 2:
            continue
        reshaped = len(a_shape) != 2
        k, n = b_shape
        if reshaped:
            if _attention_projection_input(graph, matmul, opsets):
                continue
            if patterns.matches(graph, matmul, add):
                continue
            if any(d is None for d in a_shape) or k is None or n is None:
                continue
        bias_at = 1 if add.inputs[0] == matmul.outputs[0] else 0
        bias = add.inputs[bias_at]
        if shapes.get(bias) is None or not _bias_fits(
            shapes, symbols or {}, bias, a, b, reshaped
        ):
            continue
        out = add.outputs[0]
        gemm_a, gemm_out = a, out
        if reshaped:
            m = math.prod(a_shape[:-1])
            _, gemm_a = _reshape(
                graph, "gemm_input", a, None, (m, k), (m, k), elem, types, shapes
            )
            gemm_out, _ = _reshape(
                graph,
                "gemm_output",
                "",
                out,
                (*a_shape[:-1], n),
                (m, n),
                elem,
                types,
                shapes,
            )
        name = graph.generate_node_name(f"{matmul.name}/MatMulAddFusion")
        why = "fused into a Gemm by ORT's MatMulAddFusion (matmul_add_fusion.cc)"
        graph.remove(matmul, STEP, f"MatMul {why}")
        graph.remove(add, STEP, f"Add {why}")
        _add_node(graph, name, "Gemm", [gemm_a, b, bias], [gemm_out])
        changed = True
    return changed
