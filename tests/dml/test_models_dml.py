"""Real models on the real DirectML EP, run as a user runs them: ORT's default session options
(graph optimizations on, DML graph fusion on), the original model and the model converted with
`ort_dml_ops.convert(model, target="dml")`.

Models: the zoo (ort_dml_ops/data/zoo) and, once it exists, the real-export corpus
(`tests/real_models.py`: models/real/<name>/, torch exports with torch's outputs). Without that
module the parametrization is the zoo alone (no skip).

Evidence is ONNX Runtime's own: where each node ran comes from the session's assignment record
(`session.record_ep_graph_assignment_info`, `get_provider_graph_assignment_info()`), the copies
from the profile (`*_kernel_time` events of Memcpy kernels); outputs are compared with the
model's expected outputs (numpy for the zoo, torch for real exports), never with the lane.

One `run_cases` batch for the module (conftest's `lane_results`), DML_LANE_SESSIONS sessions per
guest process.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from dml_lane.driver import CPU, DML, Case
from ort_dml_ops import DOMAIN, inspect, zoo
from ort_dml_ops.conversion import convert

# an exhaustive sweep (every zoo and real-export model, original and converted, run on the lane): `make test-full`
pytestmark = [pytest.mark.dml, pytest.mark.full]

#: the ops convert(target="dml") exists for: none of them may stay on the CPU EP. Prefixes, so
#: that the project's fallback kernels (op types such as CumProd_float32) count too.
FAMILY = ("CumSum", "CumProd", "Scatter")
#: exports ORT's DML EP cannot run as exported (measured on the lane): the TorchScript
#: scatter_reduce wraps its scatter in If(rank == 0) pairs and declares the second If's
#: else-branch output (an Identity of the rank-2 result) and the graph output as rank 1; the DML
#: EP fails at run in that Identity (MLOperatorAuthorImpl.cpp(2844), 80070057). convert folds the
#: Ifs (their conditions follow from the declared ranks, converter/rules/fold_if.py) and repairs the
#: output declaration, so the converted model is held to the same strict test as every other.
ORIGINAL_CANNOT_RUN = {
    "real/pyg_scatter_max_torchscript",
    "real/scatter_reduce_torchscript",
}


def _guards(model) -> int:
    return sum(n.name.endswith("/IndexOrSizeOutOfRange") for n in model.graph.node)


AS_USERS_RUN = {"graph_optimization_level": "ORT_ENABLE_ALL"}  # ORT's default


@dataclass
class Entry:
    name: str
    source: str  # "zoo" | "real"
    model: Any  # onnx.ModelProto
    inputs: dict
    compare: Callable[[list], list[str]]  # outputs in graph order -> problems
    #: ORT's own limitation on the unconverted model (substring of its error), recorded in the zoo
    native_error: str | None = None


def entries() -> list[Entry]:
    out = [
        Entry(m.name, "zoo", m.load_model(), m.inputs(), m.compare, m.native_cpu_error)
        for m in zoo.models()
    ]
    if importlib.util.find_spec("tests.real_models") is not None:
        from tests.real_models import REAL_MODELS

        # compare(): against torch's outputs, or where the exporter wrote a model that computes
        # something else, against an independent computation of what it wrote (its `reference`)
        out += [
            Entry(
                rm.name,
                "real",
                rm.load(),
                rm.inputs,
                rm.compare,
                rm.meta.get("ort_cpu_error"),
            )
            for rm in REAL_MODELS
        ]
    return out


def _uses_domain(model) -> bool:
    return any(i.domain == DOMAIN for i in model.opset_import)


CONVERTED: dict = {}
#: models that convert's auto strategy moves to opset 17 (rules/opset.py): their scatters
#: without a reduction then run on the DML EP's own kernel, which these cases run
MOVED_TO_17: dict = {}


def _build():
    """Cases `<source>/<name>:original|converted`; a model that uses the project's domain (the
    original CumProd, or a fallback op left by convert) is run through ort_dml_ops's session."""
    cases, meta = [], {}
    for e in entries():
        key = f"{e.source}/{e.name}"  # the zoo and the corpus may share a name
        # lower: every lowering applied (auto keeps small scatters on the CPU kernel, by cost)
        converted = convert(e.model, "dml", strategy="lower").model
        CONVERTED[key] = converted
        for version, model in (("original", e.model), ("converted", converted)):
            cases.append(
                Case(
                    f"{key}:{version}",
                    model,
                    e.inputs,
                    use_fallback=_uses_domain(model),
                    session_options=AS_USERS_RUN,
                )
            )
        auto = convert(e.model, "dml", strategy="auto")
        if auto.report.opset["changed"] and auto.report.opset["to"] == 17:
            MOVED_TO_17[key] = auto.model
            cases.append(
                Case(
                    f"{key}:auto",
                    auto.model,
                    e.inputs,
                    use_fallback=_uses_domain(auto.model),
                    session_options=AS_USERS_RUN,
                )
            )
        meta[key] = e
    return cases, meta


LANE_CASES, ENTRIES = _build()


