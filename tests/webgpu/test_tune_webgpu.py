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


@pytest.mark.full
@pytest.mark.parametrize("name", NAMES)
def test_every_option_tune_may_pick_is_right_on_webgpu(name, webgpu_lane):
    """`tune` picks whichever option it measures fastest, so every option must be right, not
    only the one this machine picks today: CI once measured the lowering fastest for
    scatter_reduce_amax's ScatterElements(min) of finfo.min, and its output was wrong on the
    plugin (its TopK's padding, docs/webgpu.md). Each option of each family node, converted
    alone into the whole model for webgpu, gives torch's outputs on the plugin."""
    from ort_dml_ops.conversion import convert
    from ort_dml_ops.tuning import _inferred_types, _reference
    from ort_dml_ops.tuning.candidates import one_node_model, options
    from ort_dml_ops.tuning.capture import constants, family_nodes, node_inputs

    m = get(name)
    model = m.load()
    reference, _ = _reference(model, m.inputs)
    nodes = family_nodes(model)
    values = node_inputs(reference, m.inputs, nodes)
    constant_names, types = set(constants(model)), _inferred_types(model)
    wrong = []
    for fam in nodes:
        single, _ = one_node_model(model, fam, values, constant_names, types)
        for option in options(single, "webgpu"):
            converted = convert(
                model,
                "webgpu",
                node_strategies={fam.output: option.strategy},
                with_inspect=False,
            ).model
            problems = m.compare(webgpu_session(converted).run(None, m.inputs))
            if problems:
                wrong.append(f"{fam.label} {option.name}: {problems}")
    assert wrong == []
