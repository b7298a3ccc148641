"""The command line: help, version, the run and demo verbs, and one-line errors."""

import json
import subprocess
import sys

import numpy as np
import onnx
import pytest

from ort_dml_ops import GraphBuilder
from ort_dml_ops.cli import main


@pytest.fixture()
def cumprod_model(tmp_path):
    b = GraphBuilder(opset=17)
    x = b.input("x", "float32", ["N", 4])
    path = tmp_path / "cumprod.onnx"
    onnx.save(b.build(outputs={"y": b.cumprod(x, axis=1, reverse=True)}), path)
    return path


def test_module_entry_point_help_and_version():
    out = subprocess.run(
        [sys.executable, "-m", "ort_dml_ops", "--version"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.startswith("ort-dml-ops ")
    out = subprocess.run(
        [sys.executable, "-m", "ort_dml_ops", "--help"],
        capture_output=True,
        text=True,
        check=True,
    )
    for verb in ("run", "demo"):
        assert verb in out.stdout


def test_no_verb_is_a_usage_error(capsys):
    assert main([]) == 2


def test_run_with_input_file_json_and_output_dir(cumprod_model, tmp_path, capsys):
    x = np.arange(1, 9, dtype=np.float32).reshape(2, 4)
    np.save(tmp_path / "x.npy", x)
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    assert (
        main(
            [
                "run",
                str(cumprod_model),
                "--provider",
                "cpu",
                "--input",
                f"x={tmp_path / 'x.npy'}",
                "--output-dir",
                str(out_dir),
                "--json",
            ]
        )
        == 0
    )
    report = json.loads(capsys.readouterr().out)
    want = np.flip(np.cumprod(np.flip(x, 1), 1), 1)
    assert report["providers"] == ["CPUExecutionProvider"]
    assert np.array_equal(np.array(report["outputs"]["y"]["values"], np.float32), want)
    assert np.array_equal(np.load(out_dir / "y.npy"), want)


def test_run_with_random_inputs_prints_providers(cumprod_model, capsys):
    assert (
        main(
            [
                "run",
                str(cumprod_model),
                "--random-inputs",
                "--provider",
                "CPUExecutionProvider",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "providers: CPUExecutionProvider" in out and "y: float32 [4, 4]" in out


@pytest.mark.parametrize(
    "args,message",
    [
        (["run", "{missing}"], "no such file"),
        (["run", "{garbage}"], "not an ONNX model"),
        (["run", "{empty}"], "the file is empty"),
        (["run", "{model}"], "missing input 'x'"),
        (["run", "{model}", "--input", "x"], "--input expects NAME=FILE.npy"),
        (["run", "{model}", "--input", "z={garbage}"], "no input named 'z'"),
        (["run", "{model}", "--input", "x={garbage}"], "not a .npy array"),
        (
            ["run", "{model}", "--random-inputs", "--output-dir", "{missing}"],
            "output folder does not exist",
        ),
        (["demo", "--model", "nope"], "no zoo model named 'nope'"),
    ],
)
def test_user_mistakes_are_one_line_errors(
    args, message, cumprod_model, tmp_path, capsys
):
    garbage = tmp_path / "garbage.onnx"
    garbage.write_bytes(b"\x00\xffnot a model at all")
    empty = tmp_path / "empty.onnx"
    empty.write_bytes(b"")
    paths = {
        "missing": tmp_path / "missing.onnx",
        "garbage": garbage,
        "empty": empty,
        "model": cumprod_model,
    }
    assert main([a.format(**paths) for a in args]) == 1
    err = capsys.readouterr().err
    assert message in err
    assert err.count("\n") == 1 and err.startswith("ort-dml-ops: error: ")


def test_cli_errors_have_no_traceback_in_a_real_process(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "ort_dml_ops", "run", str(tmp_path / "nope.onnx")],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 1
    assert (
        proc.stderr.strip()
        == f"ort-dml-ops: error: {tmp_path / 'nope.onnx'}: no such file"
    )


def test_demo_runs_the_bundled_model(tmp_path, capsys):
    out = tmp_path / "demo.html"
    assert (
        main(
            [
                "demo",
                "--model",
                "ddpm_step",
                "--model",
                "moe_combine",
                "--provider",
                "cpu",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    text = capsys.readouterr().out
    # 15 / 1 / 2: ORT's own record on the DML lane (tests/data/placement/truth.json)
    assert "ddpm_step" in text and "15 / 1 / 2" in text and "all verified" in text
    assert (
        "MLFloat16 data type is not supported" in text
    )  # the original moe_combine: a recorded ORT limitation
    assert f"picture: {out}" in text
    page = out.read_text()
    assert (
        page.startswith("<!DOCTYPE html>")
        and page.count("<svg") == 4
        and "http" not in page.replace("http://www.w3.org/2000/svg", "")
    )


def test_run_check_indices_fails_loudly_on_an_out_of_range_index(tmp_path, capsys):
    b = GraphBuilder(opset=18)
    d, i, u = (
        b.input("d", "float32", [6]),
        b.input("i", "int64", [3]),
        b.input("u", "float32", [3]),
    )
    path = tmp_path / "scatter.onnx"
    onnx.save(
        b.build(outputs={"y": b.scatter_elements(d, i, u, axis=0, reduction="add")}),
        path,
    )
    np.save(tmp_path / "d.npy", np.zeros(6, np.float32))
    np.save(tmp_path / "u.npy", np.ones(3, np.float32))
    args = ["run", str(path), "--provider", "cpu", "--check-indices", "--json"] + [
        f"--input={n}={tmp_path / (n + '.npy')}" for n in "diu"
    ]
    np.save(tmp_path / "i.npy", np.array([0, 5, -1]))
    assert main(args) == 0
    assert json.loads(capsys.readouterr().out)["outputs"]["y"]["values"] == [
        1,
        0,
        0,
        0,
        0,
        2,
    ]
    np.save(tmp_path / "i.npy", np.array([0, 7, 1]))
    assert main(args) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "scatter index is out of range" in err
