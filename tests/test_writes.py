"""Every file the CLI creates goes through one write path (ort_dml_ops/writes.py).

Pinned here, end to end through the CLI (in-process `cli.main`, and real subprocesses for
signals): a target that is, or links to, an input or an external-data file of the input or
of the output is refused; two outputs never map to one file; every target is checked before
anything is written, so a refusal leaves nothing behind; SIGTERM/SIGINT during a write leave
no temporary file and exit 128+signum; files follow the umask. Every check compares files
byte for byte (sha256) before and after.
"""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import onnx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

from ort_dml_ops import UserError
from ort_dml_ops.cli import main
from ort_dml_ops.modelio import save_model_atomic
from tests.fs_fixtures import snapshot

pytest_plugins = ["tests.fs_fixtures"]  # immutable_dir, tiny_fs
ROOT = Path(__file__).resolve().parent.parent


def _cumsum_model(n: int = 4, weights: np.ndarray | None = None) -> onnx.ModelProto:
    w = weights if weights is not None else np.arange(n, dtype=np.float32)
    g = helper.make_graph(
        [
            helper.make_node("Add", ["x", "w"], ["s"]),
            helper.make_node("CumSum", ["s", "ax"], ["y"]),
        ],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [len(w)])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [len(w)])],
        [
            numpy_helper.from_array(w, "w"),
            numpy_helper.from_array(np.array(0, np.int64), "ax"),
        ],
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def external_model(
    folder: Path, data_name: str = "weights.bin", name: str = "m.onnx"
) -> Path:
    """A CumSum model whose initializers live in `data_name` (any name, not only m.onnx.data)."""
    path = folder / name
    onnx.save(
        _cumsum_model(),
        path,
        save_as_external_data=True,
        all_tensors_to_one_file=True,
        location=data_name,
        size_threshold=0,
    )
    return path


def one_error_line(capsys) -> str:
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith("ort-dml-ops: error: "), lines[0]
    return lines[0]


def refused(argv, folder, capsys, match: str) -> str:
    before = snapshot(folder)
    rc = main([str(a) for a in argv])
    line = one_error_line(capsys)
    assert rc == 1, line
    assert match.lower() in line.lower(), line
    assert snapshot(folder) == before, "files changed or appeared"
    return line


# --------------------------------------------------------------------------------------
# convert: the output and the report never land on an input or on each other


def test_convert_output_onto_external_data_of_another_name(tmp_path, capsys):
    model = external_model(tmp_path, "weights.bin")
    refused(
        ["convert", model, "-o", tmp_path / "weights.bin"],
        tmp_path,
        capsys,
        "weights.bin",
    )


def test_convert_output_onto_input_data_named_like_the_output_data(tmp_path, capsys):
    """`-o m.onnx.data`: the output's own data would be m.onnx.data.data; the model file itself
    would overwrite the input's data file m.onnx.data."""
    model = external_model(tmp_path, "m.onnx.data")
    refused(
        ["convert", model, "-o", tmp_path / "m.onnx.data"],
        tmp_path,
        capsys,
        "m.onnx.data",
    )


def test_convert_output_data_onto_input_data(tmp_path, capsys):
    """`-o x.onnx` while the input's data is x.onnx.data: the output's .data would overwrite it."""
    model = external_model(tmp_path, "x.onnx.data")
    refused(
        ["convert", model, "-o", tmp_path / "x.onnx"], tmp_path, capsys, "x.onnx.data"
    )


@pytest.mark.parametrize(
    "target",
    [
        "input_data",
        "hard_link_input",
        "symlink_input",
        "symlink_data",
        "dotdot_input",
        "output_data",
        "output",
    ],
)
def test_convert_report_never_lands_on_a_model_file(target, tmp_path, capsys):
    model = external_model(tmp_path, "weights.bin")
    out = tmp_path / "out.onnx"
    (tmp_path / "sub").mkdir()
    if target == "hard_link_input":
        os.link(model, tmp_path / "hard.onnx")
    if target == "symlink_input":
        os.symlink(model, tmp_path / "sym.onnx")
    if target == "symlink_data":
        os.symlink(tmp_path / "weights.bin", tmp_path / "sym.bin")
    report = {
        "input_data": tmp_path / "weights.bin",
        "hard_link_input": tmp_path / "hard.onnx",
        "symlink_input": tmp_path / "sym.onnx",
        "symlink_data": tmp_path / "sym.bin",
        "dotdot_input": tmp_path / "sub" / ".." / "m.onnx",
        "output_data": tmp_path / "out.onnx.data",
        "output": tmp_path / "sub" / ".." / "out.onnx",
    }[target]
    refused(
        ["convert", model, "-o", out, "--report", report], tmp_path, capsys, "report"
    )


