"""``ReshapeFusion::Fuse_Subgraph`` (level 1): a Reshape's shape built by a Concat becomes a constant.

Mirrors ``core/optimizer/reshape_fusion.cc``. The Concat (one output edge, no graph output) that
makes a Reshape's shape is replaced by an int64 initializer of the same name when each of its
inputs is

* a constant int32 / int64 initializer: its values;
* ``Shape(x) → Gather(i) → Unsqueeze(axes=[0])`` where ``i`` is the position in the shape so far
  and ``x`` is the Reshape's data (or a value of the same known shape): ``0`` (copy that dim);
* a value of exactly one element (its inferred shape), another ``Shape → Gather → Unsqueeze``, an
  ``Unsqueeze`` of one element or of ``Shape → Slice (one element) → Squeeze``, or an
  ``Unsqueeze`` of a ``Div`` / ``Mul`` whose inputs are such: ``-1``, at most once in the shape.

Then the Concat goes, and the nodes that fed only it (``graph_utils::
RemoveNodesWithOneOutputBottomUp``; which ones was measured, ``_remove_dead``). This is why a transformer export's ``x.view(x.size(0), x.size(1), h, d)`` runs
as one Reshape.

Measured on ORT 1.31's CPU EP, not only read: the fusion also takes ``Unsqueeze`` with its axes as
an input (opset 13+) and ``Shape`` 15 / 19 / 21, which the reshape_fusion.cc read here (opset-13
version lists, axes as an attribute only) does not; the op versions are therefore not checked.
A ``Shape`` of another value than the Reshape's data matches as each ORT build compares shapes
(``_match_shape``: 1.31 the gathered dim by value or symbolic name, 1.24.4 every dim by value).
Not modelled: DistilBert's ``MatMul → Add`` root (``Match_Linear_Subgraph_1``, for values of
unknown shape).
"""

from __future__ import annotations

import math

import numpy as np

from .dims import same_dim
from .graph import Graph, Initializer, Node

STEP = "ReshapeFusion"
_INT_MAX = 2**31 - 1


def _parent(graph: Graph, node: Node, at: int, op: str) -> Node | None:
    """FindPath's step: the `op` node whose first output is `node`'s input `at`."""
    if len(node.inputs) <= at or not node.inputs[at]:
        return None
    p = graph.producers().get(node.inputs[at])
    if p is None or p.op_type != op or p.domain not in ("", "ai.onnx"):
        return None
    return p if p.outputs and p.outputs[0] == node.inputs[at] else None


def _axes_zero(graph: Graph, unsqueeze: Node) -> bool:
    axes = unsqueeze.attr("axes")
    if axes is None and len(unsqueeze.inputs) > 1:
        axes = graph.int_values(unsqueeze.inputs[1])
    return axes is not None and list(axes) == [0]


def _one_element(shapes: dict, node: Node, at: int) -> bool:
    """Is_One_Element_Input: the input's inferred shape is known and holds one element."""
    dims = shapes.get(node.inputs[at]) if len(node.inputs) > at else None
    return (
        dims is not None and all(d is not None for d in dims) and math.prod(dims) == 1
    )


def _scalar_equal(graph: Graph, shapes: dict, name: str, expected: int) -> bool:
    """IsInitializerWithExpectedValue(..., is_constant=false): a one-element int initializer."""
    dims = shapes.get(name)
    if dims is None or dims not in ((), (1,)):
        return False
    values = graph.int_values(name, constant=False)
    return values is not None and len(values) == 1 and values[0] == expected


def _gathered_dim(
    graph: Graph,
    shapes: dict,
    symbols: dict | None,
    root: str,
    concat: Node,
    at: int,
    position: int,
    one_element_only: bool = False,
) -> bool:
    """Match_One_Element_Output_Subgraph_1: Shape → Gather(`position`) → Unsqueeze(axes=[0])
    into input `at`, the Shape's input shaped as `root`; with `one_element_only`, a Gather of
    any one-element index is enough."""
    unsqueeze = _parent(graph, concat, at, "Unsqueeze")
    gather = unsqueeze and _parent(graph, unsqueeze, 0, "Gather")
    shape = gather and _parent(graph, gather, 0, "Shape")
    if not (unsqueeze and gather and shape) or not _axes_zero(graph, unsqueeze):
        return False
    if one_element_only and _one_element(shapes, gather, 1):
        return True
    if len(gather.inputs) < 2 or not _scalar_equal(
        graph, shapes, gather.inputs[1], position
    ):
        return False
    return _match_shape(shapes, symbols, shape.inputs[0], root, position)


def _match_shape(
    shapes: dict, symbols: dict | None, value: str, root: str, index: int
) -> bool:
    """Match_Shape without its DistilBert branch (Match_Linear_Subgraph_1): `value` is the
    Reshape's data, or its shape matches the data's. ORT 1.31 (`symbols` given) compares the
    gathered dim only, by value or by symbolic name (measured: other dims and the ranks may
    differ; an unnamed unknown dim matches nothing). onnxruntime-directml 1.24.4 (`symbols`
    None) compares every dim, each a known value (``optimizer_utils::CompareShape``)."""
    if value == root:
        return True
    sa, sb = shapes.get(value), shapes.get(root)
    if sa is None or sb is None:
        return False
    if symbols is None:
        return len(sa) == len(sb) >= 1 and all(
            x is not None and x == y for x, y in zip(sa, sb)
        )
    return index < min(len(sa), len(sb)) and same_dim(
        shapes, symbols, value, index, root, index
    )


