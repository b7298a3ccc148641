"""``GemmTransposeFusion`` (a level-1 rewrite rule): matrix Transposes folded into a Gemm's flags.

Mirrors ``core/optimizer/gemm_transpose_fusion.cc``. ``SatisfyCondition``: a Gemm (any version)
with at most one output edge, and either an input made by a matrix Transpose (rank-2 input,
perm [1, 0] or none) that makes no graph output and whose every output edge goes to a Gemm, or
(Gemm 11 / 13, no C, no graph output) an output read first by a matrix Transpose with one input
edge. ``Apply`` then flips transA / transB for each such input Transpose and reads its input
(the Transpose goes once its last Gemm has taken it), swaps A and B for an output Transpose
((AB)' = B'A'), and replaces the Gemm by a new one named ``<gemm>/GemmTransposeFusion/``
(``Graph::GenerateNodeName``) that writes the last removed node's output
(``graph_utils::FinalizeNodeFusion``).

At level 1 no node has an EP yet, so the rule's "same EP" checks always hold here.
"""

from __future__ import annotations

import onnx

from .graph import Graph, Node, since_version

STEP = "GemmTransposeFusion"
_TRANSPOSE_VERSIONS = (1, 13, 21, 23, 24, 25)


def _edges(graph: Graph, node: Node) -> list:
    """(consumer, slot) per read of the node's first output."""
    return graph.reads(node.outputs[0]) if node.outputs and node.outputs[0] else []


def _matrix_transpose(node: Node, shapes: dict) -> bool:
    """IsMatrixTranspose: a rank-2 input (or an unknown one with perm [1, 0])."""
    shape = shapes.get(node.inputs[0]) if node.inputs else None
    if shape is not None and len(shape) != 2:
        return False
    perm = node.attr("perm")
    if perm is None:
        return shape is not None
    return list(perm) == [1, 0]


def _transpose(node: Node | None, opsets: dict) -> bool:
    return (
        node is not None
        and node.op_type == "Transpose"
        and node.domain in ("", "ai.onnx")
        and since_version(node, opsets) in _TRANSPOSE_VERSIONS
    )


def _only_gemms_read(graph: Graph, node: Node) -> bool:
    """FindChildrenByType(node, "Gemm").size() == GetOutputEdgesCount()."""
    edges = _edges(graph, node)
    return sum(c.op_type == "Gemm" for c, _ in edges) == len(edges)


def _makes_output(graph: Graph, node: Node) -> bool:
    return any(o in graph.outputs for o in node.outputs if o)


def _input_transpose(graph: Graph, gemm: Node, at: int, shapes: dict) -> Node | None:
    """The Transpose making the Gemm's input `at` that Apply folds (its own checks), or None."""
    if len(gemm.inputs) <= at or not gemm.inputs[at]:
        return None
    t = graph.producers().get(gemm.inputs[at])
    if t is None or t.op_type != "Transpose" or not _matrix_transpose(t, shapes):
        return None
    return t if _only_gemms_read(graph, t) else None


def _next(graph: Graph, gemm: Node) -> Node | None:
    edges = _edges(graph, gemm)
    return edges[0][0] if edges else None


def applies(graph: Graph, gemm: Node, shapes: dict, opsets: dict) -> bool:
    """SatisfyCondition."""
    if gemm.op_type != "Gemm" or gemm.domain not in ("", "ai.onnx"):
        return False
    if len(_edges(graph, gemm)) > 1:
        return False
    prod = graph.producers()
    for x in dict.fromkeys(x for x in gemm.inputs if x):
        t = prod.get(x)
        if (
            _transpose(t, opsets)
            and t is not None
            and not _makes_output(graph, t)
            and _matrix_transpose(t, shapes)
            and _only_gemms_read(graph, t)
        ):
            return True
    if since_version(gemm, opsets) not in (11, 13) or _makes_output(graph, gemm):
        return False
    if len(gemm.inputs) > 2:
        return False
    after = _next(graph, gemm)
    return (
        _transpose(after, opsets)
        and after is not None
        and len([x for x in after.inputs if x]) == 1
        and _matrix_transpose(after, shapes)
    )


def apply(graph: Graph, gemm: Node, shapes: dict) -> None:
    """Apply: the new Gemm, the folded Transposes and the old Gemm removed."""
    trans_a, trans_b = int(gemm.attr("transA", 0)), int(gemm.attr("transB", 0))
    inputs = list(gemm.inputs)
    removed = []
    for at in (0, 1):
        t = _input_transpose(graph, gemm, at, shapes)
        if t is None:
            continue
        if at == 0:
            trans_a = 1 - trans_a
        else:
            trans_b = 1 - trans_b
        if len(_edges(graph, t)) == 1:
            removed.append(t)
        inputs[at] = t.inputs[0]
    last = gemm
    after = _next(graph, gemm)
    if (
        after is not None
        and len(gemm.inputs) <= 2
        and after.op_type == "Transpose"
        and _matrix_transpose(after, shapes)
    ):
        inputs.reverse()
        trans_a, trans_b = 1 - trans_b, 1 - trans_a
        last = after
    outputs = list(last.outputs)
    name = graph.generate_node_name(f"{gemm.name}/GemmTransposeFusion/")
    why = "by ORT's GemmTransposeFusion (gemm_transpose_fusion.cc)"
    for t in removed:
        graph.remove(t, STEP, f"Transpose folded into a Gemm's transA / transB {why}")
    graph.remove(gemm, STEP, f"Gemm replaced by '{name}' {why}")
    if last is not gemm:
        graph.remove(last, STEP, f"Transpose of a Gemm's output folded {why}")
    proto = onnx.helper.make_node(
        "Gemm",
        inputs,
        outputs,
        name=name,
        transA=trans_a,
        transB=trans_b,
        alpha=float(gemm.attr("alpha", 1.0)),
        beta=float(gemm.attr("beta", 1.0)),
    )
    graph.add(
        Node(
            graph.next_index,
            name,
            "Gemm",
            gemm.domain,
            inputs,
            outputs,
            proto,
            origin=STEP,
        )
    )
    graph.next_index += 1
