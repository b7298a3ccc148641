"""Issue 3's "Known already" facts, measured on the real DML EP, as tests.

Placement facts assert ORT's own placement. The minimal models that failed only under the old
Wine 8 lane (vkd3d 1.6) must now run on the DML EP, with every node there and the reference's
outputs.
"""

from __future__ import annotations

import numpy as np
import pytest

from dml_lane import corpus
from dml_lane.driver import CPU, DML

pytestmark = pytest.mark.dml

KNOWN = {s.name: s for s in corpus.known_specs()}
FORMER = {s.name: s for s in corpus.former_emulator_failure_specs()}
WORKS = {s.name: s for s in corpus.working_pattern_specs()}
GUARD = corpus.cpu_fallback_guard_spec()
ALLOWZERO = {s.name: s for s in corpus.reshape_allowzero_specs()}
SIGNED_ZERO = corpus.where_signed_zero_spec()
CONV_T = {s.name: s for s in corpus.conv_transpose_output_padding_specs()}
LANE_CASES = [
    s.case()
    for s in (
        *KNOWN.values(),
        *FORMER.values(),
        *WORKS.values(),
        GUARD,
        *ALLOWZERO.values(),
        SIGNED_ZERO,
        *CONV_T.values(),
    )
]
LANE_CASES += [
    s.case("cpu") for s in (*ALLOWZERO.values(), SIGNED_ZERO, *CONV_T.values())
]  # the same build's CPU EP: a control


def _assert_ran_on_dml(r):
    assert r.ok, f"{r.name}: {r.stage}: {r.error}"
    assert r.providers and r.providers[0] == DML, r.providers


def _assert_matches_reference(spec, r):
    problem = corpus.compare(spec, r.outputs, corpus.reference(spec))
    assert problem is None, f"{spec.name}: {problem}"


@pytest.mark.parametrize("name", list(KNOWN))
def test_known_placement(lane_results, name):
    spec, r = KNOWN[name], lane_results[name]
    _assert_ran_on_dml(r)
    for node, provider in spec.expect_placement.items():
        assert r.placement.get(node) == provider, (
            f"{name}: node {node!r} on {r.placement.get(node)}, expected {provider}; placement {r.placement}"
        )
    _assert_matches_reference(spec, r)


def test_scatter_elements_none_leaves_dml_at_opset_18(lane_results):
    r16 = lane_results["ScatterElements-none-float32-op16"]
    r17 = lane_results["ScatterElements-none-float32-op17"]
    r18 = lane_results["ScatterElements-none-float32-op18"]
    assert (
        r16.placement["scatter"],
        r17.placement["scatter"],
        r18.placement["scatter"],
    ) == (DML, DML, CPU)
    # a CPU node inside a DML session costs copies: ORT inserts Memcpy nodes around it
    assert (
        any("MemcpyToHost" in c for c in r18.copies)
        or r18.placement.get("scatter") == CPU
    )


def test_cumsum_graph_input_axis_reverse_exclusive_values(lane_results):
    spec = KNOWN["CumSum-float32-op14-axisinput-reverse-exclusive"]
    r = lane_results[spec.name]
    _assert_ran_on_dml(r)
    assert r.placement == {"cumsum": DML}
    x = spec.inputs["x"]
    want = (
        np.flip(np.cumsum(np.flip(x, 1), 1), 1) - x
    )  # reverse exclusive: sum of the elements after
    np.testing.assert_allclose(r.outputs[0], want, rtol=1e-5, atol=1e-4)


def test_topk_gather_elements_on_dml(lane_results):
    r = lane_results["TopK+GatherElements-float32-op17"]
    _assert_ran_on_dml(r)
    assert r.on(DML) == ["gather_elements", "topk"]
    assert r.on(CPU) == []


@pytest.mark.parametrize("name", list(FORMER))
def test_former_emulator_failure_runs_on_dml(lane_results, name):
    """int64 CumSum and vec4 element-wise shaders: Wine 8's vkd3d could not, real DirectML can."""
    spec, r = FORMER[name], lane_results[name]
    _assert_ran_on_dml(r)
    assert set(r.placement.values()) == {DML}, r.placement
    _assert_matches_reference(spec, r)


@pytest.mark.parametrize("name", list(WORKS))
def test_shift_patterns_that_work(lane_results, name):
    spec, r = WORKS[name], lane_results[name]
    _assert_ran_on_dml(r)
    assert set(r.placement.values()) == {DML}, r.placement
    _assert_matches_reference(spec, r)


