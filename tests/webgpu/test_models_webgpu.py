"""Zoo and real-export models converted for WebGPU, run on ONNX Runtime's WebGPU plugin EP.

For every model: `convert(target="webgpu")` gives the expected outputs on the plugin; no
CumSum / CumProd / Scatter* node runs on the CPU EP except those the convert report says stay
there (and why: data the plugin takes no kernel for, e.g. int64); and `inspect --target webgpu`
agrees with the plugin node for node, before and after convert. Placement is read from ORT's
assignment record (`session.record_ep_graph_assignment_info`), never assumed.

Nodes present in only one of the two lists are ORT's own graph rewrites and are checked by kind:
ORT removes Identity, folds constants and fuses Reshape chains (core/optimizer/
identity_elimination.cc, constant_folding.cc, reshape_fusion.cc) and adds nodes of its own
("*_new_reshape"); the project's InferenceSession adds the fallback's dtype casts (`*ortdmlops*`).
"""

from __future__ import annotations

import numpy as np
import pytest

from ort_dml_ops import inspect, zoo
from ort_dml_ops.conversion import convert

from .conftest import placement, webgpu_session

pytestmark = pytest.mark.webgpu

CPU, WEBGPU = "CPUExecutionProvider", "WebGpuExecutionProvider"
FAMILY = ("CumSum", "CumProd", "ScatterElements", "ScatterND", "Scatter")
#: node kinds ORT's default graph optimizations may remove (see module docstring)
ORT_REMOVES = {
    "Identity",
    "Reshape",
    "Constant",
    "Squeeze",
    "Unsqueeze",
    "Shape",
    "Cast",
    "Expand",
}

try:  # the real-export corpus (tests/real_models.py), once it is on this branch
    from tests.real_models import REAL_MODELS
except ImportError:  # pragma: no cover - depends on the checkout
    REAL_MODELS = []


def _entries():
    out = [pytest.param(("zoo", m.name), id=f"zoo:{m.name}") for m in zoo.models()]
    out += [pytest.param(("real", r.name), id=f"real:{r.name}") for r in REAL_MODELS]
    return out


def _load(kind, name):
    """(model, feeds, compare(outputs) -> list of problems)."""
    if kind == "zoo":
        m = zoo.get(name)
        return m.load_model(), m.inputs(), m.compare
    import onnx

    r = next(r for r in REAL_MODELS if r.name == name)
    meta = getattr(r, "meta", {}) or {}
    rtol, atol = float(meta.get("rtol", 1e-3)), float(meta.get("atol", 1e-4))
    expected = dict(r.expected)

    def compare(outputs):
        bad = []
        for k, want in expected.items():
            got = outputs.get(k)
            if got is None or not np.allclose(
                np.asarray(got, np.float64),
                np.asarray(want, np.float64),
                rtol=rtol,
                atol=atol,
                equal_nan=True,
            ):
                bad.append(k)
        return bad

    return onnx.load(str(r.path)), dict(r.inputs), compare


def _run(model, feeds):
    s = webgpu_session(model)
    outs = s.run(None, feeds)
    return placement(s), dict(zip([o.name for o in s.get_outputs()], outs))


def _agreement(model, where: dict) -> list[str]:
    """Disagreements between inspect(model, "webgpu") and the plugin's record."""
    predicted = inspect(model, "webgpu")
    bad = []
    for n in predicted.nodes:
        if n.name in where:
            if n.provider != where[n.name]:
                bad.append(
                    f"{n.name} ({n.op_type}): inspect says {n.provider}, the plugin ran it on "
                    f"{where[n.name]} ({n.reason})"
                )
        elif n.op_type not in ORT_REMOVES and n.provider is not None:
            bad.append(
                f"{n.name} ({n.op_type}): inspect places it on {n.provider}; ORT did not run it"
            )
    known = {n.name for n in predicted.nodes}
    for name, ep in where.items():
        if name not in known and not ("_new_reshape" in name or "ortdmlops" in name):
            bad.append(f"{name}: run by ORT on {ep}, unknown to inspect")
    return bad


@pytest.mark.parametrize("entry", _entries())
def test_converted_model_runs_on_webgpu_with_expected_outputs(entry, webgpu_lane):
    model, feeds, compare = _load(*entry)
    result = convert(model, "webgpu")
    where, outs = _run(result.model, feeds)
    assert compare(outs) == []
    # the nodes the report says stay on the CPU EP's kernel (the plugin takes no kernel for their data)
    left_on_cpu = {
        r.name
        for r in result.report.nodes
        if r.action == "native" and "stays on the CPU EP" in r.reason
    }
    family_ops = {n.name for n in result.model.graph.node if n.op_type in FAMILY}
    family_on_cpu = {n for n in where if where[n] == CPU and n in family_ops}
    assert family_on_cpu <= left_on_cpu, (
        f"family nodes on the CPU: {sorted(family_on_cpu - left_on_cpu)}"
    )


@pytest.mark.parametrize("stage", ["original", "converted"])
@pytest.mark.parametrize("entry", _entries())
def test_inspect_agrees_with_the_plugin(entry, stage, webgpu_lane):
    model, feeds, _ = _load(*entry)
    if stage == "converted":
        model = convert(model, "webgpu").model
    where, _ = _run(model, feeds)
    assert _agreement(model, where) == []
