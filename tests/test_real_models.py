"""Model-level tests on the real-export corpus (models/real/, docs/real-models.md): models that
torch.onnx wrote from public library code (torch_geometric, transformers, torch), with the
dynamic axes a user declares — symbolic and data-dependent shapes at the scatter nodes.

Per model: (a) the stored model runs on ONNX Runtime's CPU EP and reproduces torch's outputs
(exact for integers; the tolerance of models/real/index.json for floats) — or, where the
exporter wrote a wrong model, what that model computes, computed independently in numpy by
tools/export_models.py; (b) the same after `convert(model, "dml", strategy=s)` for every
strategy; (c) the CumSum/CumProd/Scatter* nodes that `inspect --target dml` still places on the
CPU after `auto` and `lower` are EXACTLY those of KNOWN_CPU_FAMILY_NODES. Issue 15 is done when
that list is empty: a model whose nodes start reaching the GPU makes the test fail, and the
list is shrunk by the change that fixed it.
"""

from __future__ import annotations

import re
import warnings

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from ort_dml_ops import DOMAIN, convert, inspect
from ort_dml_ops.domain_schemas import registered
from ort_dml_ops.modelio import MAX_IR_VERSION
from ort_dml_ops.session import InferenceSession
from tests.real_models import CORPUS, NAMES, REAL_MODELS, get

STRATEGIES = ("auto", "lower", "fallback", "native")
FAMILY_OPS = ("CumSum", "CumProd", "ScatterElements", "ScatterND", "Scatter")

#: the models whose exporter (or the library's export path) writes a model that computes
#: something else than torch; index.json says what, docs/real-models.md explains
EXPORTER_WRONG = {
    "scatter_reduce_mean",
    "index_add_torchscript",
    "index_put_torchscript",
    "pyg_scatter_max_torchscript",
}

#: Family nodes that `inspect(convert(model, "dml", strategy=s).model, "dml")` places on the CPU
#: today: {(model, strategy): {original node name: (op, convert's action, why it was not lowered)}}.
#: Empty: the last two (TorchScript's scatter_reduce exports, whose scatter inputs sit behind
#: `If(rank == 0)`) reach the GPU since convert folds an If its declared shapes decide
#: (ort_dml_ops/converter/rules/fold_if.py).
KNOWN_CPU_FAMILY_NODES: dict = {}

#: strategy auto: models whose converted form uses the Python fallback (no longer loads in plain
#: onnxruntime). None: a node no rule lowers keeps ORT's own CPU kernel (issue 15 item 3).
AUTO_NEEDS_FALLBACK_SESSION: list[str] = []


def _session(model, *, plain: bool):
    so = ort.SessionOptions()
    so.log_severity_level = 4
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if plain:
            return ort.InferenceSession(
                model.SerializeToString(), so, providers=["CPUExecutionProvider"]
            )
        return InferenceSession(
            model, providers=["CPUExecutionProvider"], sess_options=so
        )


def _run(model, feeds, *, plain: bool) -> dict:
    sess = _session(model, plain=plain)
    return dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds)))


_CONVERTED: dict = {}


def _converted(name: str, strategy: str):
    """convert(model, "dml", strategy) once per pair (the module's tests share it)."""
    if (name, strategy) not in _CONVERTED:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _CONVERTED[name, strategy] = convert(
                get(name).load(), target="dml", strategy=strategy
            )
    return _CONVERTED[name, strategy]


def _family(model: onnx.ModelProto) -> list[onnx.NodeProto]:
    return [n for n in model.graph.node if n.op_type in FAMILY_OPS]


# ------------------------------------------------------------------------------ the corpus itself


def test_corpus_covers_what_issue_15_asks():
    metas = [m.meta for m in REAL_MODELS]
    assert len(metas) >= 12
    exporters = [m["exporter"] for m in metas]
    assert exporters.count("dynamo") > exporters.count("torchscript") >= 3
    sources = " ".join(m["source"] for m in metas)
    for needed in (
        "GCNConv",
        "SAGEConv(aggr='mean')",
        "utils.scatter",
        "global_max_pool",
        "global_mean_pool",
        "TopPLogitsWarper",
        "TopKLogitsWarper",
        "create_position_ids_from_input_ids",
        "RobertaModel",
        "index_add",
        "index_put_",
        "scatter_(",
        "scatter_add_",
        "flip",
        "cumprod",
        "cumsum",
    ):
        assert needed in sources, needed
    for reduce in ("sum", "prod", "amax", "amin", "mean"):
        assert f"scatter_reduce_{reduce}" in NAMES
    families = {op for m in metas for op in m["families"]}
    assert families == {"CumSum", "CumProd", "ScatterElements", "ScatterND"}
    assert any(m["data_dependent"] for m in metas)
    assert {m["name"] for m in metas if m["exporter_wrong"]} == EXPORTER_WRONG


