"""The Olive pass in Olive's own runner: `olive.workflows.run` and the `olive run` command with
a small workflow on zoo models; the output model's placement checked with ort_dml_ops.inspect
and its outputs with the zoo's expected outputs (independent numpy code)."""

from __future__ import annotations

import json
import subprocess
import sys

import onnx
import pytest

pytest.importorskip("olive.workflows")

from ort_dml_ops import DOMAIN, convert, inspect, zoo
from ort_dml_ops.session import InferenceSession

CPU = "CPUExecutionProvider"


def _workflow(model_path, out_dir, **pass_options) -> dict:
    return {
        "input_model": {"type": "ONNXModel", "model_path": str(model_path)},
        "passes": {
            "dml": {"type": "OrtDmlOpsConvert", "target": "dml", **pass_options}
        },
        "cache_dir": str(out_dir / "cache"),
        "output_dir": str(out_dir / "out"),
        "log_severity_level": 3,
    }


def _olive_run_command(workflow: dict, tmp_path) -> None:
    """`olive run` on `workflow`, as a user runs it: the package config written by
    `python -m ort_dml_ops.olive`, then Olive's own command."""
    (tmp_path / "workflow.json").write_text(json.dumps(workflow))
    subprocess.run(
        [sys.executable, "-m", "ort_dml_ops.olive", str(tmp_path / "pkg.json")],
        check=True,
    )
    olive = [sys.executable, "-m", "olive", "run", "--config"]
    olive += [
        str(tmp_path / "workflow.json"),
        "--package-config",
        str(tmp_path / "pkg.json"),
    ]
    subprocess.run(olive, check=True, capture_output=True)


def _output_model(out_dir):
    found = sorted((out_dir / "out").rglob("*.onnx"))
    assert found, f"no model under {out_dir / 'out'}"
    return found[0]


FAMILY = {"CumSum", "CumProd", "ScatterElements", "ScatterND", "Scatter"}


def _check(entry, path, strategy="auto"):
    """Placement as convert() itself leaves it, no family node on the CPU; outputs as expected."""
    report = inspect(str(path), "dml").to_dict()
    direct = convert(entry.load_model(), "dml", strategy=strategy)
    assert report["summary"] == direct.report.inspect.to_dict()["summary"]
    on_cpu = [
        n
        for n in inspect(entry.load_model(), "dml").to_dict()["nodes"]
        if n["provider"] == CPU
    ]
    assert any(
        n["op_type"] in FAMILY for n in on_cpu
    )  # the original leaves the GPU ...
    assert not [
        n for n in report["nodes"] if n["provider"] == CPU and n["op_type"] in FAMILY
    ]  # ... the output not
    got = InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(
        None, entry.inputs()
    )
    assert entry.matches(got), entry.compare(got)


@pytest.mark.parametrize("name", ["bincount", "ddpm_step"])
def test_olive_workflows_run(name, tmp_path):
    from olive.workflows import run

    from ort_dml_ops.olive import package_config

    entry = zoo.get(name)
    src = tmp_path / "model.onnx"
    src.write_bytes(entry.model_bytes())
    # strategy lower: at the zoo's small sizes auto keeps the scatters on ORT's CPU kernel
    run(_workflow(src, tmp_path, strategy="lower"), package_config=package_config())
    _check(entry, _output_model(tmp_path), strategy="lower")
    assert src.read_bytes() == entry.model_bytes()  # the input is never changed


def test_olive_run_command(tmp_path):
    entry = zoo.get("segment_max")
    src = tmp_path / "model.onnx"
    src.write_bytes(entry.model_bytes())
    # strategy lower: at the zoo's small sizes auto keeps segment_max on ORT's CPU kernel
    workflow = _workflow(src, tmp_path, strategy="lower")
    _olive_run_command(workflow, tmp_path)
    _check(entry, _output_model(tmp_path), strategy="lower")


def test_package_config_writer_refuses_existing_file(tmp_path):
    target = tmp_path / "pkg.json"
    target.write_text("mine")
    proc = subprocess.run(
        [sys.executable, "-m", "ort_dml_ops.olive", str(target)],
        check=False,
        capture_output=True,
        text=True,
    )
    assert (
        proc.returncode == 1
        and proc.stderr.count("\n") == 1
        and "exists" in proc.stderr
    )
    assert target.read_text() == "mine"


@pytest.mark.parametrize("runner", ["workflows.run", "olive run"])
def test_olive_pass_tunes_with_its_data_config(runner, tmp_path):
    """`tune: true`: the pass measures on the CPU EP (the provider this machine has) with the
    data config's first item (Olive's DummyDataContainer: ones of the given shapes, valid
    indices for ddpm_step's `t`), writes the tuned model, and its outputs on the zoo's own
    inputs are the zoo's expected outputs (numpy). ddpm_step's CumProd is the project's op:
    tune never leaves it on the Python fallback where a rule lowers it."""
    from olive.workflows import run

    from ort_dml_ops.olive import package_config

    entry = zoo.get("ddpm_step")
    src = tmp_path / "model.onnx"
    src.write_bytes(entry.model_bytes())
    inputs = entry.inputs()
    data_config = {
        "name": "ones",
        "type": "DummyDataContainer",
        "load_dataset_config": {
            "input_shapes": [list(v.shape) for v in inputs.values()],
            "input_names": list(inputs),
            "input_types": [str(v.dtype) for v in inputs.values()],
        },
        "dataloader_config": {"batch_size": None},
    }
    workflow = _workflow(src, tmp_path, tune=True, tune_provider="cpu", tune_repeats=2)
    workflow["data_configs"] = [data_config]
    workflow["passes"]["dml"]["data_config"] = "ones"
    if runner == "workflows.run":
        run(workflow, package_config=package_config())
    else:
        _olive_run_command(workflow, tmp_path)
    out = _output_model(tmp_path)
    tuned = onnx.load(out)
    assert ("CumProd", DOMAIN) not in {(n.op_type, n.domain) for n in tuned.graph.node}
    got = InferenceSession(str(out), providers=[CPU]).run(None, inputs)
    assert entry.matches(got), entry.compare(got)
    assert src.read_bytes() == entry.model_bytes()
