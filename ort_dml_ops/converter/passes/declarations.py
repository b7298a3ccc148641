"""The converted model declares what the input declared: graph inputs and outputs exactly as
the user wrote them, and value_info only for the values the input carried it for.

Shape inference (passes/shapes.py) typed every intermediate value, and a rewrite may put a
new value, with the inferred shape, in place of a graph output (an output left undeclared or
symbolic, e.g. `unk__0`, would come out concrete). Those are the converter's working
knowledge, not the user's declarations; the output carries what the input did (the If
folding's repaired output declarations excepted: rules/fold_if.py).
"""

from __future__ import annotations

import dataclasses

import onnx_ir as ir
import onnx_ir.passes

from .state import ConvertState


@dataclasses.dataclass
class Declared:
    """What the input model declares (taken before the passes run)."""

    inputs: list[tuple]
    outputs: list[tuple]
    #: names of the values with value_info, in any graph (main graph, If/Loop/Scan bodies)
    value_info: set[str]

    @classmethod
    def of(cls, model: ir.Model, value_info: set[str]) -> Declared:
        return cls(
            [_declaration(v) for v in model.graph.inputs],
            [_declaration(v) for v in model.graph.outputs],
            value_info,
        )


def _declaration(v: ir.Value) -> tuple:
    return v.name, v.type, v.shape, v.doc_string, dict(v.metadata_props)


class RestoreDeclarationsPass(onnx_ir.passes.InPlacePass):
    """The last step: graph I/O and value_info back to the input's (`state.declared`)."""

    def __init__(self, state: ConvertState):
        super().__init__()
        self.state = state

    def call(self, model: ir.Model) -> onnx_ir.passes.PassResult:
        declared = self.state.declared
        if declared is None:
            return onnx_ir.passes.PassResult(model, modified=False)
        graph = model.graph
        for values, decls in (
            (graph.inputs, declared.inputs),
            (graph.outputs, declared.outputs),
        ):
            if [v.name for v in values] == [d[0] for d in decls]:
                for v, (_, type_, shape, doc, meta) in zip(values, decls):
                    v.type, v.shape, v.doc_string = type_, shape, doc
                    v.metadata_props.clear()
                    v.metadata_props.update(meta)
        self.state.folds.restore_outputs(graph)
        _forget_undeclared(graph, declared.value_info)
        return onnx_ir.passes.PassResult(model, modified=True)


def _forget_undeclared(graph: ir.Graph, keep: set[str]) -> None:
    """Node outputs of `graph` and its If/Loop/Scan bodies lose the type and shape inference
    gave them unless the input declared them; a kept one gets its own Shape back (shapes.py
    shares one frozen Shape per type; deserialization gives each value its own)."""
    for node in ir.traversal.RecursiveGraphIterator(graph):
        for v in node.outputs:
            if v.is_graph_output():
                continue
            if v.name not in keep:
                v.type, v.shape = None, None
            elif v.shape is not None and v.shape.frozen:
                v.shape = ir.Shape(v.shape)