@pytest.mark.parametrize("name", NAMES)
def test_stored_files_are_valid_and_consistent(name):
    m = get(name)
    model = m.load()
    with registered():
        onnx.checker.check_model(model, full_check=True)
    assert (
        model.ir_version <= MAX_IR_VERSION and model.ir_version == m.meta["ir_version"]
    )
    assert {(o.domain or "ai.onnx"): o.version for o in model.opset_import} == m.meta[
        "opset_imports"
    ]
    assert m.meta["opset"] <= 21
    assert (
        [i.name for i in model.graph.input] == list(m.inputs) == list(m.meta["inputs"])
    )
    assert (
        [o.name for o in model.graph.output]
        == list(m.expected)
        == list(m.meta["outputs"])
    )
    assert m.path.stat().st_size < 2 * 1024 * 1024
    for vi in (
        model.graph.input
    ):  # every axis the user declared dynamic is symbolic in the model
        dims = vi.type.tensor_type.shape.dim
        for axis in m.meta["inputs"][vi.name]["dynamic_axes"]:
            assert dims[int(axis)].dim_param and not dims[int(axis)].HasField(
                "dim_value"
            ), (vi.name, axis)
    fam = _family(model)
    assert [n.op_type for n in fam] == [f["op_type"] for f in m.meta["family_nodes"]]
    assert (
        (DOMAIN in m.meta["opset_imports"])
        == m.uses_domain_ops
        == ("cumprod" in m.meta["source"])
    )
    assert (m.path.parent / "exporter_output.npz").exists() == bool(
        m.meta["exporter_wrong"]
    )
    tol = m.meta["tolerance"]
    assert tol["why"] and tol["rtol"] >= 0 and tol["atol"] >= 0


def test_compare_reports_mismatches_exactly_for_ints_and_within_tolerance_for_floats():
    m = get("moe_router")  # float "out" (rtol 1e-5) and int64 "load"
    want = m.expected
    assert m.compare(want) == []
    near = dict(want, out=want["out"] * np.float32(1 + 1e-7))
    assert m.compare(near) == []
    far = dict(want, out=want["out"] * np.float32(1.01))
    (problem,) = m.compare(far)
    assert problem.startswith("out: ") and "values off" in problem
    load = want["load"].copy()
    load[0] += 1
    (problem,) = m.compare(dict(want, load=load))
    assert problem.startswith("load: 1 of 4 values off")
    assert m.compare([want["out"]]) == ["load: missing"]
    assert m.compare(dict(want, load=want["load"].astype(np.int32)))[0].startswith(
        "load: got int32"
    )
    with pytest.raises(KeyError, match="no real-export model named 'nope'"):
        get("nope")


def test_corpus_is_small():
    assert (
        sum(p.stat().st_size for p in CORPUS.rglob("*") if p.is_file())
        < 4 * 1024 * 1024
    )


# ------------------------------------------------------------------------------ (a) as exported


@pytest.mark.parametrize("name", NAMES)
def test_stored_model_reproduces_torch_on_the_cpu_ep(name):
    """Plain onnxruntime where the model has only ONNX ops; ort_dml_ops' session for DOMAIN ops.
    Where ORT's CPU EP has no kernel (float16 scatter-add), pin its error and check the model
    with onnx's ReferenceEvaluator instead."""
    m = get(name)
    if m.meta["ort_cpu_error"]:
        with pytest.raises(Exception, match=re.escape(m.meta["ort_cpu_error"])):
            _run(m.load(), m.inputs, plain=True)
        from onnx.reference import ReferenceEvaluator

        outputs = ReferenceEvaluator(m.load()).run(None, m.inputs)
    else:
        outputs = _run(m.load(), m.inputs, plain=not m.uses_domain_ops)
    # against torch's outputs, or what a wrong export computes ...
    problems = m.compare(outputs)
    assert not problems, "\n".join(problems)
    if m.meta[
        "exporter_wrong"
    ]:  # ... and the export really differs from torch: still wrong
        assert m.compare(outputs, m.expected), (
            "the exporter now writes a right model: update index.json"
        )


