"""Every verb: a user mistake is one line on stderr and exit 1 (or 2 for a usage error), never
a traceback, never a file written; `run --json` always prints valid JSON.

Each case here printed a traceback, ran anyway, or printed invalid JSON before.
"""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto as T
from onnx import helper, numpy_helper

from ort_dml_ops.cli import main
from tests.fs_fixtures import snapshot
from tests.test_writes import one_error_line

pytest_plugins = ["tests.fs_fixtures"]  # immutable_dir


def _save(m, path, opset=18):
    m.ir_version = 8
    onnx.save(m, path)
    return path


def _usage_error(argv, capsys) -> str:
    with pytest.raises(SystemExit) as info:
        main([str(a) for a in argv])
    assert info.value.code == 2
    return one_error_line(capsys)


def _error(argv, capsys, code=1) -> str:
    assert main([str(a) for a in argv]) == code
    return one_error_line(capsys)


# --------------------------------------------------------------------------------------
# run


@pytest.fixture()
def log_model(tmp_path):
    g = helper.make_graph(
        [helper.make_node("Log", ["x"], ["y"])],
        "g",
        [helper.make_tensor_value_info("x", T.FLOAT, [3])],
        [helper.make_tensor_value_info("y", T.FLOAT, [3])],
    )
    path = _save(
        helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]),
        tmp_path / "log.onnx",
    )
    np.save(tmp_path / "x.npy", np.array([-1, 0, 1], np.float32))
    return path


def test_run_json_is_valid_json_with_nan_and_infinity(log_model, tmp_path, capsys):
    assert (
        main(
            [
                "run",
                str(log_model),
                "--provider",
                "cpu",
                "--input",
                f"x={tmp_path / 'x.npy'}",
                "--json",
            ]
        )
        == 0
    )
    text = capsys.readouterr().out

    def refuse(name):
        raise ValueError(f"invalid JSON constant {name}")

    doc = json.loads(text, parse_constant=refuse)  # strict JSON: no bare NaN / Infinity
    with np.errstate(all="ignore"):
        want = np.log(
            np.array([-1, 0, 1], np.float32)
        )  # numpy as the reference: nan, -inf, 0
    assert doc["outputs"]["y"]["values"] == ["NaN", "-Infinity", float(want[2])]


def test_run_unknown_provider_is_an_error(log_model, tmp_path, capsys):
    line = _error(
        [
            "run",
            log_model,
            "--provider",
            "frobnicate",
            "--input",
            f"x={tmp_path / 'x.npy'}",
        ],
        capsys,
    )
    assert "frobnicate" in line
    assert capsys.readouterr().out == ""  # nothing ran


def test_run_duplicate_input_is_an_error(log_model, tmp_path, capsys):
    np.save(tmp_path / "x2.npy", np.array([5, 6, 7], np.float32))
    line = _error(
        [
            "run",
            log_model,
            "--input",
            f"x={tmp_path / 'x.npy'}",
            "--input",
            f"x={tmp_path / 'x2.npy'}",
        ],
        capsys,
    )
    assert "more than once" in line


def test_run_string_outputs_are_saved(tmp_path, capsys):
    g = helper.make_graph(
        [helper.make_node("ScatterElements", ["d", "i", "u"], ["y"], axis=0)],
        "g",
        [
            helper.make_tensor_value_info("d", T.STRING, [4]),
            helper.make_tensor_value_info("i", T.INT64, [2]),
            helper.make_tensor_value_info("u", T.STRING, [2]),
        ],
        [helper.make_tensor_value_info("y", T.STRING, [4])],
    )
    model = _save(
        helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)]),
        tmp_path / "s.onnx",
    )
    feeds = {
        "d": np.array(list("abcd")),
        "i": np.array([1, 3]),
        "u": np.array(["X", "Y"]),
    }
    for k, v in feeds.items():
        np.save(tmp_path / f"{k}.npy", v)
    (tmp_path / "out").mkdir()
    argv = [
        "run",
        str(model),
        "--provider",
        "cpu",
        "--output-dir",
        str(tmp_path / "out"),
    ]
    argv += [a for k in feeds for a in ("--input", f"{k}={tmp_path / f'{k}.npy'}")]
    assert main(argv) == 0, capsys.readouterr().err
    want = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(
        None, feeds
    )[0]
    assert np.load(tmp_path / "out" / "y.npy").tolist() == want.tolist()


