"""The WebGPU EP from the command line and from `ort_dml_ops.InferenceSession`: registration the
ORT way, a clear error (never a silent CPU run) without the plugin or without an adapter, and
`inspect` / `convert` / `run` / `bench` with webgpu."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import onnx
import pytest

from ort_dml_ops import DOMAIN, GraphBuilder
from ort_dml_ops.cli import main

CPU, WEBGPU = "CPUExecutionProvider", "WebGpuExecutionProvider"


@pytest.fixture()
def cumprod_model(tmp_path):
    b = GraphBuilder(opset=17)
    x = b.input("x", "float32", [3, 40])
    path = tmp_path / "cumprod.onnx"
    onnx.save(b.build(outputs={"y": b.cumprod(x, axis=1)}), path)
    return path


def _cli(args, env_changes, tmp_path):
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("VK_ICD_FILENAMES", "ORT_WEBGPU_EP_ALLOW_SOFTWARE_ADAPTER")
    }
    env.update(env_changes)
    return subprocess.run(
        [sys.executable, "-m", "ort_dml_ops", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        check=False,
    )


def test_no_adapter_is_one_clear_line_not_a_cpu_run(cumprod_model, tmp_path):
    pytest.importorskip("onnxruntime_ep_webgpu")
    bad_icd = tmp_path / "none.json"
    proc = _cli(
        ["run", str(cumprod_model), "--provider", "webgpu", "--random-inputs"],
        {"VK_ICD_FILENAMES": str(bad_icd), "ORT_WEBGPU_EP_ALLOW_SOFTWARE_ADAPTER": "1"},
        tmp_path,
    )
    assert proc.returncode == 1
    assert proc.stdout == ""  # ORT's Python layer would print its CPU retry there
    # (the Vulkan loader and Dawn print their own warnings to stderr first; the last line is ours)
    assert (
        "no WebGPU adapter" in proc.stderr.strip().splitlines()[-1]
        and "Traceback" not in proc.stderr
    )


def test_software_adapter_needs_the_opt_in(cumprod_model, tmp_path):
    pytest.importorskip("onnxruntime_ep_webgpu")
    proc = _cli(
        ["run", str(cumprod_model), "--provider", "webgpu", "--random-inputs"],
        {},
        tmp_path,
    )
    if proc.returncode == 0:
        pytest.skip("a hardware GPU adapter is present: the opt-in is not needed here")
    assert (
        proc.returncode == 1 and "ORT_WEBGPU_EP_ALLOW_SOFTWARE_ADAPTER=1" in proc.stderr
    )


def test_missing_plugin_is_one_clear_line(cumprod_model, tmp_path):
    code = (
        "import sys; sys.modules['onnxruntime_ep_webgpu'] = None; from ort_dml_ops.cli import main; "
        f"sys.exit(main(['run', {str(cumprod_model)!r}, '--provider', 'webgpu', '--random-inputs']))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 1
    assert (
        "pip install 'ort-dml-ops[webgpu]'" in proc.stderr
        and "Traceback" not in proc.stderr
    )


def test_webgpu_cannot_be_mixed_with_another_gpu_provider(cumprod_model, capsys):
    pytest.importorskip("onnxruntime_ep_webgpu")
    assert (
        main(
            [
                "run",
                str(cumprod_model),
                "--provider",
                "webgpu",
                "--provider",
                "cuda",
                "--random-inputs",
            ]
        )
        == 1
    )
    assert "cannot be combined" in capsys.readouterr().err


@pytest.mark.webgpu
def test_run_on_webgpu_converted_model(cumprod_model, tmp_path, capsys, webgpu_lane):
    out = tmp_path / "cumprod.webgpu.onnx"
    assert (
        main(["convert", str(cumprod_model), "-o", str(out), "--target", "webgpu"]) == 0
    )
    x = np.random.default_rng(0).uniform(0.9, 1.1, [3, 40]).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    capsys.readouterr()
    assert (
        main(
            [
                "run",
                str(out),
                "--provider",
                "webgpu",
                "--input",
                f"x={tmp_path / 'x.npy'}",
                "--json",
            ]
        )
        == 0
    )
    rec = json.loads(capsys.readouterr().out)
    assert rec["providers"][0] == WEBGPU
    y = np.array(rec["outputs"]["y"]["values"], np.float64)
    assert np.allclose(y, np.cumprod(x.astype(np.float64), axis=1), rtol=1e-5)


def test_inspect_and_convert_take_target_webgpu(cumprod_model, tmp_path, capsys):
    assert main(["inspect", str(cumprod_model), "--target", "webgpu", "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["target"] == "webgpu"
    assert [n["provider"] for n in rep["nodes"] if n["domain"] == DOMAIN] == [CPU]
    out = tmp_path / "c.onnx"
    assert (
        main(
            [
                "convert",
                str(cumprod_model),
                "-o",
                str(out),
                "--target",
                "webgpu",
                "--json",
            ]
        )
        == 0
    )
    capsys.readouterr()
    assert main(["inspect", str(out), "--target", "webgpu", "--json"]) == 0
    after = json.loads(capsys.readouterr().out)
    assert after["summary"]["cpu_nodes"] == 0 and after["summary"]["copies"] == 0


@pytest.mark.webgpu
def test_bench_target_webgpu_fast_mode(capsys, webgpu_lane):
    assert (
        main(
            [
                "bench",
                "--target",
                "webgpu",
                "--sizes",
                "1e4",
                "--reps",
                "1",
                "--axes",
                "first",
                "--ops",
                "CumProd,ScatterElements:add",
                "--json",
            ]
        )
        == 0
    )
    rec = json.loads(capsys.readouterr().out)
    assert rec["adapter"] == webgpu_lane
    cases = {r["case"]: r for r in rec["rows"]}
    assert len(cases) == 2
    for r in cases.values():
        assert isinstance(r["lowered"], float) and isinstance(r["cpu"], float)
        assert r["lowered_max_rel_err"] < 1e-5 and r["cpu_max_rel_err"] < 1e-5
        assert (
            r["cpu_copies"] >= 2
        )  # to the host and back around the op forced onto the CPU EP
    assert cases["CumProd float32 1e+04 axis=first"]["lowered_copies"] == 0
