"""The cost figures in `convert`'s report (converter/rules/cost.py) and the `auto` choices they decide."""

from __future__ import annotations

import numpy as np
import pytest

from ort_dml_ops import convert
from ort_dml_ops.converter.rules import cost
from ort_dml_ops.converter.rules.cost import OptionCost, dominated
from tests.converter.rules._util import run_cpu, single_op

from .test_scatter import elements_model


def _scatter(dtype, reduction="add", n=50):
    return single_op(
        "ScatterElements",
        [
            ("data", dtype, [n]),
            ("indices", np.int64, [2 * n]),
            ("updates", dtype, [2 * n]),
        ],
        {"axis": 0, "reduction": reduction},
        opset=18,
    )


def _cumsum(n):
    return single_op(
        "CumSum",
        [("x", np.float32, [4, n])],
        {},
        opset=14,
        inits={"axis": np.array(1, np.int64)},
    )


def test_report_has_each_options_cost():
    rep = convert(_scatter(np.float32, "max"), "dml").report.to_dict()["nodes"][0]
    assert set(rep["cost"]) == {
        "lowered",
        "cpu",
    }  # DML has no ScatterElements-18: no native option
    low, cpu = rep["cost"]["lowered"], rep["cost"]["cpu"]
    assert low["passes"] > cpu["passes"] and low["copies"] < cpu["copies"]
    assert cpu["bytes_moved"] == 50 * 4  # one pass over the 50 float32 outputs
    assert (low["kernels"], cpu["kernels"]) == (cost.SCATTER_KERNELS["max"][0], 1)
    # 50 elements: the lowering's dispatches cost more than the CPU kernel and its copies
    assert cpu["estimate_us"] < low["estimate_us"] and rep["action"] == "cpu"
    assert [r["code"] for r in rep["refusals"]] == ["cpu-path-cheaper"]
    web = convert(_scatter(np.float32), "webgpu").report.to_dict()["nodes"][0]
    assert web["action"] == "native" and web["cost"]["native"] == {
        "passes": 1.0,
        "copies": 0,
        "kernels": 1,
        "bytes_moved": 200,
        "estimate_us": 10.0,  # one dispatch; 200 bytes are nothing at 200 GB/s
    }


def test_a_host_side_scatter_stays_on_the_cpu_under_every_strategy():
    """WebGPU keeps int64 data on the CPU EP: its CPU path copies nothing, while a lowering
    would run there too and still copy (TopK, MaxUnpool have no WebGPU kernel). The rule
    refuses it (code `host-type`), so no strategy lowers it and no lowered option is weighed."""
    m = _scatter(np.int64)
    for strategy in ("auto", "lower"):
        rep = convert(m, "webgpu", strategy=strategy).report.nodes[0]
        # node untouched: ORT places it on its CPU EP
        assert rep.action == "native" and rep.emitted == [], rep.reason
        assert "has no kernels for int64 data" in rep.reason
        assert "lowered" not in rep.cost and rep.cost["cpu"]["copies"] == 0
        assert [r["code"] for r in rep.refusals if r["rule"].startswith("scatter")] == [
            "host-type"
        ]


@pytest.mark.parametrize("symbolic", [False, True], ids=["static", "symbolic"])
@pytest.mark.parametrize("dtype", ["int64", "uint64", "float64", "bfloat16"])
def test_auto_leaves_a_webgpu_host_type_scatter_on_the_cpu_at_any_size(dtype, symbolic):
    """The WebGPU plugin keeps these types on the CPU EP, so their lowering would run there
    too, beside the kernel it would replace (measured on the plugin, float64 at 300 × 300: 2.9
    ms against ORT's kernel's 0.40, and two copies more): the rule refuses them, `auto` keeps
    the node at 300 × 300 as at any size, and adds no copy."""
    from ort_dml_ops.bench import budget
    from ort_dml_ops.inspection import inspect

    case = budget.OpCase("ScatterElements", dtype, symbolic, "none")
    model = budget.build_model(case, 300)
    result = convert(model, target="webgpu")
    (node,) = result.report.nodes
    assert node.action == "native" and node.emitted == [], node.reason
    assert "lowered" not in node.cost and node.cost["cpu"]["copies"] == 0
    assert inspect(result.model, "webgpu").copies <= inspect(model, "webgpu").copies