# --------------------------------------------------------------------------------------
# convert


def _scatter(dtype, reduction, name="s", n=2):
    nodes = [
        helper.make_node(
            "ScatterElements",
            ["d" if k == 0 else f"y{k - 1}", "i", "u"],
            [f"y{k}"],
            name=name,
            reduction=reduction,
        )
        for k in range(n)
    ]
    g = helper.make_graph(
        nodes,
        "g",
        [
            helper.make_tensor_value_info("d", dtype, [4]),
            helper.make_tensor_value_info("i", T.INT64, [2]),
            helper.make_tensor_value_info("u", dtype, [2]),
        ],
        [helper.make_tensor_value_info(f"y{n - 1}", dtype, [4])],
    )
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])


@pytest.mark.parametrize(
    "case",
    ["string_scatter_add", "string_scatter_none"],
)
@pytest.mark.parametrize("target", ["dml", "cpu"])
def test_convert_either_works_or_says_why_in_one_line(case, target, tmp_path, capsys):
    """Exit 0 with a model ONNX Runtime runs to the original's values, or exit 1 in one line."""
    model = _scatter(T.STRING, case.rsplit("_", 1)[1], n=1)
    feeds = {"d": np.array(list("abcd"), object), "u": np.array(["X", "Y"], object)}
    feeds["i"] = np.array([1, 3])
    src = _save(model, tmp_path / "m.onnx")
    rc = main(["convert", str(src), "-o", str(tmp_path / "o.onnx"), "--target", target])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    if rc:
        assert rc == 1 and len(captured.err.strip().splitlines()) == 1, captured.err
        assert sorted(p.name for p in tmp_path.iterdir()) == ["m.onnx"]
        return
    import ort_dml_ops

    want = ort.InferenceSession(str(src), providers=["CPUExecutionProvider"]).run(
        None, feeds
    )[0]
    got = ort_dml_ops.InferenceSession(str(tmp_path / "o.onnx"), providers=["cpu"]).run(
        None, feeds
    )[0]
    assert got.tolist() == want.tolist()


def test_convert_duplicate_node_names_is_one_line(tmp_path, capsys):
    """ONNX Runtime refuses two nodes of one name (the reference); convert says so in one line
    (it used to lower both and crash in onnx_ir with a SerdeError, or hand back the model)."""
    src = _save(_scatter(T.FLOAT, "add"), tmp_path / "m.onnx")
    with pytest.raises(
        ort.capi.onnxruntime_pybind11_state.Fail, match="same node name"
    ):
        ort.InferenceSession(str(src), providers=["CPUExecutionProvider"])
    for target in ("dml", "cpu"):
        line = _error(
            ["convert", src, "-o", tmp_path / "o.onnx", "--target", target], capsys
        )
        assert "'s'" in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.onnx"]


def test_convert_value_defined_twice_is_one_line(tmp_path, capsys):
    g = helper.make_graph(
        [
            helper.make_node("Neg", ["x"], ["a"], name="n"),
            helper.make_node("Abs", ["x"], ["a"], name="m"),
            helper.make_node("CumSum", ["a", "ax"], ["y"]),
        ],
        "g",
        [helper.make_tensor_value_info("x", T.FLOAT, [4])],
        [helper.make_tensor_value_info("y", T.FLOAT, [4])],
        [numpy_helper.from_array(np.array(0, np.int64), "ax")],
    )
    src = _save(
        helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]),
        tmp_path / "m.onnx",
    )
    line = _error(["convert", src, "-o", tmp_path / "o.onnx"], capsys)
    assert "'a'" in line


# --------------------------------------------------------------------------------------
# bench and demo


@pytest.mark.parametrize("sizes", ["inf", "nan", "-1e5", "1e400", "abc"])
def test_bench_bad_sizes_are_usage_errors(sizes, capsys):
    assert "sizes" in _usage_error(["bench", "--sizes", sizes, "--no-gpu"], capsys)


