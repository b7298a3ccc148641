"""ORT's layout transformation for an EP that prefers NHWC (the WebGPU plugin): the nodes it
took whose kernel is NHWC are rewritten into the internal NHWC domain between Transposes, and
the transpose optimizer then pushes those Transposes out and cancels what it can.

``GetCapabilityForEP`` in ``core/framework/graph_partitioner.cc``: after the EP's first
``GetCapability`` the nodes it claimed are assigned to it for the time being, and
``TransformLayoutForEP`` (``core/optimizer/layout_transformation/layout_transformation.cc``)
runs:

1. in ORT's topological order (``ApiGraph::Nodes``), each node assigned to the EP whose op is
   layout sensitive (``ConvertNodeLayout``) and whose input 0 has a known rank gets a Transpose
   NCHW -> NHWC on input 0 and one NHWC -> NCHW on output 0 (``WrapTransposesAroundNode``:
   ``TransposeInput`` / ``TransposeOutput``), then is replaced by a copy in the domain
   ``com.ms.internal.nhwc`` (``SwapNodeOpTypeAndDomain``, ort_transpose_optimization.cc: the
   copy is named ``Graph::GenerateNodeName(<its name>)``, so ``<name>_token_<n>``, and takes
   over the outputs). Which ops the plugin runs in NHWC is read from the recorded kernel table
   (``layout: "NHWC"``: the node came back renamed), not from ORT's list;
2. the transpose optimizer (``onnx_transpose_optimization::Optimize`` with the EP's name) runs
   over the graph: it may change only nodes assigned to this EP or to none (``can_modify_node``),
   the new nodes are unassigned, and ``PostLayoutTransformCostCheck`` pushes a Transpose of
   the two layout perms through any node but a Concat without weighing the cost;
3. the EP's second ``GetCapability`` takes the new nodes its kernels accept (the caller:
   pipeline.py); the NHWC nodes are looked up as their ONNX op (``NhwcView``).

Not modelled: the level-1 optimizers ORT runs again after the step (``transform_layout_fn`` in
inference_session.cc), the ``channels_last`` attribute of the contrib ops, and the DQ pass at
the end of ``OptimizeImpl``.
"""

from __future__ import annotations

import onnx

from .graph import Graph, Node
from .transpose_optimizer import (
    MAX_OPSET,
    MIN_OPSET,
    _Pass,
    channels_first_perm,
    channels_last_perm,
)

NHWC_DOMAIN = "com.ms.internal.nhwc"
STEP = "layout transformation"
REMOVED = (
    "rewritten by ORT's layout transformation into the NHWC domain under a new name "
    "(layout_transformation.cc TransformLayoutForEP)"
)


class NhwcView:
    """A node of the NHWC domain as the EP's kernel lookup sees it: the same op, the same
    inputs and attributes, looked up as its ONNX op (the table records the plugin's NHWC Conv,
    pools, ... under the ONNX op, flagged ``layout: "NHWC"``)."""

    domain = ""

    def __init__(self, node: Node):
        self._node = node

    def __getattr__(self, name):
        return getattr(self._node, name)


def as_looked_up(node: Node):
    """The node a target's `explain` is asked about: NHWC nodes as their ONNX op."""
    return NhwcView(node) if node.domain == NHWC_DOMAIN else node


def runs_in_nhwc(decision) -> bool:
    """The EP took the node with a kernel recorded as NHWC: ORT will rewrite it."""
    kernel = decision.target_kernel
    return bool(decision.on_target and kernel and kernel.extra.get("layout") == "NHWC")


def transform(
    graph: Graph, nhwc_nodes: set, types: dict, shapes: dict, opsets: dict
) -> bool:
    """TransformLayoutForEP on one graph level. `nhwc_nodes`: the nodes the EP claimed in its
    first GetCapability with an NHWC kernel (``runs_in_nhwc``). True when the graph changed."""
    opset = opsets.get("", opsets.get("ai.onnx"))
    if opset is None or not MIN_OPSET <= opset <= MAX_OPSET:
        return False  # IsSupportedOpset: the layout transformer leaves the graph alone
    ranks = {n: _rank(n, shapes) for n in nhwc_nodes}
    # ORT skips a node whose input 0 has no known rank: it stays in NCHW
    wrapped = [n for n in graph.topological() if ranks.get(n) is not None]
    if not wrapped:
        return False
    edit = _Pass(graph, types, shapes, opset)
    for node in wrapped:
        _wrap_in_transposes(edit, node, ranks[node] or 0)
        _swap_into_nhwc_domain(edit, node)
    _push_the_layout_transposes(graph, types, shapes, opset)
    return True


def _rank(node: Node, shapes: dict) -> int | None:
    dims = shapes.get(node.inputs[0]) if node.inputs else None
    return None if dims is None else len(dims)


def _wrap_in_transposes(edit: _Pass, node: Node, rank: int) -> None:
    """WrapTransposesAroundNode: input 0 NCHW -> NHWC, output 0 back to NCHW."""
    edit.transpose_input(node, 0, channels_last_perm(rank))
    edit.transpose_output(node, 0, channels_first_perm(rank))


def _swap_into_nhwc_domain(edit: _Pass, node: Node) -> Node:
    """SwapNodeOpTypeAndDomain: a copy in the NHWC domain (``ApiGraph::CopyNode``: new name,
    outputs ``<name>_out<i>``) takes over every output (``MoveOutput``); the node goes."""
    graph = edit.graph
    name = graph.generate_node_name(node.name)
    outputs = [
        graph.generate_value_name(f"{name}_out{i}") for i in range(len(node.outputs))
    ]
    proto = onnx.NodeProto()
    proto.CopyFrom(node.proto)
    proto.name, proto.domain = name, NHWC_DOMAIN
    copy = Node(
        graph.next_index,
        name,
        node.op_type,
        NHWC_DOMAIN,
        list(node.inputs),
        outputs,
        proto,
        origin=STEP,
    )
    graph.next_index += 1
    graph.add(copy)
    for i, value in enumerate(node.outputs):
        if value:
            edit.move_output(node, i, copy, i)
    graph.remove(node, STEP, REMOVED)
    return copy


def _push_the_layout_transposes(graph: Graph, types, shapes, opset: int) -> None:
    """onnx_transpose_optimization::Optimize with the EP's name: nodes claimed by another EP
    would be left alone, but before the CPU EP's turn every other node is unassigned, so every
    node may change; the NHWC nodes have no handler and stop a push."""
    _Pass(graph, types, shapes, opset, layout_cost=True).run()
