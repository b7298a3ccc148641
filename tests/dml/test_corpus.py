"""The op corpus on the real DML EP: every op the lowerings emit, across opsets and dtypes.

Default (CI, plain pytest): the representative set — opsets 11, 13, 16, 17, 18, 21 (where op
versions change), each dtype family once. DML_FULL=1: the whole corpus (both dtype families
at every representative opset, ScatterND/ScatterElements reductions across dtypes).

Each case must: create a session that really got DmlExecutionProvider first, compute the
same outputs as an independent reference (numpy for CumSum, the Linux onnxruntime CPU EP
otherwise), and — where the corpus states it — put its nodes where the DML EP is known to.
"""

from __future__ import annotations

import os

import pytest

from dml_lane import corpus
from dml_lane.driver import DML

# a sweep on the lane (ops, placement truth, converted models): `make test-full` and CI run it
pytestmark = [pytest.mark.dml, pytest.mark.full]

FULL = os.environ.get("DML_FULL") == "1"
_SPECS = corpus.all_specs() if FULL else corpus.representative_specs()
# the "known already" facts and the former emulator failures live in test_known.py
_SKIP = {
    s.name
    for s in corpus.known_specs()
    + corpus.former_emulator_failure_specs()
    + corpus.working_pattern_specs()
}
SPECS = {s.name: s for s in _SPECS if s.name not in _SKIP}
LANE_CASES = [s.case() for s in SPECS.values()]


@pytest.mark.parametrize("name", list(SPECS))
def test_op_on_dml(lane_results, name):
    spec, r = SPECS[name], lane_results[name]
    assert r.ok, f"{name}: failed at {r.stage}: {r.error}"
    assert r.providers[0] == DML, r.providers
    problem = corpus.compare(spec, r.outputs, corpus.reference(spec))
    assert problem is None, f"{name}: {problem}; placement {r.placement}"
    assert not r.unresolved, f"{name}: placement not read for {r.unresolved}"
    for node, provider in spec.expect_placement.items():
        assert r.placement.get(node) == provider, (
            f"{name}: {node} on {r.placement.get(node)}, expected {provider}"
        )