@pytest.mark.parametrize(
    "n,action", [(32, "native"), (1000, "native"), (8000, "lowered")]
)
def test_webgpu_cumsum_cost_fact_decides(n, action):
    """[4, n]: the plugin's kernel, one dispatch and n / 2 passes, against the scan's dispatches
    (cost.native_costlier; tests/webgpu/test_lowering_width.py has the figures)."""
    rep = convert(_cumsum(n), "webgpu").report.nodes[0]
    assert rep.action == action
    assert rep.cost["native"]["passes"] == max(
        1.0, n / 2
    )  # the prefix read per element


def test_dominated_needs_no_worse_on_both_and_better_on_one():
    costs = {
        "lowered": OptionCost(28.0, 2),
        "cpu": OptionCost(1.0, 0),
        "native": OptionCost(1.0, 3),
    }
    assert dominated(costs, "lowered", by="cpu")
    assert not dominated(
        costs, "lowered", by="native"
    )  # fewer passes, more copies: not clear
    assert not dominated(costs, "cpu", by="cpu")
    assert not dominated(costs, "lowered", by="missing")


@pytest.mark.parametrize("symbolic", [False, True], ids=["static", "symbolic"])
@pytest.mark.parametrize(
    "target,reduction",
    [
        ("dml", r)
        for r in (
            "none",
            "add",
            "mul",
            "max",
            "min",
            "int_max_min",
            "int_add",
            "int_mul",
        )
    ]
    + [("webgpu", r) for r in ("none", "none_sorted", "add", "mul", "max", "min")],
)
def test_scatter_pass_figures_are_what_the_lowered_graph_writes(
    target, reduction, symbolic
):
    """The report's lowered-scatter passes (cost.SCATTER_PASSES, and the WebGPU-clean variant's)
    are the bytes ONNX Runtime's kernels write for the graph convert emits (its profiler,
    bench/passes.py; views apart) ÷ the data's bytes, at the size they were measured (1e6)."""
    from ort_dml_ops.bench.passes import count_passes
    from ort_dml_ops.converter.rules import cost

    n = 1000
    dtype = np.int32 if reduction.startswith("int_") else np.float32
    op_red = {
        "int_max_min": "max",
        "int_add": "add",
        "int_mul": "mul",
        "none_sorted": "none",
    }.get(reduction, reduction)
    # along the last axis of [n, n] data with as many updates: what the figures were measured on
    # (none_sorted: opset 17, whose ScatterElements has no max for the clean variant's winners)
    dims = ["rows", "cols"] if symbolic else [n, n]
    opset = 17 if reduction == "none_sorted" else 18
    model = elements_model(dims, dims, 1, op_red, dtype, opset=opset)
    rng = np.random.default_rng(0)
    if op_red == "none":
        indices = np.argsort(rng.random((n, n)), axis=1)
    else:
        indices = rng.integers(-n, n, (n, n))
    feeds = {
        "data": rng.normal(size=(n, n)).astype(dtype),
        "indices": indices.astype(np.int64),
        "updates": rng.normal(size=(n, n)).astype(dtype),
    }
    lowered = convert(model, target=target, strategy="lower").model
    measured = count_passes(lowered, feeds).passes(n * n * 4, views=False)
    table = (
        cost.WEBGPU_CLEAN_SCATTER_PASSES if target == "webgpu" else cost.SCATTER_PASSES
    )
    assert round(measured, 1) == table[reduction][1 if symbolic else 0]


@pytest.mark.parametrize("symbolic", [False, True], ids=["static", "symbolic"])
# none_unique needs positions a TopK proves distinct: its own test, below
@pytest.mark.parametrize(
    "kind", [k for k in cost.SCATTER_KERNELS if k != "none_unique"]
)
def test_scatter_kernel_figures_are_what_inspect_counts(kind, symbolic):
    """The report's lowered-scatter kernels (cost.SCATTER_KERNELS, what `auto` weighs with the
    dispatch cost) are the non-view kernels `inspect` places on the DML EP for the graph convert
    emits, index guard included, counted as tools/lowering_budget.py counts them (300 × 300)."""
    from ort_dml_ops.bench import budget

    dtype, red = {
        "int_max_min": ("int32", "max"),
        "int_add": ("int32", "add"),
        "int_mul": ("int32", "mul"),
    }.get(kind, ("float32", kind))
    case = budget.OpCase("ScatterElements", dtype, symbolic, red)
    row = budget.measure_op(case, "dml", passes=False)
    assert row.action == "lowered" and row.added == row.kernels
    assert row.added == cost.SCATTER_KERNELS[kind][1 if symbolic else 0]


