"""ort_dml_ops.bench.budget (tools/lowering_budget.py): the kernel count is inspect's, views and
removed nodes left out; the real-export measurement runs. Counts only, no timed assertions."""

from __future__ import annotations

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
    assert counted.kernels == sum(1 for n in on_dml if n.op_type not in VIEWS) > 0
    assert counted.cpu == sum(1 for n in on_cpu if n.op_type not in VIEWS)
    assert counted.copies == report.copies
    # the original op runs on the CPU (DML has no reduction kernel): the lowering added all
    row = budget.measure_op(case, "dml", n=4)
    assert row.action == "lowered"
    assert row.added == row.kernels == counted.kernels
    assert row.budget == budget.SCATTER_KERNELS["add"]
    assert row.passes is not None and row.passes > 1
    assert row.status in ("OK", "OVER")


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