def test_session_that_fell_back_to_cpu_is_a_failure(lane_results):
    """ORT silently falls back to the CPU EP when the DML EP fails to initialize: not a pass."""
    r = lane_results[GUARD.name]
    assert not r.ok and r.stage == "providers", (r.ok, r.stage, r.providers, r.error)
    assert r.providers and r.providers[0] != DML
    assert "did not get DmlExecutionProvider first" in r.error


@pytest.mark.parametrize("name", list(ALLOWZERO))
def test_reshape_allowzero_on_dml(lane_results, name):
    """Issue 13 item 5, minimal repro: the DML EP refuses Reshape(allowzero=1), which torch.onnx's
    dynamo exporter writes for every `view` (RoBERTa, PyG GCNConv fail on it before conversion).
    Kernel creation fails in ORT's MLOperatorAuthorImpl.cpp: at session creation for a static shape
    (80070057 Invalid parameter), at the first run for a symbolic one (the HRESULT varies: 8007000E
    "Out of memory" for 56 floats, 8007023E in the real exports). allowzero=0 runs; the CPU EP of
    the same build runs both. Not the emulator: see corpus.reshape_allowzero_specs()."""
    spec, r, cpu = ALLOWZERO[name], lane_results[name], lane_results[f"{name}@cpu"]
    _assert_matches_reference(spec, cpu)
    if "allowzero0" in name:
        _assert_ran_on_dml(r)
        assert r.placement == {"view": DML}, r.placement
        _assert_matches_reference(spec, r)
        return
    assert not r.ok, (
        f"{name} now runs on the DML EP: update docs/dml-lane.md (Reshape allowzero) and inspect"
    )
    symbolic = "symbolic" in name
    assert r.stage == ("run" if symbolic else "session"), (r.stage, r.error)
    assert "MLOperatorAuthorImpl.cpp" in (r.error or ""), r.error
    assert symbolic or "80070057" in (r.error or ""), r.error


def test_where_keeps_a_selected_negative_zero_on_dml_not_on_the_cpu_ep(lane_results):
    """DML's Where copies the picked element (−0.0 and NaN included), as ONNX defines it; the CPU
    EP of the same build turns a −0.0 picked from the true branch into +0.0 (where_op.cc). The
    scatter lowering's float picks stay GatherElements (segscan.select_bits,
    scatter_write.choose) although the DML EP would not need them: a converted model must be
    exact wherever ORT runs it, and ORT falls back to the CPU EP silently. See
    corpus.where_signed_zero_spec() and docs/performance.md (issue 19: what exactness costs)."""
    spec = SIGNED_ZERO
    dml, cpu = lane_results[spec.name], lane_results[f"{spec.name}@cpu"]
    _assert_ran_on_dml(dml)
    assert dml.placement == {"where": DML}, dml.placement
    x, y, c = spec.inputs["x"], spec.inputs["y"], spec.inputs["c"]
    want = np.where(c, x, y)  # numpy picks elements: -0.0 stays -0.0
    got = np.asarray(dml.outputs[0])
    assert np.array_equal(np.signbit(got), np.signbit(want)), got
    np.testing.assert_array_equal(got, want)
    assert cpu.ok, cpu.error
    on_cpu = np.asarray(cpu.outputs[0])
    np.testing.assert_array_equal(on_cpu, want)  # equal as numbers ...
    # ... but the true branch's -0.0 lost its sign (rows 0 and 2); the false branch kept it
    assert list(np.signbit(on_cpu)) == [False, True, False, False], on_cpu


def test_conv_transpose_1d_with_output_padding_fails_on_the_lane(lane_results):
    """A lane finding (corpus.conv_transpose_output_padding_specs): the DML EP fails a 1-D
    ConvTranspose with output_padding at session creation; without output_padding, or in 2-D,
    it runs and matches the same build's CPU EP. Kokoro (the third-party corpus) has such a
    node, so it cannot run on this lane (tests/dml/test_third_party_dml.py)."""
    for name in CONV_T:
        dml, cpu = lane_results[name], lane_results[f"{name}@cpu"]
        assert cpu.ok, cpu.error
        if name.startswith("ConvTranspose-1d-output_padding1"):
            assert not dml.ok and dml.stage == "session", (dml.stage, dml.error)
            assert "80070057" in (dml.error or ""), dml.error
        else:
            _assert_ran_on_dml(dml)
            np.testing.assert_allclose(
                dml.outputs[0], cpu.outputs[0], rtol=1e-5, atol=1e-5
            )