def _sliced_dim(graph: Graph, root: str, node: Node, at: int) -> bool:
    """Match_One_Element_Output_Subgraph_2: Shape(root) → Slice (one element) → Squeeze."""
    squeeze = _parent(graph, node, at, "Squeeze")
    slice_ = squeeze and _parent(graph, squeeze, 0, "Slice")
    shape = slice_ and _parent(graph, slice_, 0, "Shape")
    if not (squeeze and slice_ and shape) or shape.inputs[0] != root:
        return False
    prod = graph.producers()
    if sum(1 for x in slice_.inputs if x in prod) >= 3:
        starts = graph.int_values(slice_.inputs[1]) or []
        ends = graph.int_values(slice_.inputs[2]) or []
    else:  # Slice-1: attributes
        starts, ends = (
            list(slice_.attr("starts") or []),
            list(slice_.attr("ends") or []),
        )
    if len(starts) != 1 or len(ends) != 1:
        return False
    return (ends[0] >= _INT_MAX and starts[0] == -1) or abs(ends[0] - starts[0]) == 1


def _one_element_subgraph(
    graph: Graph,
    shapes: dict,
    symbols: dict | None,
    root: str,
    concat: Node,
    at: int,
    position: int,
) -> bool:
    """Is_One_Element_Output_Subgraph."""
    if _one_element(shapes, concat, at) or _gathered_dim(
        graph, shapes, symbols, root, concat, at, position, one_element_only=True
    ):
        return True
    unsqueeze = _parent(graph, concat, at, "Unsqueeze")
    if unsqueeze is None or not _axes_zero(graph, unsqueeze):
        return False
    binary = _parent(graph, unsqueeze, 0, "Div") or _parent(graph, unsqueeze, 0, "Mul")
    if binary is None:
        return _one_element(shapes, unsqueeze, 0) or _sliced_dim(
            graph, root, unsqueeze, 0
        )
    return all(
        _one_element(shapes, binary, i) or _sliced_dim(graph, root, binary, i)
        for i in range(len(binary.inputs))
    )


def _shape_value(
    graph: Graph, shapes: dict, symbols: dict | None, reshape: Node, concat: Node
) -> list | None:
    root = reshape.inputs[0]
    value: list = []
    for at, x in enumerate(concat.inputs):
        known = graph.int_values(x)
        if known is not None:
            value += known
        elif _gathered_dim(graph, shapes, symbols, root, concat, at, len(value)):
            value.append(0)
        elif _one_element_subgraph(
            graph, shapes, symbols, root, concat, at, len(value)
        ):
            value.append(-1)
        else:
            return None
    return value if value.count(-1) <= 1 else None


def _remove_dead(graph: Graph, start: list, why: str) -> None:
    """The nodes that fed only what was removed, upwards: a node goes once no node reads any
    of its outputs and it makes no graph output (measured on ORT 1.31: a Shape read by both
    Gathers of the Concat goes, the Reshape's data producer stays, and a Shape or Gather that
    another node still reads stays)."""
    queue = list(start)
    while queue:
        cur = queue.pop(0)
        if cur.dead or any(o in graph.outputs for o in cur.outputs if o):
            continue
        cons = graph.consumers()
        if any(cons.get(o) for o in cur.outputs if o):
            continue
        prod = graph.producers()
        parents = [prod[x] for x in dict.fromkeys(cur.inputs) if x in prod]
        graph.remove(cur, STEP, why)
        queue.extend(parents)


def fuse_subgraph(
    graph: Graph, reshape: Node, shapes: dict, symbols: dict | None
) -> bool:
    """Fuse_Subgraph for one Reshape; True where ORT fuses it. `symbols`: the dims' symbolic
    names (ORT 1.31's Match_Shape reads them), or None (1.24.4's, which does not)."""
    if len(reshape.inputs) < 2 or not reshape.inputs[1]:
        return False
    concat = graph.producers().get(reshape.inputs[1])
    if (
        concat is None
        or concat.op_type != "Concat"
        or concat.domain not in ("", "ai.onnx")
    ):
        return False
    out = concat.outputs[0]
    readers = graph.consumers().get(out, [])
    if out in graph.outputs or sum(x == out for c in readers for x in c.inputs) != 1:
        return False
    value = _shape_value(graph, shapes, symbols, reshape, concat)
    if value is None:
        return False
    prod = graph.producers()
    feeding = [prod[x] for x in dict.fromkeys(concat.inputs) if x in prod]
    array = np.array(value, dtype=np.int64)
    graph.initializers[out] = Initializer(out, 7, array.shape, array)
    shapes[out] = array.shape
    graph.remove(
        concat,
        STEP,
        f"the shape of '{reshape.name}' made a constant by ORT's ReshapeFusion "
        "(reshape_fusion.cc Fuse_Subgraph)",
    )
    _remove_dead(
        graph,
        feeding,
        f"fed only the shape of '{reshape.name}', which ORT's ReshapeFusion made a constant "
        "(reshape_fusion.cc Fuse_Subgraph)",
    )
    return True
