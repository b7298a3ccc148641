"""A fallback custom op (DOMAIN::CumProd, a Python op) inside a real DML session.

The session is created through ort_dml_ops.InferenceSession (use_fallback=True) under the
lane's Windows CPython (numpy < 2, onnxruntime-extensions 0.15.0), importing the live tree.
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from dml_lane import corpus
from dml_lane.driver import CPU, DML, Case

pytestmark = pytest.mark.dml

if importlib.util.find_spec("ort_dml_ops.session") is None:
    pytest.skip(
        "ort_dml_ops.session (the fallback InferenceSession) does not exist yet",
        allow_module_level=True,
    )

X = (np.arange(21, dtype=np.float32).reshape(3, 7) % 5 - 2) / 2 + 1.0
LANE_CASES = [
    Case(
        "cumprod-fallback-f32",
        corpus.cumprod_custom_model((3, 7), "float32"),
        {"x": X},
        use_fallback=True,
    ),
    Case(
        "cumprod-fallback-f64",
        corpus.cumprod_custom_model((3, 7), "float64"),
        {"x": X.astype(np.float64)},
        use_fallback=True,
    ),
]


@pytest.mark.parametrize("name", [c.name for c in LANE_CASES])
def test_fallback_cumprod_in_dml_session(lane_results, name):
    r = lane_results[name]
    assert r.ok, f"{name}: failed at {r.stage}: {r.error}"
    assert r.providers[0] == DML, r.providers
    x = next(c for c in LANE_CASES if c.name == name).inputs["x"]
    np.testing.assert_allclose(r.outputs[0], 2 * np.cumprod(x, axis=1), rtol=1e-6)
    # a Python custom op always runs on the CPU EP; the rest of the graph stays on DML
    assert r.placement.get("cumprod") == CPU, r.placement
    if name.endswith("f32"):
        assert r.placement == {"cumprod": CPU, "mul_after": DML}, r.placement
        assert any(c.startswith("MemcpyFromHost after c") for c in r.copies), r.copies