def _cpu_nodes(r) -> list[tuple[str, str]]:
    """(op_type, name) of the nodes ORT's record puts on the CPU EP."""
    return sorted((op, name) for ep, name, op, _ in r.assignment if ep == CPU)


def _summary(r) -> str:
    on = {}
    for ep, *_ in r.assignment:
        on[ep] = on.get(ep, 0) + 1
    where = ", ".join(
        f"{n} on {ep.replace('ExecutionProvider', '')}" for ep, n in sorted(on.items())
    )
    return f"{where}; {len(r.memcpy)} Memcpy; fused partitions {len(r.fused)}"


@pytest.mark.parametrize("name", list(ENTRIES))
def test_converted_model_runs_on_dml(name, lane_results):
    e, r = ENTRIES[name], lane_results[f"{name}:converted"]
    assert r.ok, f"{name}: {r.stage}: {r.error}"
    assert r.providers[0] == DML, r.providers
    assert r.assignment, "ORT recorded no assignment"
    on_cpu = [(op, n) for op, n in _cpu_nodes(r) if op.startswith(FAMILY)]
    assert not on_cpu, f"{name}: CumSum/CumProd/Scatter nodes on the CPU EP: {on_cpu}"
    problems = e.compare(r.outputs)
    assert not problems, f"{name} ({_summary(r)}):\n" + "\n".join(problems)
    # the only copies conversion adds: each lowered scatter's index guard hands one flag to the
    # host (two tiny copies where shapes are symbolic: the flag, and the 0/1-element tensor whose
    # Shape the host reads); --no-check-indices drops them
    guards = _guards(CONVERTED[name])
    if e.source == "zoo":
        assert len(r.memcpy) <= guards, (
            f"{name}: copies {r.memcpy} ({_summary(r)}; CPU nodes {_cpu_nodes(r)})"
        )
    else:  # a real export may copy for its own shape ops
        before = lane_results[f"{name}:original"]
        if before.ok:
            assert len(r.memcpy) <= len(before.memcpy) + 2 * guards, (
                r.memcpy,
                before.memcpy,
            )


@pytest.mark.parametrize("name", sorted(MOVED_TO_17))
def test_auto_at_opset_17_runs_its_scatters_on_the_dml_kernel(name, lane_results):
    """A model auto moved to opset 17: it runs, every family node on the DML EP (the scatters
    without a reduction on the EP's own kernel), outputs as torch's / the reference's."""
    e, r = ENTRIES[name], lane_results[f"{name}:auto"]
    assert r.ok, f"{name}: {r.stage}: {r.error}"
    on_cpu = [(op, n) for op, n in _cpu_nodes(r) if op.startswith(FAMILY)]
    assert not on_cpu, f"{name}: CumSum/CumProd/Scatter nodes on the CPU EP: {on_cpu}"
    problems = e.compare(r.outputs)
    assert not problems, f"{name} ({_summary(r)}):\n" + "\n".join(problems)


def test_the_corpus_has_models_auto_moves_to_17():
    assert len(MOVED_TO_17) >= 4, sorted(MOVED_TO_17)


@pytest.mark.parametrize("name", list(ENTRIES))
def test_original_model_on_dml_matches_inspect(name, lane_results):
    """The unconverted model: it runs (or fails with the ORT limitation the zoo records), and the
    nodes ORT puts on the CPU EP are the ones `inspect` predicts for ORT's default options."""
    e, r = ENTRIES[name], lane_results[f"{name}:original"]
    if name in ORIGINAL_CANNOT_RUN:
        assert not r.ok and "MLOperatorAuthorImpl" in (r.error or ""), (
            r.stage,
            r.error,
        )
        return
    predicted = inspect(e.model, "dml").to_dict()
    creation_failures = [
        n["name"]
        for n in predicted["nodes"]
        if "fails to create this kernel" in n["reason"]
    ]
    if not r.ok and creation_failures:
        # the DML EP refuses Reshape(allowzero=1), which inspect names and convert removes
        assert "MLOperatorAuthorImpl" in (r.error or "") or "8007" in (r.error or ""), (
            r.stage,
            r.error,
        )
        return
    assert not creation_failures, (
        f"{name}: inspect predicted a failure, ORT ran it: {creation_failures}"
    )
    if not r.ok:
        assert e.native_error and e.native_error in (r.error or ""), (
            f"{name}: {r.stage}: {r.error}"
        )
        assert r.stage == "run", r.stage
    else:
        problems = e.compare(r.outputs)
        assert not problems, f"{name} ({_summary(r)}):\n" + "\n".join(problems)
    assert r.providers[0] == DML, r.providers
    originals = {n.name for n in e.model.graph.node}
    real_cpu = sorted(n for _, n in _cpu_nodes(r) if n in originals)
    want_cpu = sorted(n["name"] for n in predicted["nodes"] if n["provider"] == CPU)
    assert real_cpu == want_cpu, (
        f"{name}: ORT put {real_cpu} on the CPU EP, inspect predicted {want_cpu}"
    )
