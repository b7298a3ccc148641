"""`ort-dml-ops check MODEL`: a model on the real DirectML EP through the lane, from the CLI."""

from __future__ import annotations

import json

import numpy as np
import onnx
import onnx.helper as oh
import pytest

from dml_lane.driver import lane_available
from ort_dml_ops.cli import main


@pytest.fixture()
def model_path(tmp_path):
    """x -> CumSum(axis 1) -> Mul(2): both nodes have DML kernels."""
    g = oh.make_graph(
        [
            oh.make_node("CumSum", ["x", "axis"], ["c"], name="cumsum"),
            oh.make_node("Mul", ["c", "two"], ["y"], name="mul"),
        ],
        "g",
        [oh.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [3, 7])],
        [oh.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [3, 7])],
        [
            oh.make_tensor("axis", onnx.TensorProto.INT64, [], [1]),
            oh.make_tensor("two", onnx.TensorProto.FLOAT, [], [2]),
        ],
    )
    path = tmp_path / "m.onnx"
    onnx.save(
        oh.make_model(g, opset_imports=[oh.make_opsetid("", 17)], ir_version=8), path
    )
    return path


def test_check_without_the_lane_is_one_line_and_exit_1(model_path, monkeypatch, capsys):
    monkeypatch.setenv("ORT_DML_OPS_NO_LANE", "1")
    assert main(["check", str(model_path), "--random-inputs"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "DML lane" in err[0] and "docs/dml-lane.md" in err[0], err


@pytest.mark.dml
def test_check_runs_on_dml_and_compares_with_the_cpu_ep(model_path, tmp_path, capsys):
    ok, why = lane_available()
    if not ok:
        pytest.skip(f"DML lane unavailable: {why}")
    x = (np.arange(21, dtype=np.float32).reshape(3, 7) % 5) - 2
    np.save(tmp_path / "x.npy", x)
    assert (
        main(["check", str(model_path), "--input", f"x={tmp_path / 'x.npy'}", "--json"])
        == 0
    )
    record = json.loads(capsys.readouterr().out)
    assert {(n["name"], n["provider"]) for n in record["nodes"]} == {
        ("cumsum", "DmlExecutionProvider"),
        ("mul", "DmlExecutionProvider"),
    }
    assert record["memcpy"] == [] and record["ok"] is True
    [row] = record["outputs"]
    assert (
        row["name"] == "y" and row["shape"] == [3, 7] and row["max_abs_diff"] == 0.0
    )  # small integers: exact
    assert main(["check", str(model_path), "--random-inputs"]) == 0
    text = capsys.readouterr().out
    assert (
        "DmlExecutionProvider: 2 nodes" in text
        and "y: float32 [3, 7]" in text
        and ": ok" in text
    )


def test_check_missing_model_is_one_line(tmp_path, capsys):
    assert main(["check", str(tmp_path / "nope.onnx")]) == 1
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