@pytest.mark.parametrize("symbolic", [False, True], ids=["static", "symbolic"])
@pytest.mark.parametrize("dtype,reduction", list(cost.DML_OFF_DEVICE_SCATTERS))
def test_off_device_figures_are_what_inspect_counts(dtype, reduction, symbolic):
    """The kernels and copies of a lowering whose element type the DML EP's kernels lack
    (cost.DML_OFF_DEVICE_SCATTERS) are what `inspect` counts for the graph convert emits
    (300 × 300, as tools/lowering_budget.py counts them)."""
    from ort_dml_ops.bench import budget

    case = budget.OpCase("ScatterElements", dtype, symbolic, reduction)
    row = budget.measure_op(case, "dml", passes=False)
    kernels, copies = cost.DML_OFF_DEVICE_SCATTERS[(dtype, reduction)]
    assert row.action == "lowered"
    assert (row.added, row.copies) == (
        kernels[1 if symbolic else 0],
        copies[1 if symbolic else 0],
    )


@pytest.mark.parametrize("symbolic", [False, True], ids=["static", "symbolic"])
def test_a_float64_cumprod_keeps_its_fallback_on_dml(symbolic):
    """The blocked CumProd of float64 bounces between the EPs on DML (its kernels and copies:
    cost.DML_OFF_DEVICE_CUMPROD, counted again here by `inspect`): `auto` leaves the custom op
    on its Python fallback, with no copy more than the original; float32 still lowers."""
    from ort_dml_ops.bench import budget
    from ort_dml_ops.inspection import inspect

    case = budget.OpCase("CumProd", "float64", symbolic)
    row = budget.measure_op(case, "dml", passes=False)
    kernels, copies = cost.DML_OFF_DEVICE_CUMPROD["float64"]
    assert (row.kernels, row.copies) == (
        kernels[1 if symbolic else 0],
        copies[1 if symbolic else 0],
    )
    model = budget.build_model(case, 300)
    result = convert(model, target="dml")
    (node,) = result.report.nodes
    assert node.action == "fallback" and "cost: the CPU path is" in node.reason
    assert inspect(result.model, "dml").copies <= inspect(model, "dml").copies
    as_float = budget.build_model(budget.OpCase("CumProd", "float32", symbolic), 300)
    assert convert(as_float, target="dml").report.nodes[0].action == "lowered"


@pytest.mark.parametrize("symbolic", [False, True], ids=["static", "symbolic"])
@pytest.mark.parametrize("reduction", ["add", "mul", "max", "min"])
@pytest.mark.parametrize("dtype", ["float64", "bfloat16"])
def test_auto_keeps_a_scatter_whose_lowering_leaves_the_dml_ep_on_the_cpu(
    dtype, reduction, symbolic
):
    """float64 and bfloat16 lowerings run most of their ops off the DML EP (a hundred copies
    and more a run): `auto` leaves the node on ONNX Runtime's CPU kernel, says why, and claims
    no size above which the lowering would win; the converted model copies no more than the
    original (inspect), and its output is ORT's CPU kernel's (float64)."""
    from ort_dml_ops.bench import budget
    from ort_dml_ops.inspection import inspect

    case = budget.OpCase("ScatterElements", dtype, symbolic, reduction)
    model = budget.build_model(case, 30)
    result = convert(model, target="dml")
    (node,) = result.report.nodes
    assert node.action == "cpu", node.reason
    assert "the CPU path is" in node.reason
    assert "wins_above_elements" not in node.cost["lowered"]
    assert inspect(result.model, "dml").copies <= inspect(model, "dml").copies
    if dtype == "float64":  # (onnxruntime's Python API takes no bfloat16 feeds)
        feeds = budget.build_feeds(case, 30)
        np.testing.assert_array_equal(
            run_cpu(result.model, feeds)[0], run_cpu(model, feeds)[0]
        )