@pytest.mark.parametrize(
    "flag,value",
    [("--nodes", "-1"), ("--budget", "-2"), ("--budget", "nan"), ("--reps", "0")],
)
def test_bench_negative_numbers_are_usage_errors(flag, value, capsys):
    assert flag.lstrip("-") in _usage_error(["bench", flag, value], capsys)


@pytest.mark.parametrize(
    "content",
    ['{"a": 1}', "[1, 2]", '{"meta": {}, "cases": [{"x": 1}]}', "\x93NUMPY binary"],
)
def test_bench_from_json_of_a_wrong_file(content, tmp_path, capsys):
    (tmp_path / "r.json").write_text(content)
    line = _error(["bench", "--from-json", tmp_path / "r.json"], capsys)
    assert "r.json" in line


def test_demo_out_in_a_read_only_folder(tmp_path, capsys, immutable_dir):
    ro = immutable_dir(tmp_path / "ro")
    before = snapshot(tmp_path)
    line = _error(
        [
            "demo",
            "--model",
            "position_ids",
            "--provider",
            "cpu",
            "--out",
            ro / "d.html",
        ],
        capsys,
    )
    assert "permission denied" in line
    assert snapshot(tmp_path) == before


def test_usage_errors_are_one_line_in_a_real_process():
    out = subprocess.run(
        [sys.executable, "-m", "ort_dml_ops", "bench", "--nodes", "-5"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 2
    assert len(out.stderr.strip().splitlines()) == 1 and out.stderr.startswith(
        "ort-dml-ops: error: "
    ), out.stderr


def test_run_check_indices_on_a_converted_model_is_refused(tmp_path, capsys):
    """The converted model's scatter is lowered: --check-indices would guard nothing (it ran
    and exited 0 before). It is refused in one line; on the original it guards."""
    g = helper.make_graph(
        [helper.make_node("ScatterElements", ["d", "i", "u"], ["y"], axis=0)],
        "g",
        [
            helper.make_tensor_value_info("d", T.FLOAT, [4]),
            helper.make_tensor_value_info("i", T.INT64, [2]),
            helper.make_tensor_value_info("u", T.FLOAT, [2]),
        ],
        [helper.make_tensor_value_info("y", T.FLOAT, [4])],
    )
    src = _save(
        helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)]),
        tmp_path / "m.onnx",
    )
    assert (
        main(
            ["convert", str(src), "-o", str(tmp_path / "c.onnx"), "--strategy", "lower"]
        )
        == 0
    )
    capsys.readouterr()
    for k, v in {
        "d": np.zeros(4, np.float32),
        "i": np.array([0, 9]),
        "u": np.ones(2, np.float32),
    }.items():
        np.save(tmp_path / f"{k}.npy", v)
    inputs = [a for k in "diu" for a in ("--input", f"{k}={tmp_path / f'{k}.npy'}")]
    line = _error(
        ["run", tmp_path / "c.onnx", "--provider", "cpu", "--check-indices", *inputs],
        capsys,
    )
    assert "no ScatterElements" in line
    line = _error(["run", src, "--provider", "cpu", "--check-indices", *inputs], capsys)
    assert "out of range" in line  # the original: the guard stops the bad index


def test_closed_stdout_pipe_is_no_traceback(log_model, tmp_path):
    """`ort-dml-ops ... | head -1`: the reader closes the pipe before the report is printed.
    The read end is closed before the process starts, so every write fails (EPIPE)."""
    import os

    read_end, write_end = os.pipe()
    os.close(read_end)
    out = tmp_path / "out.onnx"
    try:
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "ort_dml_ops",
                "convert",
                str(log_model),
                "-o",
                str(out),
            ],
            stdout=write_end,
            stderr=subprocess.PIPE,
            check=False,
        )
    finally:
        os.close(write_end)
    assert proc.returncode == 141, proc.stderr.decode()
    assert proc.stderr.decode() == ""
    onnx.checker.check_model(
        onnx.load(out), full_check=True
    )  # the work was done, whole
