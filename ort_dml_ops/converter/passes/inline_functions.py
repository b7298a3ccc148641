"""Inline the model-local functions that hold a CumSum / CumProd / Scatter node.

A node inside a function body sees no shapes: onnx's inference does not type a body from its
call sites, and one body serves every call, whatever its inputs' element type and rank. A rule
that lowers the node there must guess them, and a guess that fits one call site builds an
invalid model for another (a Neg of the wrong type, a Reshape to the wrong rank), while an
attribute the body takes from its call (`ref_attr_name`) has no value at all.

ONNX Runtime itself inlines every function node that no execution provider takes whole, when
it partitions the graph (onnxruntime/core/framework/graph_partitioner.cc, `InlineNodes` and
`InlineFunctionsAOT`; the DML and WebGPU EPs take no function node), so inlining them first
changes nothing of what ORT runs and lets each call site's node be placed and rewritten with
its own shapes and attributes. onnx-ir's `InlinePass` does the inlining; the functions that
hold no family node stay as they are. Report: one `normalized` line per inlined function.
"""

from __future__ import annotations

import onnx_ir as ir
import onnx_ir.passes
from onnx_ir.passes.common import InlinePass

from ...errors import UserError
from ..rules import FAMILY_OPS
from .state import ConvertState


class InlineFamilyFunctionsPass(onnx_ir.passes.InPlacePass):
    """Every call of a function that holds (directly, in a subgraph, or through another
    function it calls) a family node is replaced by the function's body. Not for strategy
    native, which rewrites nothing."""

    def __init__(self, state: ConvertState):
        super().__init__()
        self.state = state

    def call(self, model: ir.Model) -> onnx_ir.passes.PassResult:
        s = self.state
        family = _functions_holding_family(model) if s.strategy != "native" else set()
        if not family:
            return onnx_ir.passes.PassResult(model, modified=False)
        calls = _call_counts(model, family)
        for fid in family:
            _align_opsets(model.functions[fid], model)
        try:
            InlinePass(criteria=lambda f: f.identifier() in family)(model)
        except (ValueError, ir.passes.PreconditionError) as exc:
            raise UserError(
                f"a model-local function holding a CumSum / CumProd / Scatter node cannot be "
                f"inlined, refused ({str(exc).splitlines()[0]})"
            ) from None
        for fid in sorted(family):
            domain, name, _overload = fid
            s.normalized.append(
                f"model-local function {domain}::{name} inlined at its {calls.get(fid, 0)} "
                "call site(s), so that its family nodes are placed with each call's shapes "
                "(ONNX Runtime inlines it too when it loads the model)"
            )
        s.light = None
        return onnx_ir.passes.PassResult(model, modified=True)


def _nodes_deep(graph) -> list[ir.Node]:
    """The nodes of `graph` and of every If / Loop / Scan body inside it."""
    out = []
    for node in graph:
        out.append(node)
        for attr in node.attributes.values():
            if attr.type == ir.AttributeType.GRAPH:
                out.extend(_nodes_deep(attr.value))
            elif attr.type == ir.AttributeType.GRAPHS:
                for g in attr.value:
                    out.extend(_nodes_deep(g))
    return out


def _op_key(node: ir.Node) -> tuple[str, str]:
    return ("" if node.domain == "ai.onnx" else node.domain, node.op_type)


def _functions_holding_family(model: ir.Model) -> set[ir.OperatorIdentifier]:
    """The functions whose body, or a function it calls (at any depth), has a family node."""
    functions = model.functions
    direct: dict[ir.OperatorIdentifier, bool] = {}
    callees: dict[ir.OperatorIdentifier, set[ir.OperatorIdentifier]] = {}
    for fid, func in functions.items():
        nodes = _nodes_deep(func.graph)
        direct[fid] = any(_op_key(n) in FAMILY_OPS for n in nodes)
        callees[fid] = {n.op_identifier() for n in nodes} & functions.keys()
    holding = {fid for fid, has in direct.items() if has}
    grew = True
    while grew:  # a caller of a holding function holds one too
        grew = False
        for fid, called in callees.items():
            if fid not in holding and called & holding:
                holding.add(fid)
                grew = True
    return holding


def _call_counts(
    model: ir.Model, family: set[ir.OperatorIdentifier]
) -> dict[ir.OperatorIdentifier, int]:
    counts: dict[ir.OperatorIdentifier, int] = {}
    graphs = [model.graph, *(f.graph for f in model.functions.values())]
    for graph in graphs:
        for node in _nodes_deep(graph):
            fid = node.op_identifier()
            if fid in family:
                counts[fid] = counts.get(fid, 0) + 1
    return counts


def _align_opsets(func: ir.Function, model: ir.Model) -> None:
    """A function's body runs under the model's version of each domain both import, as ONNX
    Runtime runs an inlined body (onnx-ir's inliner refuses a difference)."""
    for domain, version in list(func.opset_imports.items()):
        if domain in model.opset_imports:
            func.opset_imports[domain] = model.opset_imports[domain]
        else:
            model.opset_imports[domain] = version