@pytest.mark.parametrize("symbolic", [False, True], ids=["static", "symbolic"])
@pytest.mark.parametrize(
    "kind,dtype",
    [(k, "float32") for k in cost.WEBGPU_CLEAN_SCATTER_KERNELS]
    # a write without reduction takes the same graph for int32 data (scatter_clean.applies)
    + [("none", "int32"), ("none_sorted", "int32")],
)
def test_webgpu_clean_kernel_figures_are_what_inspect_counts(kind, dtype, symbolic):
    """The WebGPU-clean variant's kernels (cost.WEBGPU_CLEAN_SCATTER_KERNELS) are the non-view
    kernels `inspect` places on the WebGPU plugin for the graph convert emits, counted as
    tools/lowering_budget.py counts them (300 × 300)."""
    from ort_dml_ops.bench import budget

    # none_sorted: opset 17, whose ScatterElements has no max for the winners: the sort's graph
    sorted_none = kind == "none_sorted"
    case = budget.OpCase(
        "ScatterElements",
        dtype,
        symbolic,
        "none" if sorted_none else kind,
        opset=17 if sorted_none else 18,
    )
    result = convert(budget.build_model(case), "webgpu", strategy="lower")
    if sorted_none:
        assert "TopK" in {n.op_type for n in result.model.graph.node}
    row = budget.measure_op(case, "webgpu", passes=False)
    assert row.action == "lowered"
    counted = cost.WEBGPU_CLEAN_SCATTER_KERNELS[kind][1 if symbolic else 0]
    assert row.added == counted
    # and the report gives the node that figure, with the one copy of the indices' upload
    lowered = result.report.nodes[0].cost["lowered"]
    assert (
        (lowered["kernels"], lowered["copies"]) == (counted, row.copies) == (counted, 1)
    )


def _symbolic_scatter(reduction: str):
    return elements_model(["rows", "cols"], ["rows", "cols"], 1, reduction, np.float32)


@pytest.mark.parametrize("reduction", ["add", "max"])
def test_auto_weighs_kernels_at_the_declared_sizes(reduction):
    """Static sizes: auto keeps a small scatter on ORT's CPU kernel and lowers a large one, as
    DeviceModel's estimates say — each checked here against the model's own formula fed with
    the counted kernels and measured passes, and against the other option. (Without a
    reduction the model moves to opset 17, where the DML EP has its own kernel: test_opset.)"""
    small = convert(elements_model([20, 20], [20, 20], 1, reduction, np.float32), "dml")
    large = convert(
        elements_model([3000, 3000], [3000, 3000], 1, reduction, np.float32), "dml"
    )
    for result, action in ((small, "cpu"), (large, "lowered")):
        node = result.report.nodes[0]
        low, cpu = node.cost["lowered"], node.cost["cpu"]
        n = node.cost["cpu"]["bytes_moved"] // 4  # data elements (= updates here)
        want_low = cost.DEVICE.device_us(low["kernels"], low["passes"], 4 * n, 1)
        want_cpu = cost.DEVICE.cpu_us(n, 3, 3 * 4 * n)
        assert low["estimate_us"] == pytest.approx(want_low, abs=0.1)
        assert cpu["estimate_us"] == pytest.approx(want_cpu, abs=0.1)
        assert node.action == action, node.reason
    assert "the CPU path is faster" in small.report.nodes[0].reason


@pytest.mark.parametrize("op", ["ScatterND", "ScatterElements"])
def test_a_scatter_nd_reduction_kept_on_the_cpu_says_its_kernel_can_lose_updates(op):
    """ORT's CPU ScatterND applies a reduction on its thread pool without atomics (measured:
    tools/repro_ort_cpu_scatternd_race.py; the lowering stays exact: test_scatter.py
    `test_lowered_scatter_nd_reduction_is_exact_where_orts_cpu_kernel_races`). Where auto
    keeps such a node there, as the original runs it, its reason and the CPU option's cost
    note say so; ORT's CPU ScatterElements loops in order, and its reason says nothing."""
    inputs = [
        ("data", np.float32, [20, 20]),
        ("indices", np.int64, [20, 1] if op == "ScatterND" else [20, 20]),
        ("updates", np.float32, [20, 20]),
    ]
    m = single_op(op, inputs, {"reduction": "add"}, opset=18)
    node = convert(m, "dml").report.nodes[0]
    assert node.action == "cpu", node.reason
    said = cost.CPU_SCATTER_ND_RACE in node.reason
    assert said == (op == "ScatterND")
    assert (cost.CPU_SCATTER_ND_RACE in node.cost["cpu"]["note"]) == said


