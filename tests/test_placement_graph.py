"""placement.Graph keeps its consumers map current through remove / replace_uses.

The map is updated in place (rebuilding it per edit made inspect quadratic along a chain); the
reference here is the map rebuilt from scratch over the edited graph.
"""

from __future__ import annotations

import onnx
from onnx import helper

from ort_dml_ops.placement.graph import Graph
from ort_dml_ops.placement.load import build_graph


def _model() -> onnx.GraphProto:
    """x -> Relu a -> Identity b -> {Add c(b, b), Neg d(b)}; If e reads b from its branches."""
    f = onnx.TensorProto.FLOAT
    branch = helper.make_graph(
        [helper.make_node("Neg", ["b"], ["br"], name="br")],
        "branch",
        [],
        [helper.make_tensor_value_info("br", f, [2])],
    )
    nodes = [
        helper.make_node("Relu", ["x"], ["a"], name="a"),
        helper.make_node("Identity", ["a"], ["b"], name="b"),
        helper.make_node("Add", ["b", "b"], ["c"], name="c"),
        helper.make_node("Neg", ["b"], ["d"], name="d"),
        helper.make_node(
            "If", ["cond"], ["e"], name="e", then_branch=branch, else_branch=branch
        ),
        helper.make_node("Sum", ["c", "d", "e", "a"], ["y"], name="y"),
    ]
    return helper.make_graph(
        nodes,
        "g",
        [
            helper.make_tensor_value_info("x", f, [2]),
            helper.make_tensor_value_info("cond", onnx.TensorProto.BOOL, []),
        ],
        [helper.make_tensor_value_info("y", f, [2])],
    )


def _fresh(graph: Graph) -> dict:
    graph.touch()
    return {k: [n.name for n in v] for k, v in graph.consumers().items()}


def _kept(graph: Graph) -> dict:
    return {k: [n.name for n in v] for k, v in graph.consumers().items()}


def test_remove_and_replace_uses_keep_consumers_equal_to_a_rebuild():
    graph = build_graph(_model())
    before = graph.consumers()
    snapshot = dict(before)
    identity = next(n for n in graph.nodes if n.name == "b")
    graph.remove(identity, "test", "bypassed")
    graph.replace_uses("b", "a")
    kept = _kept(graph)
    assert kept == _fresh(graph)
    # the readers of b (Add twice over one edge list, Neg, the If's branches) now read a,
    # in node order, after the Identity's own read of a is gone
    assert kept["a"] == ["c", "d", "e", "y"]
    assert "b" not in kept
    # a snapshot taken before the edits is left as it was
    assert [n.name for n in snapshot["b"]] == ["c", "d", "e"]


def test_edits_after_a_rebuild_and_an_append_stay_consistent():
    graph = build_graph(_model())
    graph.consumers()
    neg = next(n for n in graph.nodes if n.name == "d")
    graph.remove(neg, "test", "dropped")
    graph.replace_uses("d", "c")
    assert _kept(graph) == _fresh(graph)
    graph.replace_uses("c", "x")
    assert _kept(graph) == _fresh(graph)
    assert _kept(graph)["x"] == ["a", "y"]


def test_add_keeps_consumers_equal_to_a_rebuild():
    from ort_dml_ops.placement.graph import Node

    graph = build_graph(_model())
    graph.consumers()
    proto = helper.make_node("Sum", ["b", "a", "b"], ["z"], name="z")
    graph.add(Node(graph.next_index, "z", "Sum", "", ["b", "a", "b"], ["z"], proto))
    kept = _kept(graph)
    assert kept == _fresh(graph)
    assert kept["b"] == ["c", "d", "e", "z"]


def _order(graph: Graph) -> list:
    return [n.name for n in graph.topological()]


def test_removing_a_source_keeps_order_and_producers_equal_to_a_rebuild():
    """Relu `a` reads only the graph input: ORT's reverse DFS visits it alone, so dropping it
    (as constant folding drops a node of constants) leaves the others' order as it was."""
    graph = build_graph(_model())
    before = _order(graph)
    source = next(n for n in graph.nodes if n.name == "a")
    graph.remove(source, "test", "folded")
    assert graph._topo[0] == graph.version  # kept, not rebuilt
    kept_order, kept_producers = _order(graph), dict(graph.producers())
    assert kept_order == [name for name in before if name != "a"]
    graph.touch()  # drop every cache: the reference is a rebuild
    assert kept_order == _order(graph)
    assert kept_producers == graph.producers()
    assert _kept(graph) == _fresh(graph)


def test_removing_a_node_with_a_producer_rebuilds_the_order():
    graph = build_graph(_model())
    _order(graph)
    neg = next(n for n in graph.nodes if n.name == "d")
    graph.remove(neg, "test", "dropped")
    kept = _order(graph)
    graph.touch()
    assert kept == _order(graph)
