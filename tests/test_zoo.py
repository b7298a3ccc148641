"""Model-level tests: every zoo model x strategy (native, lower, fallback, auto) x available EP
(CPU always; CUDA where present; DML in tests/dml/test_models_dml.py) reproduces the expected
outputs (computed by tools/build_zoo.py's own numpy implementation) within the model's
tolerance, and `inspect`'s summary of the converted model is as pinned below.
"""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from ort_dml_ops import DOMAIN, convert, inspect, zoo
from ort_dml_ops.modelio import MAX_IR_VERSION
from ort_dml_ops.session import InferenceSession

ROOT = Path(__file__).resolve().parent.parent
STRATEGIES = ("native", "lower", "fallback", "auto")
EPS = ["cpu"] + (
    ["cuda"] if "CUDAExecutionProvider" in ort.get_available_providers() else []
)
NAMES = zoo.names()

#: inspect(target="dml") summary of each UNCONVERTED model: (gpu_nodes, cpu_nodes, copies).
#: native leaves the model as it is, so this is also the native summary.
BEFORE = {  # each node and copy as ORT itself recorded them on the DML lane: tests/data/placement/truth.json
    "position_ids": (
        4,
        0,
        0,
    ),  # int64 CumSum: a DML kernel (the output Identity is eliminated)
    "nucleus_sampling": (
        8,
        1,
        3,
    ),  # ScatterElements at opset 18: no DML kernel (since-version match)
    "ddpm_step": (15, 1, 2),  # DOMAIN::CumProd: custom op, CPU
    "survival_curve": (
        6,
        1,
        2,
    ),  # float16 CumProd: the fallback session's two Casts run on DML
    "discounted_return": (4, 1, 2),
    "bincount": (
        4,
        1,
        1,
    ),  # reduction add: QueryScatter refuses; it writes the graph output
    "segment_max": (2, 1, 1),  # reduction max
    "moe_combine": (3, 1, 2),
    "linear_recurrence": (8, 1, 2),
    "scatter_reduce_amax": (2, 2, 1),  # both scatters at opset 18
}
#: strategy fallback: (gpu_nodes, cpu_nodes, copies) — every family node on the Python fallback (CPU).
FALLBACK = {
    "position_ids": (3, 1, 2),
    "nucleus_sampling": (11, 2, 5),  # float16: the fallback session's Casts run on DML
    "ddpm_step": (15, 1, 2),
    "survival_curve": (6, 1, 2),
    "discounted_return": (3, 2, 4),
    "bincount": (4, 1, 1),
    "segment_max": (4, 1, 3),
    "moe_combine": (5, 1, 3),
    "linear_recurrence": (7, 2, 4),
    "scatter_reduce_amax": (2, 2, 1),
}


def _triple(summary):
    return summary["gpu_nodes"], summary["cpu_nodes"], summary["copies"]


@pytest.fixture(scope="module")
def converted():
    """{(name, strategy): convert result}, each conversion done once."""
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for m in zoo.models():
            for s in STRATEGIES:
                out[m.name, s] = convert(m.load_model(), "dml", strategy=s)
    return out


# ------------------------------------------------------------------------------ the zoo itself


def test_zoo_covers_the_required_uses():
    models = zoo.models()
    assert len(models) >= 8
    assert set(BEFORE) == set(FALLBACK) == set(NAMES)
    fams = {f for m in models for f in m.families}
    assert fams == {"CumSum", "CumProd", "ScatterElements"}
    for fam in fams:  # at least one float16 model per op family
        assert any(fam in m.families and "float16" in m.dtypes for m in models), fam
    assert any(m.opset >= 18 and "ScatterElements" in m.families for m in models)
    assert any({"CumSum", "CumProd"} <= set(m.families) for m in models)
    scatter_reduce = zoo.get("scatter_reduce_amax").load_model()
    ops = [
        (n.op_type, {a.name: a for a in n.attribute}) for n in scatter_reduce.graph.node
    ]
    reductions = [
        a["reduction"].s.decode() if "reduction" in a else "none"
        for op, a in ops
        if op == "ScatterElements"
    ]
    assert reductions == [
        "none",
        "max",
    ]  # include_self=False: clear the targets, then reduce


@pytest.mark.parametrize("name", NAMES)
def test_zoo_files_are_valid_small_and_consistent(name):
    m = zoo.get(name)
    model = m.load_model()
    onnx.checker.check_model(model, full_check=True)
    assert model.ir_version <= MAX_IR_VERSION
    assert (
        [i.name for i in model.graph.input] == list(m.input_names) == list(m.inputs())
    )
    assert (
        [o.name for o in model.graph.output]
        == list(m.output_names)
        == list(m.expected())
    )
    for vi in list(model.graph.input) + list(model.graph.output):
        dims = vi.type.tensor_type.shape.dim
        assert all(d.HasField("dim_value") for d in dims) == m.static_shapes, vi.name
    assert len(m.model_bytes()) < 64 * 1024
    assert m.rtol >= 0 and m.atol >= 0 and m.why_tolerance


def test_zoo_total_size_is_small():
    folder = ROOT / "ort_dml_ops" / "data" / "zoo"
    assert (
        sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
        < 2 * 1024 * 1024
    )


def test_zoo_is_rebuilt_byte_for_byte_by_its_tool():
    proc = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "build_zoo.py"), "--check"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_compare_reports_a_mismatch():
    m = zoo.get("ddpm_step")
    want = m.expected()
    assert m.matches(want)
    bad = dict(want)
    bad["alphas_cumprod"] = want["alphas_cumprod"] * np.float32(1.01)
    (problem,) = m.compare(bad)
    assert problem.startswith("alphas_cumprod: ") and "values off" in problem
    assert m.compare([want["x_prev_mean"]]) == ["alphas_cumprod: missing"]