def test_input_shape_hints_decide_what_symbolic_dims_leave_open():
    """Symbolic dims: no estimate, so auto lowers (as before); a hint gives the sizes, and the
    model keeps its own symbolic declarations."""
    m = _symbolic_scatter("add")
    plain = convert(m, "dml").report.nodes[0]
    assert plain.action == "lowered" and "estimate_us" not in plain.cost["lowered"]
    hint = {"data": (64, 64), "indices": (64, 64), "updates": (64, 64)}
    hinted = convert(m, "dml", input_shapes=hint)
    node = hinted.report.nodes[0]
    assert node.action == "cpu" and node.cost["cpu"]["estimate_us"] > 0
    dims = [d.dim_param for d in hinted.model.graph.input[0].type.tensor_type.shape.dim]
    assert dims == ["rows", "cols"]
    big = {k: (4000, 4000) for k in hint}
    assert convert(m, "dml", input_shapes=big).report.nodes[0].action == "lowered"
    # one input's hint names 'rows' and 'cols' for every input that shares them
    one = convert(m, "dml", input_shapes={"data": (64, 64)}).report.nodes[0]
    assert one.action == "cpu" and one.cost == node.cost


def _convert_cli(src, out, *extra: str, check: bool):
    """`ort-dml-ops convert SRC -o OUT EXTRA...` in a real process."""
    import subprocess
    import sys

    argv = [sys.executable, "-m", "ort_dml_ops", "convert", str(src), "-o", str(out)]
    return subprocess.run([*argv, *extra], capture_output=True, text=True, check=check)


def test_input_shape_hint_mistakes_are_one_line_errors(tmp_path):
    import onnx

    from ort_dml_ops import UserError

    m = _symbolic_scatter("add")
    with pytest.raises(UserError, match="no such input"):
        convert(m, "dml", input_shapes={"nope": (2, 2)})
    with pytest.raises(UserError, match="3 dims given"):
        convert(m, "dml", input_shapes={"data": (2, 2, 2)})
    src, out = tmp_path / "m.onnx", tmp_path / "o.onnx"
    onnx.save(m, src)
    for bad in ("data", "data=2,x", "=4"):
        proc = _convert_cli(src, out, "--input-shape", bad, check=False)
        assert proc.returncode != 0 and proc.stderr.count("\n") == 1, proc.stderr
        assert "Traceback" not in proc.stderr and not out.exists()
    ok = _convert_cli(src, out, "--input-shape", "data=4000,4000", "--json", check=True)
    assert '"estimate_us"' in ok.stdout


def _masked_scatter_add(n: int, m: int):
    """x[target[mask]] += src[mask] as exporters write it: NonZero, Gathers, ScatterElements.
    Every input is static; the number of updates is a NonZero's count, at most m."""
    from onnx import TensorProto as T
    from onnx import helper as h
    from onnx import numpy_helper

    nodes = [
        h.make_node("NonZero", ["mask"], ["nz"], name="nonzero"),
        h.make_node("Reshape", ["nz", "flat"], ["picked"], name="flatten"),
        h.make_node("Gather", ["src", "picked"], ["updates"], name="take_src"),
        h.make_node("Gather", ["target", "picked"], ["indices"], name="take_target"),
        h.make_node(
            "ScatterElements",
            ["x", "indices", "updates"],
            ["y"],
            name="scatter_add",
            axis=0,
            reduction="add",
        ),
    ]
    graph = h.make_graph(
        nodes,
        "masked_scatter_add",
        [
            h.make_tensor_value_info("x", T.FLOAT, [n]),
            h.make_tensor_value_info("mask", T.BOOL, [m]),
            h.make_tensor_value_info("target", T.INT64, [m]),
            h.make_tensor_value_info("src", T.FLOAT, [m]),
        ],
        [h.make_tensor_value_info("y", T.FLOAT, [n])],
        [numpy_helper.from_array(np.array([-1], np.int64), "flat")],
    )
    return h.make_model(graph, opset_imports=[h.make_opsetid("", 18)], ir_version=10)


