"""The level-1 fusion cases of tests/test_placement_fusions.py on the real DirectML EP.

ORT's optimizers run before partitioning, so the fusions are the EP's build's own
(onnxruntime-directml 1.24.4 in the Wine lane, where the CPU tests read onnxruntime 1.31): each
case's `inspect --target dml` must name every node ORT ran, on ORT's EP, and no node ORT did not
run (`placement.compare`), from ORT's assignment record. One lane batch for the module.

The builds differ in two ways, and `inspect` models both: 1.24.4's ReshapeFusion does not take
`Shape(v)` for the Reshape's data when v's shape equals the data's only by symbolic dim names
(`view_shape_of_an_equal_shaped_value_fused`: 1.31 fuses it, 1.24.4 runs every node;
`Target.reshape_shapes_by_dim_names`), and it fuses no Reshape-19 or -21 at all, neither a
Concat-built shape nor a chain of views (`view_of_own_dims_opset19` / `_opset21`,
`view_chain_opset19` / `_opset21`; `Target.reshape_fusion_versions`).
"""

from __future__ import annotations

import pytest

from ort_dml_ops import inspect
from ort_dml_ops.placement.compare import compare
from tests.test_placement_fusions import CASES

pytestmark = pytest.mark.dml

MODELS = {name: build() for name, build in sorted(CASES.items())}


@pytest.fixture(scope="module")
def truths(lane_ready):
    from dml_lane.truth import record

    results = record([(name, m, None) for name, m in MODELS.items()], fusion=False)
    return dict(zip(MODELS, results))


@pytest.mark.parametrize("name", sorted(MODELS))
def test_inspect_equals_ort_assignment_on_dml(name, truths):
    truth = truths[name]
    assert truth.get("assignment"), (truth.get("stage"), truth.get("error"))
    a = compare(name, inspect(MODELS[name], "dml"), truth)
    assert not a.problems, "\n".join(a.problems)