def test_convert_output_hard_link_to_input_refused(tmp_path, capsys):
    model = external_model(tmp_path)
    os.link(model, tmp_path / "hard.onnx")
    refused(["convert", model, "-o", tmp_path / "hard.onnx"], tmp_path, capsys, "input")


def test_convert_report_in_read_only_folder_writes_nothing(
    tmp_path, capsys, immutable_dir
):
    """The report is checked (a temporary file made) before the model is written: no output."""
    model = external_model(tmp_path)
    ro = immutable_dir(tmp_path / "ro")
    refused(
        ["convert", model, "-o", tmp_path / "out.onnx", "--report", ro / "r.json"],
        tmp_path,
        capsys,
        "permission denied",
    )


def test_convert_report_is_a_directory(tmp_path, capsys):
    model = external_model(tmp_path)
    (tmp_path / "rep").mkdir()
    refused(
        ["convert", model, "-o", tmp_path / "out.onnx", "--report", tmp_path / "rep"],
        tmp_path,
        capsys,
        "directory",
    )


@pytest.mark.parametrize("mask", [0o022, 0o077, 0o002])
def test_files_follow_the_umask(mask, tmp_path, capsys):
    model = external_model(tmp_path)
    old = os.umask(mask)
    try:
        assert (
            main(
                [
                    "convert",
                    str(model),
                    "-o",
                    str(tmp_path / "out.onnx"),
                    "--report",
                    str(tmp_path / "r.json"),
                ]
            )
            == 0
        )
    finally:
        os.umask(old)
    for name in ("out.onnx", "out.onnx.data", "r.json"):
        assert (tmp_path / name).stat().st_mode & 0o777 == 0o666 & ~mask, name


# --------------------------------------------------------------------------------------
# run --output-dir


def two_outputs_model(path: Path, names=("a/b", "a_b")) -> Path:
    g = helper.make_graph(
        [
            helper.make_node("CumSum", ["x", "ax"], [names[0]]),
            helper.make_node("Neg", ["x"], [names[1]]),
        ],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, [4]) for n in names],
        [numpy_helper.from_array(np.array(0, np.int64), "ax")],
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, path)
    return path


def test_run_outputs_that_would_share_a_file_are_both_kept(tmp_path, capsys):
    """`a/b` and `a_b` used to both become a_b.npy; the names are now percent-encoded."""
    model = two_outputs_model(tmp_path / "m.onnx")
    x = np.array([1, 2, 3, 4], np.float32)
    np.save(tmp_path / "x.npy", x)
    out = tmp_path / "out"
    out.mkdir()
    assert (
        main(
            [
                "run",
                str(model),
                "--provider",
                "cpu",
                "--input",
                f"x={tmp_path / 'x.npy'}",
                "--output-dir",
                str(out),
            ]
        )
        == 0
    )
    assert sorted(p.name for p in out.iterdir()) == ["a%2Fb.npy", "a_b.npy"]
    assert np.array_equal(np.load(out / "a%2Fb.npy"), np.cumsum(x))
    assert np.array_equal(np.load(out / "a_b.npy"), -x)


def test_run_output_onto_an_input_file_refused(tmp_path, capsys):
    model = two_outputs_model(tmp_path / "m.onnx", names=("y", "z"))
    out = tmp_path / "out"
    out.mkdir()
    np.save(
        out / "y.npy", np.array([1, 2, 3, 4], np.float32)
    )  # the input file is named like output y
    refused(
        [
            "run",
            model,
            "--provider",
            "cpu",
            "--input",
            f"x={out / 'y.npy'}",
            "--output-dir",
            out,
        ],
        tmp_path,
        capsys,
        "y.npy",
    )


def test_run_output_dir_read_only(tmp_path, capsys, immutable_dir):
    model = two_outputs_model(tmp_path / "m.onnx")
    ro = immutable_dir(tmp_path / "ro")
    refused(
        ["run", model, "--provider", "cpu", "--random-inputs", "--output-dir", ro],
        tmp_path,
        capsys,
        "permission denied",
    )


def test_run_output_dir_full(tmp_path, capsys, tiny_fs):
    """A 64 KiB tmpfs: the second output does not fit; nothing is left, not even the first."""
    g = helper.make_graph(
        [
            helper.make_node("Identity", ["x"], ["a"]),
            helper.make_node("Neg", ["x"], ["b"]),
        ],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [10000])],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, [10000]) for n in "ab"],
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, tmp_path / "m.onnx")
    full = tiny_fs(tmp_path / "full")
    before = snapshot(tmp_path)
    rc = main(
        [
            "run",
            str(tmp_path / "m.onnx"),
            "--provider",
            "cpu",
            "--random-inputs",
            "--output-dir",
            str(full),
        ]
    )
    line = one_error_line(capsys)
    assert rc == 1 and "no space left" in line.lower(), line
    assert snapshot(tmp_path) == before
    assert list(full.iterdir()) == []


