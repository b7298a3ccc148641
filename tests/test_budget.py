"""ort_dml_ops.bench.budget (tools/lowering_budget.py): the kernel count is inspect's, views and
removed nodes left out; the real-export measurement runs. Counts only, no timed assertions."""

from __future__ import annotations

import pytest

from ort_dml_ops import convert, inspect
from ort_dml_ops.bench import budget
from ort_dml_ops.bench.passes import VIEWS
from tests.real_models import get


def test_kernel_count_is_inspects():
    case = budget.OpCase("ScatterElements", "float32", reduction="add", axis=1)
    model = convert(budget.build_model(case, n=4), target="dml", strategy="lower").model
    counted = budget.count_kernels(model, "dml")

    report = inspect(model, target="dml")
    running = [n for n in report.nodes if not n.removed_by]
    on_dml = [n for n in running if n.provider == "DmlExecutionProvider"]
    on_cpu = [n for n in running if n.provider == "CPUExecutionProvider"]
    assert (
        counted.kernels
        == sum(1 for n in on_dml if n.op_type not in (*VIEWS, *budget.HOST_SIDE))
        > 0
    )
    assert counted.cpu == sum(1 for n in on_cpu if n.op_type not in VIEWS)
    assert counted.copies == report.copies
    # the original op runs on the CPU (DML has no reduction kernel): the lowering added all
    row = budget.measure_op(case, "dml", n=4)
    assert row.action == "lowered"
    assert row.added == row.kernels == counted.kernels
    assert row.budget == budget.SCATTER_KERNELS["add"]
    assert row.passes is not None and row.passes > 1
    assert row.status in ("OK", "OVER")


def test_a_row_is_over_where_copies_exceed_the_originals():
    """Item 2: after convert no more copies than the original's, or the guard's one. The DML
    EP has no double kernels for the sorts, masks and scans of a float64 reduction, so its
    lowering bounces between the EPs (cost.DML_OFF_DEVICE_SCATTERS; `auto` keeps such a node
    on ORT's CPU kernel), where the original's scatter, on the CPU with its inputs, copies
    nothing."""
    case = budget.OpCase("ScatterElements", "float64", True, reduction="add", axis=1)
    original = budget.count_kernels(budget.build_model(case, n=4), "dml")
    row = budget.measure_op(case, "dml", n=4, passes=False)
    assert original.copies == 0 and row.copies is not None and row.copies > 1
    assert row.status == "OVER" and f"copies {row.copies} > 1" in row.note
    # an int32 scatter without a reduction: the original's on the CPU too (opset 16 symbolic),
    # the lowering's one copy (the guard's flag) within; on WebGPU the clean variant's one
    case = budget.OpCase(
        "ScatterElements", "int32", True, reduction="none", axis=1, opset=16
    )
    for target in ("dml", "webgpu"):
        row = budget.measure_op(case, target, n=4, passes=False)
        assert row.copies == 1 and "copies" not in row.note


@pytest.mark.parametrize("target", ["dml", "webgpu"])
def test_shape_and_size_are_host_side_kernels(target):
    """Shape and Size are not counted as dispatches: both targets' kernel tables (the DML EP's
    registration, the plugin's recorded assignment) put their output in CPU memory, and no other
    of their inputs or outputs is on the device — they read a tensor's metadata only. A model of
    Shape alone has one node on the target EP and no kernel."""
    from onnx import TensorProto as T
    from onnx import helper as h

    from ort_dml_ops.targets import get_target

    table = get_target(target).table
    for op in (
        budget.HOST_SIDE
    ):  # the plugin has no Size kernel: Size runs on the CPU EP there
        kernels = table.kernels(op, "")
        assert kernels or (target, op) == ("webgpu", "Size")
        assert all(k.cpu_outputs == frozenset({0}) for k in kernels), op
    graph = h.make_graph(
        [h.make_node("Shape", ["x"], ["s"], name="shape")],
        "g",
        [h.make_tensor_value_info("x", T.FLOAT, ["n", 4])],
        [h.make_tensor_value_info("s", T.INT64, [2])],
    )
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 17)], ir_version=8)
    [node] = inspect(model, target=target).nodes
    assert node.provider == get_target(target).provider
    assert budget.count_kernels(model, target).kernels == 0


def test_real_model_row():
    # a ScatterND add: lowered (a scatter without a reduction is native at opset 17)
    m = get("index_add")
    row = budget.measure_real_model(m.name, m.load(), reps=1)
    assert row.actions.get("lowered", 0) >= 1
    assert row.kernels[1] > row.kernels[0]
    assert min(row.session_ms) > 0 and row.ratio > 0
    summary = budget.summarize_models([row])
    assert summary["models"] == 1
    assert summary["session_max_model"] == m.name
