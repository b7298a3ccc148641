"""ort_dml_ops.progress: a line on a terminal's stderr for work over the delay; nothing with
--json, nothing when stderr is not a terminal, nothing for short work. The terminal is a real
pseudo-terminal (pty), read back from its master side."""

from __future__ import annotations

import io
import os
import pty
import re
import subprocess
import sys
import time

import pytest

from ort_dml_ops import zoo
from ort_dml_ops.progress import Progress, note


def _read_all(fd: int) -> str:
    chunks = []
    while True:
        try:
            data = os.read(fd, 65536)
        except OSError:  # EIO: the slave side is closed and drained
            break
        if not data:
            break
        chunks.append(data)
    return b"".join(chunks).decode()


@pytest.fixture
def tty():
    master, slave = pty.openpty()
    stream = os.fdopen(slave, "w")
    yield master, stream
    if not stream.closed:
        stream.close()
    os.close(master)


def _drain(master, stream) -> str:
    stream.close()
    return _read_all(master)


def test_shown_on_a_tty_after_the_delay_and_erased(tty):
    master, stream = tty
    with Progress("convert m.onnx", stream=stream, delay=0.0, total=3) as p:
        p.step("blocks.1", done=1)
        time.sleep(0.6)
        note("blocks.2", done=2)  # library code, through the active Progress
        time.sleep(0.6)
    out = _drain(master, stream)
    assert (
        "convert m.onnx: [1/3] blocks.1" in out
        and "convert m.onnx: [2/3] blocks.2" in out
    )
    assert out.endswith("\r\x1b[K")  # the line erased: the next output starts clean


def test_silent_for_short_work_on_a_tty(tty):
    master, stream = tty
    with Progress("convert", stream=stream, delay=5.0) as p:
        p.step("converting")
        time.sleep(0.6)
    assert _drain(master, stream) == ""


def test_silent_with_json_on_a_tty(tty):
    master, stream = tty
    with Progress("bench", stream=stream, delay=0.0, json=True) as p:
        p.step("case 1")
        time.sleep(0.6)
    assert _drain(master, stream) == ""


def test_silent_when_not_a_tty():
    stream = io.StringIO()
    with Progress("bench", stream=stream, delay=0.0) as p:
        p.step("case 1")
        time.sleep(0.6)
    assert stream.getvalue() == ""


def test_note_without_progress_is_a_no_op():
    note("nothing listens")


def _cli_on_tty(args, tmp_path):
    """Run the CLI with stderr on a pty (stdout a pipe); returns (rc, stdout, what the terminal got)."""
    master, slave = pty.openpty()
    env = {**os.environ, "ORT_DML_OPS_PROGRESS_DELAY": "0"}
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "ort_dml_ops", *args],
            stdout=subprocess.PIPE,
            stderr=slave,
            cwd=tmp_path,
            env=env,
        )
        os.close(slave)
        out, _ = proc.communicate(timeout=300)
        return proc.returncode, out.decode(), _read_all(master)
    finally:
        os.close(master)


@pytest.mark.parametrize("json_flag", [False, True], ids=["table", "json"])
def test_cli_convert_progress_on_a_tty(tmp_path, json_flag):
    (tmp_path / "m.onnx").write_bytes(zoo.get("bincount").model_bytes())
    args = ["convert", "m.onnx", "-o", "out.onnx", "--verify"] + (
        ["--json"] if json_flag else []
    )
    rc, out, terminal = _cli_on_tty(args, tmp_path)
    assert rc == 0, terminal
    if json_flag:
        assert terminal == "" and out.lstrip().startswith("{")
    else:
        assert "convert m.onnx: " in terminal and terminal.endswith("\r\x1b[K")
        assert "convert m.onnx" not in out  # progress never reaches stdout


def test_cli_convert_silent_when_stderr_is_not_a_tty(tmp_path):
    (tmp_path / "m.onnx").write_bytes(zoo.get("bincount").model_bytes())
    env = {**os.environ, "ORT_DML_OPS_PROGRESS_DELAY": "0"}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "ort_dml_ops",
            "convert",
            "m.onnx",
            "-o",
            "out.onnx",
            "--verify",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        check=False,
    )
    assert proc.returncode == 0 and proc.stderr == ""


def test_cli_bench_progress_per_case_on_a_tty(tmp_path):
    args = [
        "bench",
        "--ops",
        "CumSum",
        "--sizes",
        "1000",
        "--dtypes",
        "float32",
        "--axes",
        "both",
        "--reps",
        "1",
        "--nodes",
        "0",
        "--no-gpu",
        "--no-memory",
    ]
    rc, out, terminal = _cli_on_tty(args, tmp_path)
    assert rc == 0 and out, terminal
    # each case as it finishes (the last may end before the next redraw), then the line erased
    assert re.search(r"bench: \[[12]/2\] CumSum float32", terminal), terminal
    assert terminal.endswith("\r\x1b[K")
