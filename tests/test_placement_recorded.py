"""inspect's modelled DML placement of small real exports, pinned against recorded truth.

tests/data/placement/truth*.json hold what onnxruntime-directml 1.24.4 itself recorded on the DML
lane (tools/record_placement.py: `get_provider_graph_assignment_info()` and the Memcpy nodes of
a profiled run) for the models beside them: tiny random-weight XLM-R exports by torch.onnx
(TorchScript and dynamo; tools/export_placement_fixtures.py), two dynamo exports copied from the
real-export corpus (models/real/: torch_geometric's GCNConv, where ORT's TransposeOptimizer adds a
`Gather`, and a Mixtral-style MoE router, where it adds 8 `Transpose`s) and the zoo's unconverted
models.
The test needs no Wine: a change to the placement model that moves a node or a copy shows here.
Re-record on the lane after a deliberate change: `python tools/record_placement.py ...` (each
file's "how" entry).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ort_dml_ops import inspect, zoo
from ort_dml_ops.placement.compare import compare

DATA = Path(__file__).parent / "data" / "placement"
RECORDED = {"models": {}}
for _path in sorted(DATA.glob("truth*.json")):
    RECORDED["models"].update(json.loads(_path.read_text())["models"])


def _model(name: str):
    if name.startswith("zoo/"):
        return zoo.get(name[4:]).load_model()
    return str(DATA / name)


@pytest.mark.parametrize("name", sorted(RECORDED["models"]))
def test_modelled_placement_equals_recorded_truth(name):
    truth = RECORDED["models"][name]
    a = compare(name, inspect(_model(name), "dml"), truth)
    assert not a.problems, "\n".join(a.problems)
    assert a.copies_predicted == a.copies_real, (a.copies_source, truth.get("memcpy"))


def test_recorded_truth_is_the_real_ep():
    """The fixture is ORT's own record: the DML build, nodes on both EPs, copies from a full run
    (or, where the emulator fails the run, the copies ORT logged adding at session creation)."""
    for name, truth in RECORDED["models"].items():
        assert truth["ort_version"] == "1.24.4" and truth["provider"] == "dml", name
        assert truth["nodes"] and truth["stage"] in ("done", "run"), name
        assert truth["ok"] or truth["memcpy_logged"] is not None, name
    eps = {ep for t in RECORDED["models"].values() for ep in t["nodes"].values()}
    assert eps == {"DmlExecutionProvider", "CPUExecutionProvider"}


@pytest.mark.parametrize("name", sorted(RECORDED["models"]))
def test_a_model_ort_loads_is_never_reported_as_failing(name):
    """ORT created a session for every recorded model (TorchScript's Constant nodes included)."""
    report = inspect(_model(name), "dml")
    assert report.counts["failing_nodes"] == 0
    assert "session creation fails" not in report.to_text(all_nodes=True)