def test_a_nonzero_count_bounds_the_cpu_paths_worst_case():
    """Static inputs, updates counted by a NonZero: onnx leaves their number open, ONNX
    Runtime's symbolic shape inference names it, and its bound (the mask's size) gives the CPU
    path's worst case. Small: even at the bound the CPU kernel and its copies cost less than the
    lowering's dispatches, so auto keeps it there and says it is a worst case; large: the CPU
    path's worst case is the costlier, so auto lowers (as without a bound)."""
    import onnx

    small = _masked_scatter_add(10, 20)
    onnx.checker.check_model(small, full_check=True)
    node = convert(small, "dml").report.nodes[0]
    assert node.action == "cpu", node.reason
    cpu = node.cost["cpu"]
    assert (
        cpu["estimate_is_upper_bound"] is True and "at most 20 updates" in cpu["note"]
    )
    # the model's own formula at the bound: 20 updates, data in and out plus the updates moved
    assert cpu["estimate_us"] == pytest.approx(
        cost.DEVICE.cpu_us(20, 3, 2 * 4 * 10 + 4 * 20), abs=0.1
    )
    assert cpu["estimate_us"] < node.cost["lowered"]["estimate_us"]
    assert "at most" in node.reason
    large = convert(_masked_scatter_add(4_000_000, 4_000_000), "dml").report.nodes[0]
    assert large.action == "lowered", large.reason
    assert large.cost["cpu"]["estimate_is_upper_bound"] is True


def test_bounds_read_only_sums_of_products():
    """A bound is read from ORT's dim text only where it cannot be exceeded: sums of products
    of whole numbers and NonZero counts. A difference, a minimum, a power or an unknown symbol
    gives none."""
    from ort_dml_ops.converter.size_hints import _upper_bound

    counts = {"NonZero_10_o0__d1": 14, "NonZero_3_o0__d1": 5}
    assert _upper_bound("NonZero_10_o0__d1 + 7", counts) == 21
    assert _upper_bound("2*NonZero_3_o0__d1 + NonZero_10_o0__d1", counts) == 24
    assert _upper_bound("NonZero_10_o0__d1*NonZero_3_o0__d1", counts) == 70
    for open_ in (
        "NonZero_10_o0__d1 - 1",
        "Min(NonZero_10_o0__d1, 3)",
        "NonZero_10_o0__d1**2",
        "batch + 1",
        "",
    ):
        assert _upper_bound(open_, counts) is None, open_


def test_the_bound_holds_on_a_real_export():
    """pyg_gcn_conv (a torch.onnx export of PyG's GCNConv, self loops removed with a mask and
    added back): at the export's own sizes its scatters' updates are bounded by the edges plus
    the nodes, and ONNX Runtime, running the export, counts no more."""
    import onnx
    import onnxruntime as ort

    from ort_dml_ops.converter.size_hints import known_sizes
    from tests.real_models import REAL_MODELS

    entry = next(r for r in REAL_MODELS if r.name == "pyg_gcn_conv")
    model = entry.load()
    shapes = {k: tuple(v.shape) for k, v in entry.inputs.items()}
    _, bounds = known_sizes(model, shapes)
    scatters = [n for n in model.graph.node if n.op_type == "ScatterElements"]
    assert scatters
    edges, nodes = shapes["edge_index"][1], shapes["x"][0]
    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    for n in scatters:
        assert bounds[n.input[2]][0] == edges + nodes, bounds.get(n.input[2])
        probe.graph.output.append(onnx.ValueInfoProto(name=n.input[2]))
    got = ort.InferenceSession(
        probe.SerializeToString(), providers=["CPUExecutionProvider"]
    ).run([n.input[2] for n in scatters], dict(entry.inputs))
    for n, value in zip(scatters, got, strict=True):
        assert value.shape[0] <= bounds[n.input[2]][0]
        assert all(a <= b for a, b in zip(value.shape, bounds[n.input[2]], strict=True))


@pytest.mark.parametrize("reduction", ["none", "add", "max"])
def test_without_sizes_the_report_says_where_the_lowering_would_win(reduction):
    """Symbolic sizes: no estimate, auto lowers (as before), and the report gives the size at
    which DeviceModel's two estimates cross — checked here with the model's own formulas on
    either side of it — and the CLI prints it."""
    m = elements_model(["rows", "cols"], ["rows", "cols"], 1, reduction, np.float32)
    node = convert(m, "dml", strategy="lower" if reduction == "none" else "auto")
    c = node.report.nodes[0].cost
    low, cpu = c["lowered"], c["cpu"]
    n = low["wins_above_elements"]
    assert n > 0 and "estimate_us" not in low

    def lowered_us(k):
        return cost.DEVICE.device_us(
            low["kernels"], low["passes"], 4 * k, low["copies"]
        )

    def cpu_us(k):
        return cost.DEVICE.cpu_us(k, cpu["copies"], 3 * 4 * k)

    assert lowered_us(n) <= cpu_us(n) and lowered_us(n - 1) > cpu_us(n - 1)


