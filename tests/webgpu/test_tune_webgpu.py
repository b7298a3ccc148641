"""`tune --provider webgpu` on ONNX Runtime's WebGPU plugin EP (lavapipe here): every model of
the real-export corpus, tuned with its own inputs bound on the device. The choices are whatever
this adapter measures; what is asserted is that each is the measured fastest of the options
that ran, that the tuned model's outputs on the plugin equal torch's (tests/real_models.py),
and that its family nodes run where the report's chosen option ran them (ORT's record)."""

from __future__ import annotations

import pytest

from ort_dml_ops.tuning import tune

from ..real_models import NAMES, get
from ..test_tune import assert_choices_are_fastest, family_count
from .conftest import placement, webgpu_session

pytestmark = pytest.mark.webgpu


@pytest.mark.parametrize("name", NAMES)
def test_tune_real_export_on_webgpu(name, webgpu_lane):
    m = get(name)
    model = m.load()
    result = tune(model, m.inputs, provider="webgpu", repeats=2)
    report = result.report
    assert report["provider"] == "WebGpuExecutionProvider"
    assert report["inputs_on"] == "device" and report["check"] == "ok"
    assert len(report["nodes"]) == family_count(model)
    assert_choices_are_fastest(report)
    for node in report["nodes"]:
        chosen = next(o for o in node["options"] if o["option"] == node["choice"])
        assert chosen["bound_on"] == "webgpu", chosen
    session = webgpu_session(result.model)
    assert m.compare(session.run(None, m.inputs)) == []
    ran_on = placement(session)
    for node in report["nodes"]:
        chosen = next(o for o in node["options"] if o["option"] == node["choice"])
        if node["choice"] == "as-is" and node["name"] in ran_on:
            assert [ran_on[node["name"]]] == list(chosen["kernels"]), node