def test_exporter_wrong_models_say_what_they_compute():
    for name in EXPORTER_WRONG:
        m = get(name)
        wrong = m.meta["exporter_wrong"]
        assert wrong["note"] and sorted(m.exporter_output) == wrong["outputs"]
        assert any(
            not np.allclose(m.exporter_output[k], m.expected[k])
            for k in m.exporter_output
        )


# ------------------------------------------------------------------------------ (b) converted


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("name", NAMES)
def test_converted_model_reproduces_torch_on_the_cpu_ep(name, strategy):
    m = get(name)
    model = _converted(name, strategy).model
    if (
        strategy == "native" and m.meta["ort_cpu_error"]
    ):  # the export as it is: ORT's own error
        with pytest.raises(Exception, match=re.escape(m.meta["ort_cpu_error"])):
            _run(model, m.inputs, plain=False)
        return
    problems = m.compare(_run(model, m.inputs, plain=False))
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("name", NAMES)
def test_native_leaves_the_export_as_it_is(name):
    got = _converted(name, "native").model
    assert got.SerializeToString() == get(name).load().SerializeToString()


@pytest.mark.parametrize("name", NAMES)
def test_fallback_routes_every_family_node(name):
    """ScatterND included: it runs as the fallback ScatterElements on the flattened data."""
    model = _converted(name, "fallback").model
    assert [n.name for n in _family(model) if n.domain != DOMAIN] == []


# ------------------------------------------------------------------------------ (c) GPU placement


@pytest.mark.parametrize("name", NAMES)
def test_auto_output_loads_in_plain_onnxruntime_unless_known(name):
    model = _converted(name, "auto").model
    uses_fallback = any(n.domain == DOMAIN for n in model.graph.node)
    assert uses_fallback == (name in AUTO_NEEDS_FALLBACK_SESSION)
    if not uses_fallback:
        outputs = _run(model, get(name).inputs, plain=True)
        problems = get(name).compare(outputs)
        assert not problems, "\n".join(problems)


def _cpu_family_nodes(name: str, strategy: str) -> dict:
    result = _converted(name, strategy)
    by_name = {n.name: n for n in result.report.nodes}
    keys = ("the rank of data is unknown", "the rank of indices is unknown")
    found = {}
    for n in inspect(result.model, target="dml").nodes:
        if (
            n.op_type not in FAMILY_OPS
            or n.provider == "DmlExecutionProvider"
            or n.removed_by
        ):
            continue  # on the GPU, or never run (ORT removes it as a duplicate of one that is)
        original = n.name if n.name in by_name else n.name.rsplit("/fallback", 1)[0]
        rep = by_name.get(original)
        why = next(
            (k for k in keys if rep is not None and k in rep.reason),
            rep.reason if rep else "(not in report)",
        )
        found[original] = (n.op_type, rep.action if rep else "?", why)
    return found


def test_family_nodes_left_on_the_cpu_after_convert_are_exactly_the_known_list():
    """Exactly the list above (strategy lower: every lowering the rules can make): a model whose
    nodes start reaching the GPU makes it fail."""
    got = {}
    for name in NAMES:
        for strategy in ("lower",):
            nodes = _cpu_family_nodes(name, strategy)
            if nodes:
                got[name, strategy] = nodes
    gone = sorted(set(KNOWN_CPU_FAMILY_NODES) - set(got))
    assert not gone, f"now on the GPU, shrink KNOWN_CPU_FAMILY_NODES: {gone}"
    assert got == KNOWN_CPU_FAMILY_NODES


def test_auto_leaves_a_family_node_on_the_cpu_only_where_its_estimate_says_so():
    """Strategy auto, told the sizes of the export's own inputs (`input_shapes`, as `convert
    --input-shape` does; most exports declare symbolic dims, where auto has no estimate and
    lowers): a family node it leaves on the CPU is one the cost model found faster there
    (rules/cost.py, DeviceModel), with both estimates in the report."""
    kept = 0
    for name in NAMES:
        m = get(name)
        shapes = {k: tuple(v.shape) for k, v in m.inputs.items()}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = convert(m.load(), target="dml", input_shapes=shapes)
        for rep in result.report.nodes:
            if rep.action != "cpu" or rep.op_type not in FAMILY_OPS:
                continue
            assert [r["code"] for r in rep.refusals] == ["cpu-path-cheaper"], (
                name,
                rep,
            )
            low, cpu = rep.cost["lowered"], rep.cost["cpu"]
            assert cpu["estimate_us"] < low["estimate_us"], (name, rep.cost)
            kept += 1
    assert kept > 0  # the exports' sizes are small: scatters stay on ORT's CPU kernel