# --------------------------------------------------------------------------------------
# signals during a write: nothing left behind, exit 128+signum


def big_model(path: Path, mib: int = 96) -> Path:
    code = (
        f"import numpy as np, onnx, sys; sys.path.insert(0, {str(ROOT)!r}); from tests.test_writes import _cumsum_model;"
        f"onnx.save(_cumsum_model(weights=np.ones({mib << 18}, np.float32)), {str(path)!r})"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
    return path


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_signal_during_convert_write_leaves_nothing(signum, tmp_path):
    src = tmp_path / "in"
    src.mkdir()
    model = big_model(src / "m.onnx")
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "ort_dml_ops",
            "convert",
            str(model),
            "-o",
            str(out_dir / "o.onnx"),
            "--strategy",
            "lower",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if any(p.name.endswith(".tmp") for p in out_dir.iterdir()):
            break
        time.sleep(0.002)
    assert proc.poll() is None, "the process ended before any temporary file appeared"
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 128 + signum, (proc.returncode, err)
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert list(out_dir.iterdir()) == []


# --------------------------------------------------------------------------------------
# property: fuzzed output paths against input and external-data paths

_FOLDER_FILES = (
    "m.onnx",
    "weights.bin",
    "hard.onnx",
    "sym.onnx",
    "sym.bin",
    "new.onnx",
    "other.bin",
    "m.onnx.data",
)
_SPELLINGS = (
    "{d}/{f}",
    "{d}/./{f}",
    "{d}/sub/../{f}",
    "{d}//{f}",
    "{d}/sub/../sub/../{f}",
    "{d}/symdir/{f}",
)


@pytest.fixture(scope="module")
def fuzz_folder(tmp_path_factory):
    d = tmp_path_factory.mktemp("fuzz")
    model = external_model(d, "weights.bin")
    (d / "sub").mkdir()
    os.link(model, d / "hard.onnx")
    os.symlink(model, d / "sym.onnx")
    os.symlink(d / "weights.bin", d / "sym.bin")
    os.symlink(d, d / "symdir")
    return d


def _identity(p: Path):
    try:
        st_ = os.stat(p)
    except FileNotFoundError:
        return ("new", os.path.realpath(p))
    return (st_.st_dev, st_.st_ino)


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    name=st.sampled_from(_FOLDER_FILES),
    spelling=st.sampled_from(_SPELLINGS),
    relative=st.booleans(),
)
def test_fuzzed_output_paths_never_overwrite_an_input(
    fuzz_folder, name, spelling, relative
):
    """Refused exactly when the output or its .data is (a link to) the model or its data."""
    d = fuzz_folder
    target = Path(spelling.format(d=d, f=name))
    if relative:
        target = (
            Path(os.path.relpath(target, os.getcwd()))
            if not str(target).startswith("//")
            else target
        )
    model = onnx.load(d / "m.onnx", load_external_data=False)
    protected = {_identity(d / "m.onnx"), _identity(d / "weights.bin")}
    data_target = Path(str(target) + ".data")
    expect_refused = (
        _identity(target) in protected or _identity(data_target) in protected
    )
    before = {
        p: hashlib.sha256((d / p).read_bytes()).hexdigest()
        for p in ("m.onnx", "weights.bin")
    }
    try:
        save_model_atomic(model, target, source=d / "m.onnx", external_data_dir=d)
        written = True
    except UserError as exc:
        assert len(str(exc).splitlines()) == 1
        written = False
    assert written != expect_refused, (target, expect_refused)
    assert {
        p: hashlib.sha256((d / p).read_bytes()).hexdigest()
        for p in ("m.onnx", "weights.bin")
    } == before
    if written:
        saved = onnx.load(target)  # loads, with its own data
        assert numpy_helper.to_array(saved.graph.initializer[0]).tolist() == [
            0,
            1,
            2,
            3,
        ]
        for p in (target, data_target):
            if p.exists() and _identity(p) not in protected:
                p.unlink()
    assert not [p for p in d.iterdir() if p.name.endswith(".tmp")]


@settings(max_examples=200, deadline=None)
@given(
    names=st.lists(
        st.text(min_size=1, max_size=20), min_size=1, max_size=6, unique=True
    )
)
def test_fuzzed_output_names_map_to_distinct_files_inside_the_folder(names):
    """run --output-dir: distinct output names never share a file, and none leaves the folder."""
    from ort_dml_ops.commands.run import output_file_name

    files = [output_file_name(n) for n in names]
    assert len(set(files)) == len(files)
    for f in files:
        assert (
            "/" not in f
            and "\0" not in f
            and f not in (".", "..")
            and f.endswith(".npy")
        )
        assert os.path.basename(os.path.normpath(os.path.join("out", f))) == f
