"""Issue 32 item 1 on ONNX Runtime's WebGPU plugin EP (lavapipe here), read from ORT's own
assignment record: after `convert --target webgpu`, every CumSum / CumProd / Scatter node of
every real export runs on the plugin (the int32 dtype rules of rules/narrow.py take the bool
masks, int64 position ids and int64 expert counts the plugin has no kernel for) — except where
`auto` keeps one beside CPU neighbours because the move would copy more a run (issue 28 item
2: no model copies more after convert; `rewrite._cast_copies_more`), which the plugin's own
profile confirms — and the outputs are torch's (tests/real_models.py). The rules' single-op
models are exact on the plugin against ORT's CPU kernel on the original."""

from __future__ import annotations

import numpy as np
import pytest

from ort_dml_ops.bench import webgpu as W
from ort_dml_ops.conversion import convert

from ..converter.rules._util import run_cpu
from ..converter.rules.test_narrow import _counts_model, _cumsum_of_cast
from ..real_models import NAMES, get
from .conftest import placement, webgpu_session

pytestmark = pytest.mark.webgpu
FAMILY = ("CumSum", "CumProd", "ScatterElements", "ScatterND", "Scatter")
WEBGPU = "WebGpuExecutionProvider"


def _family_placement(session) -> dict:
    return {
        f"{sg.ep_name}:{n.op_type}:{n.name}": sg.ep_name
        for sg in session.get_provider_graph_assignment_info()
        for n in sg.get_nodes()
        if n.op_type in FAMILY
    }


@pytest.mark.parametrize("name", NAMES)
def test_every_family_node_of_a_real_export_runs_on_webgpu(name, webgpu_lane):
    m = get(name)
    original = m.load()
    result = convert(original, "webgpu")
    session = webgpu_session(result.model)
    assert m.compare(session.run(None, m.inputs)) == []
    # (a CumProd lowered to its scan leaves no family node: nothing of it is on the CPU EP)
    kept = {
        r.name
        for r in result.report.nodes
        if any(f["code"] == "cpu-path-cheaper" for f in r.refusals)
    }
    ran = _family_placement(session)
    assert [
        k for k, ep in ran.items() if ep != WEBGPU and k.split(":")[2] not in kept
    ] == []
    if kept:  # kept for its copies: the whole model copies no more than the original
        copies, _ = W._copies(result.model, False, m.inputs)
        before, _ = W._copies(original, False, m.inputs)
        assert copies <= before, (copies, before)


def test_position_ids_on_webgpu_exact(webgpu_lane):
    from onnx import TensorProto as T

    m = _cumsum_of_cast(T.BOOL, "n")
    r = convert(m, "webgpu")
    x = np.random.default_rng(1).integers(0, 2, [2, 500]).astype(bool)
    session = webgpu_session(r.model)
    np.testing.assert_array_equal(
        session.run(None, {"x": x})[0], run_cpu(m, {"x": x})[0]
    )
    ran = placement(session)
    assert [ep for n, ep in ran.items() if n.endswith("CumSum")] == [WEBGPU]


@pytest.mark.parametrize("reduction", ["add", "max", "none"])
def test_expert_counts_on_webgpu_exact(reduction, webgpu_lane):
    m = _counts_model(reduction, "ConstantOfShape")
    # forced: its Expand of int64 ones runs on the CPU, where `auto` keeps the node
    r = convert(m, "webgpu", strategy="lower")
    experts = (
        np.array([3, 1, 7, 0])
        if reduction == "none"
        else np.array([3, 1, 3, 7, 0, 3, 1])
    )
    session = webgpu_session(r.model)
    got = session.run(None, {"experts": experts})[0]
    np.testing.assert_array_equal(got, run_cpu(m, {"experts": experts})[0])
    assert set(_family_placement(session).values()) == {WEBGPU}