def test_unknown_zoo_model_is_a_key_error():
    with pytest.raises(KeyError, match="no zoo model named 'nope'"):
        zoo.get("nope")


# ------------------------------------------------------------------------------ model x strategy x EP


def _run(model, feeds, ep):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        so = ort.SessionOptions()
        so.log_severity_level = 4
        session = InferenceSession(model, providers=[ep], sess_options=so)
    return session.get_providers(), session.run(None, feeds)


@pytest.mark.parametrize("ep", EPS)
@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("name", NAMES)
def test_zoo_model_outputs(name, strategy, ep, converted):
    m = zoo.get(name)
    model = converted[name, strategy].model
    known = m.native_cpu_error if (strategy == "native" and ep == "cpu") else None
    if known:
        # ONNX Runtime itself cannot run the unconverted model on its CPU EP: pin the failure.
        with pytest.raises(
            Exception,
            match=known.replace("(", r"\(").replace(")", r"\)").replace(".", r"\."),
        ):
            _run(model, m.inputs(), ep)
        return
    providers, outputs = _run(model, m.inputs(), ep)
    assert (
        providers[0]
        == {"cpu": "CPUExecutionProvider", "cuda": "CUDAExecutionProvider"}[ep]
    )
    problems = m.compare(outputs)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("name", NAMES)
def test_zoo_model_placement_after_convert(name, strategy, converted):
    m = zoo.get(name)
    result = converted[name, strategy]
    summary = _triple(result.report.inspect.to_dict()["summary"])
    assert (
        _triple(inspect(result.model, "dml").to_dict()["summary"]) == summary
    )  # the embedded report is inspect's
    assert _triple(inspect(m.load_model(), "dml").to_dict()["summary"]) == BEFORE[name]
    if strategy == "native":
        assert summary == BEFORE[name]
        assert result.model.SerializeToString() == m.load_model().SerializeToString()
    elif strategy == "fallback":
        assert summary == FALLBACK[name]
        fam_nodes = [
            n
            for n in result.model.graph.node
            if n.op_type in ("CumSum", "CumProd", "ScatterElements")
        ]
        assert fam_nodes and all(n.domain == DOMAIN for n in fam_nodes)
    elif strategy == "auto" and _kept_for_cost(result):
        # auto kept a scatter on ORT's CPU kernel: faster at the zoo's sizes (rules/cost.py);
        # each such node says so, with both estimates, and the rest is lower's placement
        for node in result.report.nodes:
            if node.action != "cpu":
                continue
            assert [r["code"] for r in node.refusals] == ["cpu-path-cheaper"], node
            assert node.cost["cpu"]["estimate_us"] < node.cost["lowered"]["estimate_us"]
    else:  # lower, auto: every node on the DML GPU (all zoo models qualify, static or not)
        gpu, _, copies = summary
        # the only copy: the graph's one run-time index guard hands one flag to the host, where
        # scalar nodes (Equal, and a Where per output shape) pick the outputs' shapes
        guards = sum(
            n.name.endswith("/IndexOrSizeOutOfRange") for n in result.model.graph.node
        )
        assert (guards > 0) == (copies > 0) and copies <= 1, result.report.to_dict()[
            "inspect"
        ]["nodes"]
        assert gpu >= BEFORE[name][0] + BEFORE[name][1]
        nodes = result.report.inspect.to_dict()["nodes"]
        host = [n for n in nodes if n["provider"] not in ("DmlExecutionProvider", None)]
        assert all(
            n["name"].split("/")[-1].split("_")[0] in ("Equal", "Where") for n in host
        ), host


def _kept_for_cost(result) -> bool:
    return any(n.action == "cpu" for n in result.report.nodes)


def test_auto_and_lower_agree_on_the_zoo_but_for_what_auto_keeps_for_cost(converted):
    """Where auto lowers every node it writes lower's model byte for byte; where it keeps a
    scatter on ORT's CPU kernel (its estimate: faster at the zoo's sizes), or moves the model
    to opset 17 where the DML EP runs its scatter without a reduction itself, only then."""
    kept, native = [], []
    for name in NAMES:
        a, b = converted[name, "auto"], converted[name, "lower"]
        if a.report.opset["to"] == 17 != a.report.opset["from"]:
            native.append(name)
            scatters = [n for n in a.report.nodes if n.op_type.startswith("Scatter")]
            assert scatters and all(n.action == "native" for n in scatters)
        elif _kept_for_cost(a):
            kept.append(name)
            assert all(
                n.action in ("native", "cpu", "lowered", "cast") for n in a.report.nodes
            )
        else:
            assert a.model.SerializeToString() == b.model.SerializeToString(), name
    # the zoo's scatters are small: those auto keeps on the CPU (measured against DeviceModel)
    assert set(kept) == {
        "nucleus_sampling",
        "bincount",
        "segment_max",
        "scatter_reduce_amax",
    }
    # nucleus_sampling's scatter: indices whose length on the axis the graph does not bound
    assert native == []


@pytest.mark.parametrize("name", NAMES)
def test_zoo_converted_without_index_guard_has_no_copy(name):
    result = convert(
        zoo.get(name).load_model(), "dml", strategy="lower", check_indices=False
    )
    assert not any(
        n.name.endswith("/IndexOrSizeOutOfRange") for n in result.model.graph.node
    )
    _, cpu, copies = _triple(result.report.inspect.to_dict()["summary"])
    assert (cpu, copies) == (0, 0), result.report.to_dict()["inspect"]["nodes"]
