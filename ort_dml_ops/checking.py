"""onnx's checker, held to what ONNX Runtime loads: no stricter, no looser.

Two things onnx's checker refuses that ONNX Runtime loads and runs, both common in files that
other tools write (ORT's own optimizer output, tf2onnx, paddle2onnx, hand-edited graphs):

- a main-graph input or output declared with an element type but no shape. onnx's
  ``check_value_info`` (onnx/checker.cc) requires the ``shape`` field on the main graph's
  inputs and outputs; ONNX Runtime reads a missing shape as "unknown rank"
  (``onnxruntime/core/graph/graph.cc``, ``Graph::InferAndVerifyTypeMatch`` only needs the type).
- main-graph nodes out of topological order. onnx's ``check_graph`` requires them sorted;
  ONNX Runtime sorts the main graph itself when it resolves it
  (``Graph::PerformTopologicalSortAndCheckIsAcyclic``). It runs onnx's checker on If/Loop/Scan
  bodies, though, and refuses an unsorted one ("Nodes in a graph must be topologically
  sorted", measured with onnxruntime 1.31): those stay refused here too.

`check_model` checks everything else exactly as ``onnx.checker.check_model`` does: the
structural check on a copy whose shapeless main-graph declarations carry a placeholder shape
(the structural check reads no dimension), then, for ``full_check``, the same strict, type-checked
shape inference the checker runs (``check_model`` with ``full_check``: ``InferShapes`` with
``check_type`` and strict errors) on the model as written, where a missing shape is unknown.
Unsorted graphs are for `sort_nodes` (convert sorts them and says so in its report).
"""

from __future__ import annotations

import onnx
import onnx.shape_inference
import onnx_ir as ir


def shapeless_io(model: onnx.ModelProto) -> list[str]:
    """Names of the main graph's tensor inputs and outputs declared without a shape."""
    return [
        v.name
        for v in (*model.graph.input, *model.graph.output)
        if v.type.HasField("tensor_type") and not v.type.tensor_type.HasField("shape")
    ]


def check_model(model: onnx.ModelProto, *, full_check: bool) -> None:
    """``onnx.checker.check_model`` as ONNX Runtime would pass it (see the module docstring).

    Raises onnx.checker.ValidationError or onnx.shape_inference.InferenceError as the checker does.
    """
    structural = model
    if shapeless_io(model):
        structural = onnx.ModelProto()
        structural.CopyFrom(model)
        for v in (*structural.graph.input, *structural.graph.output):
            tt = v.type.tensor_type
            if v.type.HasField("tensor_type") and not tt.HasField("shape"):
                tt.shape.SetInParent()  # a placeholder: the structural check reads no dim
    onnx.checker.check_model(structural, full_check=False)
    if full_check:
        onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True)


def _graph_sorted(graph: onnx.GraphProto, outer: frozenset[str]) -> bool:
    """Whether `graph` and its bodies read only values defined before them: graph inputs,
    initializers, earlier outputs, or names of an enclosing scope (`outer`)."""
    known = set(outer)
    known.update(v.name for v in graph.input)
    known.update(t.name for t in graph.initializer)
    known.update(t.name for t in graph.sparse_initializer)
    for node in graph.node:
        if any(name and name not in known for name in node.input):
            return False
        for attr in node.attribute:
            bodies = [attr.g] if attr.HasField("g") else list(attr.graphs)
            if not all(_graph_sorted(b, frozenset(known)) for b in bodies):
                return False
        known.update(node.output)
    return True


def _function_sorted(func: onnx.FunctionProto) -> bool:
    known = set(func.input)
    for node in func.node:
        if any(name and name not in known for name in node.input):
            return False
        known.update(node.output)
    return True


def is_sorted(model: onnx.ModelProto) -> bool:
    """Whether every graph's nodes (main graph, If/Loop/Scan bodies, local functions) are in
    topological order."""
    return _graph_sorted(model.graph, frozenset()) and all(
        _function_sorted(f) for f in model.functions
    )


def _bodies_sorted(model: onnx.ModelProto) -> bool:
    """Whether every body of a main-graph node and every local function is sorted in itself
    (whatever the main graph defines counts as defined: only the body's own order is asked)."""
    g = model.graph
    outer = frozenset(
        [v.name for v in g.input]
        + [t.name for t in g.initializer]
        + [t.name for t in g.sparse_initializer]
        + [o for n in g.node for o in n.output]
    )
    return all(
        _graph_sorted(body, outer)
        for node in g.node
        for attr in node.attribute
        for body in ([attr.g] if attr.HasField("g") else list(attr.graphs))
    ) and all(_function_sorted(f) for f in model.functions)


def sort_nodes(model: onnx.ModelProto) -> tuple[onnx.ModelProto, bool]:
    """(the model with its main graph's nodes in topological order, whether it had to be sorted).

    A sorted model is returned as it is, and so is one with an unsorted body or function (ONNX
    Runtime refuses it; the checker names it). Otherwise it goes through onnx-ir once
    (``Graph.sort``: stable, a node with a body ordered after what the body reads from outside),
    which keeps the nodes' relative order wherever the data allows. Raises ValueError for a
    cycle, as ONNX Runtime refuses one; what onnx-ir cannot read is left for the checker to name.
    """
    if is_sorted(model) or not _bodies_sorted(model):
        return model, False
    ir_model = ir.serde.deserialize_model(model)
    ir_model.graph.sort()
    return ir.serde.serialize_model(ir_model), True