def test_the_cli_prints_kernels_estimates_and_the_crossover(tmp_path):
    import onnx

    src, out = tmp_path / "m.onnx", tmp_path / "o.onnx"
    onnx.save(_symbolic_scatter("add"), src)
    plain = _convert_cli(src, out, check=True).stdout
    kernels = cost.SCATTER_KERNELS["add"][1]
    assert f"lowered {kernels} kernels" in plain
    assert "faster than the CPU path above about" in plain
    out.unlink()
    hinted = _convert_cli(src, out, "--input-shape", "data=64,64", check=True).stdout
    assert "cpu 1 kernel, 1 passes, 3 copies, about" in hinted, hinted


def test_sizes_onnx_runtime_cannot_infer_leave_no_file_behind(tmp_path, monkeypatch):
    """ORT's `SymbolicShapeInference.infer_shapes` saves `sym_shape_infer_temp.onnx` in the
    working directory when it cannot infer every shape; pyg_global_mean_pool at its own sizes
    is such a model. convert asks ORT's inference but writes nothing there."""
    from tests.real_models import REAL_MODELS

    entry = next(r for r in REAL_MODELS if r.name == "pyg_global_mean_pool")
    monkeypatch.chdir(tmp_path)
    shapes = {k: tuple(v.shape) for k, v in entry.inputs.items()}
    result = convert(entry.load(), "dml", input_shapes=shapes)
    assert result.report.nodes
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("opset,kind", [(17, "none_sorted"), (18, "none")])
def test_webgpu_report_weighs_the_graph_its_opset_gets(opset, kind):
    """A scatter without reduction on webgpu: from opset 18 the winners' max scatter, before it
    the sort (scatter_clean.last_writes): the report's lowered kernels are that graph's."""
    model = elements_model([300, 300], [300, 300], 1, "none", np.float32, opset=opset)
    report = convert(model, "webgpu", strategy="lower", with_inspect=False).report
    (node,) = [n for n in report.nodes if n.op_type == "ScatterElements"]
    assert node.cost["lowered"]["kernels"] == cost.WEBGPU_CLEAN_SCATTER_KERNELS[kind][0]


def _scan_model(op: str, dtype, dims: list):
    """One CumProd (the project's domain, opset 21) or CumSum (opset 18) along axis 1."""
    from onnx import helper, numpy_helper

    from ort_dml_ops import DOMAIN

    custom = op == "CumProd"
    t = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    node = helper.make_node(op, ["x", "axis"], ["y"], domain=DOMAIN if custom else "")
    graph = helper.make_graph(
        [node],
        "scan",
        [helper.make_tensor_value_info("x", t, dims)],
        [helper.make_tensor_value_info("y", t, dims)],
        [numpy_helper.from_array(np.array(1, np.int64), "axis")],
    )
    imports = [helper.make_opsetid("", 21 if custom else 18)]
    if custom:
        imports.append(helper.make_opsetid(DOMAIN, 1))
    return helper.make_model(graph, opset_imports=imports, ir_version=10)


@pytest.mark.parametrize(
    "op,target,dtype,dims,feed,layout",
    [
        ("CumProd", "dml", np.float32, [1000, 1000], (1000, 1000), "blocked"),
        ("CumProd", "dml", np.float32, [300, 300], (300, 300), "doubling, static"),
        ("CumProd", "dml", np.float32, [4, 100_000], (4, 100_000), "doubling, static"),
        ("CumProd", "dml", np.float32, ["b", 1000], (4, 1000), "blocked"),
        ("CumProd", "dml", np.float32, ["a", "b"], (1000, 1000), "masked"),
        ("CumProd", "dml", np.int32, [4, "n"], (4, 250_000), "radix"),
        ("CumProd", "dml", np.int32, ["a", "b"], (4, 250_000), "doubling"),
        ("CumSum", "webgpu", np.float32, [1000, 1000], (1000, 1000), "blocked"),
        ("CumSum", "webgpu", np.float32, ["a", "b"], (1000, 1000), "masked"),
        ("CumSum", "webgpu", np.int32, [4, "n"], (4, 250_000), "radix"),
        ("CumSum", "webgpu", np.int32, ["a", "b"], (4, 250_000), "doubling"),
        ("CumSum", "dml", np.float64, [1000, 1000], (1000, 1000), "cast"),
    ],
)
def test_scan_figures_are_what_the_lowered_graph_writes(
    op, target, dtype, dims, feed, layout
):
    """The report's kernels and passes for a lowered scan (cost._scan_figures) are those of the
    layout the rules emit: the kernels `inspect` places on the target EP, the bytes ORT's
    kernels write (its profiler, bench/passes.py; views apart) ÷ the output's — exactly for a
    static layout, at the measured size for a run-time one (the figure of a masked scan falls
    with the axis length, cost.MASKED_SCAN_PASSES). The report used 7.5 passes for every
    layout and 18 / 30 / 62 kernels for every CumProd by the sizes' being static or not."""
    from ort_dml_ops.bench import budget
    from ort_dml_ops.bench.passes import count_passes

    model = _scan_model(op, dtype, dims)
    result = convert(model, target, strategy="lower")
    (rep,) = result.report.nodes
    assert rep.action in ("lowered", "cast"), rep.reason
    lowered = rep.cost["lowered"]
    assert lowered["kernels"] == budget.count_kernels(result.model, target).kernels
    rng = np.random.default_rng(0)
    if np.issubdtype(dtype, np.floating):
        x = (1 + rng.standard_normal(feed) * 1e-3).astype(dtype)
    else:
        x = rng.integers(-3, 4, feed).astype(dtype)
    measured = count_passes(result.model, {"x": x}).passes(x.nbytes, views=False)
    assert lowered["passes"] == pytest.approx(measured, abs=0.15), layout


