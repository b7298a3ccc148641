"""The recorded WebGPU table against the plugin itself: inspect's placement of single-op models.

Re-runs a slice of the recording corpus (tools/webgpu_lane/cases.py: the families and
the ops the lowerings emit, every element type, the since-versions in effect at opsets 11, 18
and 21, and the contrib ops; WEBGPU_FULL=1: every recorded op and since-version) on the installed plugin and asserts
that `inspect(model, "webgpu")` names the EP ORT's assignment record names. A plugin upgrade
that changes its kernels fails here until `tools/gen_kernel_tables.py webgpu` re-records them.
"""

from __future__ import annotations

import os

import pytest

from ort_dml_ops import inspect
from webgpu_lane import record as R

pytestmark = pytest.mark.webgpu

FULL = os.environ.get("WEBGPU_FULL") == "1"
CI_OPS = (
    "CumSum",
    "ScatterElements",
    "ScatterND",
    "Split",
    "Concat",
    "Mul",
    "Add",
    "Reshape",
    "Slice",
    "Pad",
    "Expand",
    "TopK",
    "Gather",
    "GatherElements",
    "Where",
    "Equal",
    "Less",
    "MaxUnpool",
    "Cast",
    "Range",
)


def _cases():
    if FULL:
        return R.cases()
    keep = []
    for c in R.cases(ops=CI_OPS):
        # a contrib op has one version; an ONNX op, those in effect at opsets 11, 18, 21
        if c.domain or any(
            c.since_version() == R.since_versions(c.op, o, o)[0][0]
            for o in (11, 18, 21)
            if R.since_versions(c.op, o, o)
        ):
            keep.append(c)
    return keep


CASES = _cases()


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_inspect_names_the_ep_the_plugin_takes(case, webgpu_lane):
    r = R.record_case(case)
    if r.get("error", "").startswith("invalid model") or (
        "error" not in r and r["ep"] is None
    ):
        pytest.skip(f"not a placement fact: {r.get('error', 'node folded')}")
    predicted = {n.name: n for n in inspect(case.model(), "webgpu").nodes}["op"]
    if "error" in r:  # ORT cannot open it: no EP has a kernel, and inspect must say so
        assert predicted.provider is None, f"{predicted.reason}; ORT: {r['error']}"
    else:
        assert predicted.provider == r["ep"], predicted.reason
