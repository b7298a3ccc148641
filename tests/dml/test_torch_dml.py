"""A PyTorch model exported with ort_dml_ops.torch (cumprod, scatter_reduce mean without self,
index_reduce amax, segment_reduce max), converted for DML, runs on the real DirectML EP (Wine
lane): outputs equal torch's bit for bit, no CumProd/CumSum/Scatter node on the CPU EP, and
the CPU nodes and copies ORT recorded are the ones `inspect` predicted."""

from __future__ import annotations

import logging
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("onnxscript")

import ort_dml_ops
import ort_dml_ops.torch as odt
from dml_lane.driver import DML, Case, run_cases

pytestmark = pytest.mark.dml
FAMILY = {"CumSum", "CumProd", "ScatterElements", "ScatterND", "Scatter"}
NAMES = ["x", "i", "u", "j", "s", "d", "lengths"]


class Model(torch.nn.Module):
    def forward(self, x, i, u, j, s, d, lengths):
        return (
            torch.cumprod(x, 1),
            x.scatter_reduce(1, i, u, "mean", include_self=False),
            x.index_reduce(0, j, s, "amax", include_self=False),
            torch.segment_reduce(d, "max", lengths=lengths),
        )


def _args():
    rng = np.random.default_rng(0)

    def floats(shape, low, high):
        return torch.from_numpy(rng.integers(low, high, shape).astype(np.float32))

    return (
        floats((4, 8), 1, 3),
        torch.tensor([[0, 0, 7], [3, 3, 3], [1, 2, 1], [5, 5, 6]]),  # duplicates
        floats((4, 3), -9, 9),
        torch.tensor([0, 3, 0, 1, 3]),
        floats((5, 8), -9, 9),
        floats((6, 2), -9, 9),
        torch.tensor([2, 0, 3, 1]),  # an empty segment
    )


@pytest.fixture(scope="module")
def exported(lane_ready):
    args = _args()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        logging.getLogger("torch.onnx").setLevel(logging.ERROR)
        model = odt.export(Model(), args, input_names=NAMES, verbose=False).model_proto
    # lower: at these sizes auto keeps the scatters on ORT's CPU kernel (rules/cost.py)
    result = ort_dml_ops.convert(model, "dml", strategy="lower")
    feeds = {n: a.numpy() for n, a in zip(NAMES, args)}
    case = Case(
        "torch_export",
        result.model,
        feeds,
        session_options={"graph_optimization_level": "ORT_ENABLE_ALL"},
    )
    [ran] = run_cases([case])
    return ran, result, [t.numpy() for t in Model()(*args)]


def test_torch_export_runs_exactly_on_dml(exported):
    ran, _, want = exported
    assert ran.ok and ran.providers[0] == DML, (ran.stage, ran.error)
    for got, w in zip(ran.outputs, want):
        np.testing.assert_array_equal(got, w)


def test_torch_export_placement_on_dml(exported):
    ran, result, _ = exported
    on_cpu = [(name, op) for provider, name, op, _ in ran.assignment if provider != DML]
    assert not [op for _, op in on_cpu if op in FAMILY], on_cpu
    predicted = result.report.inspect.to_dict()["summary"]
    assert (len(on_cpu), len(ran.memcpy)) == (
        predicted["cpu_nodes"],
        predicted["copies"],
    ), on_cpu
