"""The third-party corpus (tests/third_party.py) on the real DirectML EP, as users run it: ORT's
default session options (graph optimizations and DML graph fusion on), the file as shipped and
`convert(file, "dml")`.

Per model: the converted model runs with every CumSum / CumProd / Scatter node on the DML EP
(ORT's own assignment record; any node tests/test_third_party.py's KNOWN_CPU names excepted),
and its outputs equal the original's on the same DML EP: DML's own numerics are the yardstick
where they differ from the CPU EP's. Where the original cannot run on DML at all (the DML EP
fails kernel creation on torch's `Reshape(allowzero=1)`, which `inspect` predicts and convert
removes), the yardstick is the original on the lane's CPU EP (the same build).

And `inspect --target dml` names, for every node of the file and of the converted model that
ORT's record and inspect both list, the EP ORT ran it on (unnamed nodes are named
`<op>#<index>` first, in the models the lane runs).

One session per guest process: the Kokoro sessions alone hold ~10 GB of vkd3d shared memory
under lavapipe, and two in one process were killed by the kernel's OOM killer (measured).
Without `make third-party`, no cases (skipped).
"""

from __future__ import annotations

import onnx
import pytest

from dml_lane.driver import CPU, DML, Case, run_cases
from ort_dml_ops import inspect
from ort_dml_ops.conversion import convert
from tests.test_third_party import KNOWN_CPU, _close
from tests.third_party import THIRD_PARTY, named

# a per-model sweep on the lane: `make test-full` (and CI) runs it
pytestmark = [pytest.mark.dml, pytest.mark.full]

AS_USERS_RUN = {"graph_optimization_level": "ORT_ENABLE_ALL"}  # ORT's default
FAMILY = ("CumSum", "CumProd", "Scatter")
#: files this lane cannot run at all, original or converted, and why (measured; not run in
#: CI: the first reason kills the guest, and with it whatever else is near the memory limit)
LANE_CANNOT_RUN = {
    "kokoro/kokoro_v1_int8": (
        "the lane cannot run Kokoro, original or converted: with graph fusion on, one session "
        "holds ~20 GB of vkd3d shared memory under lavapipe and the kernel's OOM killer ends the "
        "guest (24 GB machine); with fusion off, the DML EP fails its 1-D ConvTranspose with "
        "output_padding at session creation (80070057), a lane finding with its minimal repro in "
        "tests/dml/test_known.py::test_conv_transpose_1d_with_output_padding_fails_on_the_lane"
    ),
}
AVAILABLE = [m for m in THIRD_PARTY if not m.missing and m.name not in LANE_CANNOT_RUN]


def _dml_fails_on(path) -> bool:
    """Whether inspect predicts that the DML EP fails on a node of the original (as it does on
    torch's Reshape(allowzero=1), which convert removes)."""
    nodes = inspect(str(path), "dml").to_dict()["nodes"]
    return any("fails to create this kernel" in n["reason"] for n in nodes)


def _cases():
    cases = []
    for m in AVAILABLE:
        feeds = m.feeds()
        shipped = named(m.load())
        original = shipped.SerializeToString()
        # lower: every lowering applied (auto keeps small scatters on the CPU kernel, by cost)
        converted = convert(shipped, "dml", strategy="lower").model.SerializeToString()
        for version, model in (("original", original), ("converted", converted)):
            cases.append(
                Case(f"{m.name}:{version}", model, feeds, session_options=AS_USERS_RUN)
            )
        if _dml_fails_on(m.path):  # the yardstick then
            cases.append(
                Case(f"{m.name}:original-cpu", original, feeds, provider="cpu")
            )
    return cases


LANE_CASES = _cases()


@pytest.fixture(scope="module")
def lane_results(lane_ready):
    """This module's cases, one DML session per guest process (see the module docstring)."""
    results = run_cases(LANE_CASES, sessions_per_process=1)
    return {c.name: r for c, r in zip(LANE_CASES, results)}


@pytest.mark.parametrize("m", THIRD_PARTY, ids=lambda m: m.name)
def test_converted_third_party_model_runs_its_family_nodes_on_dml(m, lane_results):
    if m.missing:
        pytest.skip(m.missing)
    if m.name in LANE_CANNOT_RUN:
        pytest.skip(LANE_CANNOT_RUN[m.name])
    before = lane_results[f"{m.name}:original"]
    after = lane_results[f"{m.name}:converted"]
    assert after.ok, f"{after.stage}: {after.error}"
    assert after.providers[0] == DML, after.providers
    on_cpu = sorted(
        name
        for ep, name, op, _ in after.assignment
        if ep == CPU and op.startswith(FAMILY)
    )
    assert on_cpu == sorted(KNOWN_CPU.get(m.name, {})), on_cpu
    if not before.ok:  # only where inspect predicted it: the DML EP's allowzero Reshape
        assert "MLOperatorAuthorImpl" in (before.error or ""), before.error
        before = lane_results[f"{m.name}:original-cpu"]
    assert before.ok, f"the original: {before.stage}: {before.error}"
    problems = _close(after.outputs, before.outputs)
    assert not problems, problems


@pytest.mark.parametrize("version", ["original", "converted"])
@pytest.mark.parametrize("m", THIRD_PARTY, ids=lambda m: m.name)
def test_inspect_places_each_node_where_the_lane_runs_it(m, version, lane_results):
    """`inspect --target dml` names the EP ORT's own record names, for every node both list
    (nodes ORT's optimizers add or remove are the known limit docs/inspect.md names)."""
    if m.missing:
        pytest.skip(m.missing)
    if m.name in LANE_CANNOT_RUN:
        pytest.skip(LANE_CANNOT_RUN[m.name])
    case = next(c for c in LANE_CASES if c.name == f"{m.name}:{version}")
    result = lane_results[case.name]
    if (
        not result.ok
    ):  # the original on DML where inspect predicts the failure (minimol)
        assert version == "original" and _dml_fails_on(m.path), result.error
        return
    model = onnx.load_from_string(case.model)
    predicted = {n.name: n for n in inspect(model, "dml").nodes}
    wrong = [
        f"{name} ({op}): inspect says {predicted[name].provider} "
        f"({predicted[name].reason}), ORT ran it on {ep}"
        for ep, name, op, _ in result.assignment
        if name in predicted
        and predicted[name].provider
        and predicted[name].provider != ep
    ]
    assert wrong == []
    assert result.assignment
