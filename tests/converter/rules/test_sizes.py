"""sizes.py and emitter.zeros_inferred: run-time size arithmetic that emits no node where the
graph already holds the answer (issue 28: every host node is paid again at session creation).

Each case builds sizes of a symbolic input with the real Emitter, saves the graph, and runs it on
ONNX Runtime's CPU EP at several run-time shapes: the values are checked against numpy, and the
node counts against what the identities save."""

from __future__ import annotations

import numpy as np
import onnx_ir as ir
import pytest

from ort_dml_ops.converter.rules import sizes
from ort_dml_ops.converter.rules._base import RewriteContext
from ort_dml_ops.converter.rules.emitter import Emitter, zeros_inferred

from ._util import run_cpu


def _emitter(rank: int = 2) -> tuple[Emitter, ir.Graph, ir.Value]:
    x = ir.Value(
        name="x",
        type=ir.TensorType(ir.DataType.FLOAT),
        shape=ir.Shape([f"d{i}" for i in range(rank)]),
    )
    graph = ir.Graph([x], [], nodes=[], opset_imports={"": 18}, name="g")
    return Emitter(RewriteContext(opset=18, graph=graph), "t"), graph, x


def _run(e: Emitter, graph: ir.Graph, outputs: dict[str, ir.Value], shape) -> dict:
    graph.extend(e.nodes)
    for name, v in outputs.items():
        out = e.op("Identity", v)
        out.name = name
        out.type = ir.TensorType(ir.DataType.INT64)
        graph.append(out.producer())
        graph.outputs.append(out)
    model = ir.serde.serialize_model(ir.Model(graph, ir_version=9))
    got = run_cpu(model, {"x": np.zeros(shape, np.float32)})
    return dict(zip(outputs, got))


def _ops(e: Emitter) -> list[str]:
    return [n.op_type for n in e.nodes]


def test_differences_of_one_size_plus_constants_are_constants():
    e, _, x = _emitter()
    n = sizes.dims(e, x)[0]
    before = len(e.nodes)
    assert sizes.sub(e, n, sizes.add(e, n, 1)) == -1
    assert sizes.sub(e, sizes.add(e, n, 5), sizes.add(e, n, 2)) == 3
    assert sizes.sub(e, n, n) == 0
    # the Adds stay (they are sizes of their own); no Sub was emitted
    assert "Sub" not in _ops(e)[before:]


@pytest.mark.parametrize("shape", [(0, 3), (1, 1), (7, 2)])
def test_chained_constant_additions_are_one_add_and_exact(shape):
    e, graph, x = _emitter()
    n = sizes.dims(e, x)[0]
    plus_three = sizes.add(e, sizes.add(e, sizes.add(e, n, 1), 1), 1)
    back = sizes.add(e, plus_three, -3)
    minus = sizes.sub(e, plus_three, 10)
    assert back is n  # (n + 3) − 3 is n itself: no node
    # each sum is one Add of n, never an Add of an Add
    for v in (plus_three, minus):
        node = v.producer()
        assert node.op_type == "Add" and node.inputs[0] is n
    got = _run(e, graph, {"plus_three": plus_three, "minus": minus}, shape)
    assert got["plus_three"].tolist() == [shape[0] + 3]
    assert got["minus"].tolist() == [shape[0] + 3 - 10]


@pytest.mark.parametrize("shape", [(0, 3), (4, 5)])
def test_every_dim_of_a_shape_in_order_is_that_shape(shape):
    e, graph, x = _emitter()
    d = sizes.dims(e, x)
    whole = sizes.concat(e, d)
    assert whole.producer().op_type == "Shape"  # no Concat
    swapped = sizes.concat(e, [d[1], d[0]])
    assert swapped.producer().op_type == "Concat"  # another order is a Concat
    assert sizes.concat(e, [d[1]]) is d[1]  # one part is itself
    got = _run(e, graph, {"whole": whole, "swapped": swapped}, shape)
    assert got["whole"].tolist() == list(shape)
    assert got["swapped"].tolist() == [shape[1], shape[0]]


def test_part_of_the_dims_stays_a_concat():
    e, _, x = _emitter(3)
    d = sizes.dims(e, x)
    assert sizes.concat(e, d[:2]).producer().op_type == "Concat"


@pytest.mark.parametrize("shape", [(0, 3), (2, 0), (3, 4)])
def test_zeros_are_mapped_only_where_a_dim_may_be_zero(shape):
    e, graph, x = _emitter()
    rows, row = sizes.dims(e, x)
    positive = sizes.maximum(e, row, 1)
    never = sizes.concat(e, [-1, positive])
    assert zeros_inferred(e, never) is never  # Max(row, 1) is never 0: nothing to map
    may = sizes.concat(e, [rows, positive])
    mapped = zeros_inferred(e, may)
    assert mapped.producer().op_type == "Where"
    got = _run(e, graph, {"never": never, "mapped": mapped}, shape)
    assert got["never"].tolist() == [-1, max(shape[1], 1)]
    assert got["mapped"].tolist() == [shape[0] or -1, max(shape[1], 1)]