def _topk_scatter(n: int | None):
    """ScatterElements along axis 1 at the indices of a TopK of all n along that axis (a logits
    processor's sort, scattered back): positions the graph proves distinct. `n` None: every
    dim symbolic."""
    from onnx import TensorProto, helper

    dims: list = ["a", "b"] if n is None else [n, n]
    nodes = [
        helper.make_node("TopK", ["x", "k"], ["v", "i"], axis=1),
        helper.make_node("ScatterElements", ["data", "i", "upd"], ["y"], axis=1),
    ]
    inits = []
    if n is None:  # k: the axis's run-time length
        nodes.insert(0, helper.make_node("Shape", ["x"], ["k"], start=1))
    else:
        inits.append(helper.make_tensor("k", TensorProto.INT64, [1], [n]))
    inputs = [
        helper.make_tensor_value_info(name, TensorProto.FLOAT, dims)
        for name in ("x", "data", "upd")
    ]
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, dims)
    graph = helper.make_graph(nodes, "topk_scatter", inputs, [y], inits)
    return helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=10
    )


@pytest.mark.parametrize("symbolic", [False, True], ids=["static", "symbolic"])
def test_a_unique_write_is_priced_as_the_unsorted_graph_it_is(symbolic):
    """Without a reduction at positions the graph proves distinct (scatter.distinct_positions)
    the lowering sorts nothing: the report prices it so (cost.SCATTER_KERNELS / SCATTER_PASSES
    "none_unique"), not as the sorted write of 19 / 25 kernels. Kernels: what `inspect` places
    on the DML EP at 300 × 300; passes: what ORT's kernels write at 1000 × 1000 (its profiler,
    views apart), less the TopK's own values and indices (3 passes)."""
    from ort_dml_ops.bench import budget
    from ort_dml_ops.bench.passes import count_passes

    model = _topk_scatter(None if symbolic else 300)
    result = convert(model, "dml", strategy="lower")
    (rep,) = [r for r in result.report.nodes if r.op_type == "ScatterElements"]
    assert rep.action == "lowered", rep.reason
    added = (
        budget.count_kernels(result.model, "dml").kernels
        - budget.count_kernels(model, "dml").kernels
    )
    figures = cost.SCATTER_KERNELS["none_unique"], cost.SCATTER_PASSES["none_unique"]
    assert rep.cost["lowered"]["kernels"] == added == figures[0][int(symbolic)]
    n = 1000
    big = convert(_topk_scatter(None if symbolic else n), "dml", strategy="lower")
    rng = np.random.default_rng(0)
    feeds = {
        k: rng.normal(size=(n, n)).astype(np.float32) for k in ("x", "data", "upd")
    }
    measured = count_passes(big.model, feeds).passes(n * n * 4, views=False) - 3.0
    assert measured == pytest.approx(figures[1][int(symbolic)], abs=0.06)
    (big_rep,) = [r for r in big.report.nodes if r.op_type == "ScatterElements"]
    assert big_rep.cost["lowered"]["passes"] == figures[1][int(symbolic)]
