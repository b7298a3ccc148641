"""The level-1 fusion cases of tests/test_placement_fusions.py on ONNX Runtime's WebGPU plugin EP:
`inspect --target webgpu` lists exactly the nodes the plugin's session ran, each on the EP ORT's
assignment record names."""

from __future__ import annotations

import pytest

from ort_dml_ops import inspect
from tests.test_placement_fusions import CASES

from .conftest import placement, webgpu_session

pytestmark = pytest.mark.webgpu


@pytest.mark.parametrize("name", sorted(CASES))
def test_inspect_equals_the_plugins_record(name, webgpu_lane):
    model = CASES[name]()
    ran = placement(webgpu_session(model))
    predicted = {
        n.name: n.provider for n in inspect(model, "webgpu").nodes if n.provider
    }
    assert predicted == ran
