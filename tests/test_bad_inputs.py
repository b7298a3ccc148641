"""The bad-input corpus (tests/bad_inputs/corpus.py) through the Python API and the CLI.

Every case, on every path it is listed for:
* the Python API raises one exception with a one-line message (UserError for what we load
  and write; ONNX Runtime's own error types for what fails inside a run);
* the CLI (`ort_dml_ops.cli.main`, in-process; a few through a real subprocess too) exits
  non-zero with exactly one line on stderr, `ort-dml-ops: error: ...`, and no traceback;
* every file that existed before is byte-identical afterwards (sha256), and no new file
  appears (no partial output, no leftover temporary file).

The expected behaviour of each case is the `expect` text of its row (docs/robustness.md
prints the same table).
"""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

import ort_dml_ops
from ort_dml_ops import UserError
from ort_dml_ops.cli import main
from ort_dml_ops.modelio import save_model_atomic
from tests.bad_inputs import corpus
from tests.fs_fixtures import snapshot

ORT_ERRORS = (
    ort.capi.onnxruntime_pybind11_state.Fail,
    ort.capi.onnxruntime_pybind11_state.InvalidArgument,
    ort.capi.onnxruntime_pybind11_state.InvalidGraph,
    ort.capi.onnxruntime_pybind11_state.RuntimeException,
    ort.capi.onnxruntime_pybind11_state.NotImplemented,
    ort.capi.onnxruntime_pybind11_state.InvalidProtobuf,
    ort.capi.onnxruntime_pybind11_state.NoSuchFile,
)
CPU = ["CPUExecutionProvider"]


# --------------------------------------------------------------------------------------
# API paths: each takes the case's paths and must raise


def api_convert(p):
    ort_dml_ops.convert(p["model"], "dml")


def api_inspect(p):
    ort_dml_ops.inspect(p["model"], "dml")


def api_session(p):
    ort_dml_ops.InferenceSession(p["model"], providers=CPU)


def api_run(p):
    sess = ort_dml_ops.InferenceSession(p["model"], providers=CPU)
    names = {i.name for i in sess.get_inputs()}
    feeds = {k: np.load(v) for k, v in p.items() if k in names and Path(v).is_file()}
    sess.run(None, feeds)


def api_run_random(p):
    from ort_dml_ops.feeds import build_feeds

    sess = ort_dml_ops.InferenceSession(p["model"], providers=CPU)
    sess.run(None, build_feeds(sess, {}, True))


def api_save(p):
    from ort_dml_ops.modelio import load_model

    save_model_atomic(load_model(p["model"]), p["out"], source=p["model"])


def api_convert_save(p):
    result = ort_dml_ops.convert(p["model"], "dml")
    save_model_atomic(result.model, p["out"], source=p["model"])


LOAD = {"convert": api_convert, "inspect": api_inspect, "session": api_session}

# CLI argv templates ({key} is replaced by the case's path of that name)
CLI_CONVERT = ["convert", "{model}", "-o", "{out}"]
CLI_INSPECT = ["inspect", "{model}"]
CLI_RUN_RANDOM = ["run", "{model}", "--provider", "cpu", "--random-inputs"]
CLI_RUN = [
    "run",
    "{model}",
    "--provider",
    "cpu",
]  # + --input NAME=FILE for every .npy the case has
LOAD_CLI = [CLI_CONVERT, CLI_INSPECT, CLI_RUN_RANDOM]


@dataclasses.dataclass
class Case:
    name: str
    expect: str  # the expected behaviour, one line (docs/robustness.md)
    match: (
        str  # a substring every error message of the case contains (case-insensitive)
    )
    api: dict  # path name -> callable(paths) that must raise
    cli: list  # argv templates
    api_raises: tuple = (UserError,)
    api_match: str | None = None  # when the API's message differs from the CLI's
    xfail: dict = dataclasses.field(
        default_factory=dict
    )  # path (API name or CLI verb) -> bug it shows


CASES = [
    Case("missing_file", "refused: 'no such file'", "no such file", LOAD, LOAD_CLI),
    Case("directory", "refused: 'is a directory'", "is a directory", LOAD, LOAD_CLI),
    Case("empty_file", "refused: 'the file is empty'", "empty", LOAD, LOAD_CLI),
    Case(
        "truncated_protobuf",
        "refused: not an ONNX model (protobuf decode failed)",
        "not an onnx model",
        LOAD,
        LOAD_CLI,
    ),
    Case(
        "garbage_bytes",
        "refused: not an ONNX model",
        "not an onnx model",
        LOAD,
        LOAD_CLI,
    ),
    Case(
        "text_file", "refused: not an ONNX model", "not an onnx model", LOAD, LOAD_CLI
    ),
    Case(
        "checker_fails",
        "refused: the model fails the ONNX checker, naming the undefined input",
        "ghost",
        LOAD,
        LOAD_CLI,
    ),
    Case(
        "unknown_op",
        "refused: no schema / kernel for NoSuchOp",
        "nosuchop",
        {"convert": api_convert, "session": api_session},
        [CLI_CONVERT, CLI_RUN_RANDOM],
    ),
    Case(
        "unknown_domain_op",
        "refused at session creation: no kernel for com.example::Frobnicate",
        "frobnicate",
        {"session": api_session},
        [CLI_RUN_RANDOM],
    ),
    Case(
        "external_outside_folder",
        "refused: external data outside the model's folder",
        "outside",
        LOAD,
        LOAD_CLI,
    ),
    Case(
        "external_absolute_path",
        "refused: external data outside the model's folder",
        "outside",
        LOAD,
        LOAD_CLI,
    ),
    Case(
        "external_missing_file",
        "refused: the external data file is missing",
        "weights.bin",
        LOAD,
        LOAD_CLI,
    ),
    Case(
        "missing_input",
        "run refused: missing input 'x'",
        "'x'",
        {"run": api_run},
        [CLI_RUN],
        api_raises=(ValueError,),
        api_match="missing",
    ),
    Case(
        "axis_out_of_range_native",
        "run fails (ORT CumSum): axis out of range",
        "axis",
        {"run": api_run},
        [CLI_RUN],
        api_raises=ORT_ERRORS,
    ),
    Case(
        "axis_out_of_range_fallback",
        "run fails (fallback): axis 5 is out of range for rank 2",
        "out of range",
        {"run": api_run},
        [CLI_RUN],
        api_raises=ORT_ERRORS,
    ),
    Case(
        "axis_out_of_range_constant",
        "convert refuses (axis 7, rank 2); run fails: axis out of range",
        "out of range",
        {"convert": api_convert, "run": api_run},
        [CLI_CONVERT, CLI_RUN],
        api_raises=(UserError, *ORT_ERRORS),
    ),
    Case(
        "axis_not_scalar",
        "run fails (fallback): the axis must be a scalar or one element",
        "axis",
        {"run": api_run},
        [CLI_RUN],
        api_raises=ORT_ERRORS,
    ),
    Case(
        "axis_not_integer",
        "refused at load: the axis must be int32/int64",
        "axis",
        {"convert": api_convert, "session": api_session},
        [CLI_CONVERT, CLI_RUN],
        api_raises=(UserError, *ORT_ERRORS),
        api_match="tensor(float)",
    ),
    Case(
        "axis_not_integer_fallback",
        "refused: the axis must be int32/int64",
        "axis",
        {"session": api_session},
        [CLI_RUN],
        api_raises=(UserError, *ORT_ERRORS),
    ),
    Case(
        "indices_out_of_range_fallback",
        "run fails (fallback): index 9 is out of range for axis 0 of size 4",
        "index 9",
        {"run": api_run},
        [CLI_RUN],
        api_raises=ORT_ERRORS,
    ),
    Case(
        "indices_out_of_range_native",
        "run fails (ORT ScatterElements): index out of bounds",
        "indices",
        {"run": api_run},
        [CLI_RUN],
        api_raises=ORT_ERRORS,
    ),
    Case(
        "indices_out_of_range_lowered_checked",
        "run fails (convert --check-indices guard): Gather index out of range",
        "out of",
        {"run": api_run},
        [CLI_RUN],
        api_raises=ORT_ERRORS,
    ),
    Case(
        "shapes_mismatch_fallback",
        "run fails (fallback): indices and updates must have one shape",
        "shape",
        {"run": api_run},
        [CLI_RUN],
        api_raises=ORT_ERRORS,
    ),
    Case(
        "shapes_mismatch_native",
        "run fails (ORT ScatterElements): indices and updates shapes differ",
        "dimensions",
        {"run": api_run},
        [CLI_RUN],
        api_raises=ORT_ERRORS,
    ),
    Case(
        "shapes_mismatch_static",
        "convert refuses (shape inference: indices [2,5] vs updates [2,3]); ORT loads it, the run fails",
        "dimensions",
        {"convert": api_convert, "run": api_run_random},
        [CLI_CONVERT, CLI_RUN_RANDOM],
        api_raises=(UserError, *ORT_ERRORS),
    ),
    Case(
        "scatter_axis_out_of_range",
        "convert refuses (axis 3, rank 2); ORT loads it, the run fails",
        "axis",
        {"convert": api_convert, "run": api_run_random},
        [CLI_CONVERT, CLI_RUN_RANDOM],
        api_raises=(UserError, *ORT_ERRORS),
    ),
    Case(
        "output_equals_input",
        "refused: the output path is the input model",
        "is the input model",
        {"save": api_save, "convert+save": api_convert_save},
        [CLI_CONVERT],
    ),
    Case(
        "output_equals_input_other_spelling",
        "refused (resolved paths compared)",
        "is the input model",
        {"save": api_save},
        [CLI_CONVERT],
    ),
    Case(
        "output_symlink_to_input",
        "refused (a symlink to the input)",
        "is the input model",
        {"save": api_save},
        [CLI_CONVERT],
    ),
    Case(
        "output_folder_missing",
        "refused: the output folder does not exist",
        "does not exist",
        {"save": api_save},
        [CLI_CONVERT],
    ),
    Case(
        "output_parent_is_file",
        "refused: the output folder is a file",
        "not a folder",
        {"save": api_save},
        [CLI_CONVERT],
    ),
    Case(
        "output_is_directory",
        "refused: the output path is a directory",
        "is a directory",
        {"save": api_save},
        [CLI_CONVERT],
    ),
    Case(
        "output_read_only_folder",
        "refused: permission denied (immutable folder), no temporary file left",
        "permission denied",
        {"save": api_save},
        [CLI_CONVERT],
    ),
    Case(
        "report_equals_input",
        "refused before anything is written: the report path is a model path",
        "report path",
        {},
        [CLI_CONVERT + ["--report", "{report}"]],
    ),
    Case(
        "input_npy_missing",
        "run refused: the .npy file does not exist",
        "no such file",
        {},
        [CLI_RUN],
    ),
    Case(
        "input_npy_garbage",
        "run refused: not a .npy array",
        "not a .npy",
        {},
        [CLI_RUN],
    ),
    Case(
        "input_wrong_dtype",
        "run fails: float64 given for a float32 input",
        "type",
        {"run": api_run},
        [CLI_RUN],
        api_raises=ORT_ERRORS,
    ),
    Case(
        "input_wrong_rank",
        "run fails: rank 3 given for a rank-2 input",
        "rank",
        {"run": api_run},
        [CLI_RUN],
        api_raises=ORT_ERRORS,
    ),
    Case(
        "output_dir_missing",
        "run refused: the output folder does not exist",
        "does not exist",
        {},
        [CLI_RUN + ["--output-dir", "{out_dir}"]],
    ),
]
BY_NAME = {c.name: c for c in CASES}


def test_corpus_size_and_builders():
    assert len(CASES) >= 25
    assert set(BY_NAME) <= set(corpus.BUILDERS), set(BY_NAME) - set(corpus.BUILDERS)
    assert set(corpus.BUILDERS) <= set(BY_NAME), set(corpus.BUILDERS) - set(BY_NAME)


# --------------------------------------------------------------------------------------
# harness


@pytest.fixture()
def case_dir(tmp_path):
    made = []

    def build(name):
        paths = corpus.BUILDERS[name](tmp_path)
        if "immutable" in paths:
            subprocess.run(["chattr", "+i", str(paths["immutable"])], check=True)
            made.append(paths["immutable"])
        return paths

    yield build
    for p in made:
        subprocess.run(["chattr", "-i", str(p)], check=False)


def _argv(template, paths):
    argv = [str(t).format(**{k: str(v) for k, v in paths.items()}) for t in template]
    if template in (CLI_RUN,) or template[:4] == CLI_RUN:
        for key, value in paths.items():
            if key not in ("model", "out", "report", "out_dir", "immutable"):
                argv += ["--input", f"{key}={value}"]
    return argv


def _one_line(text: str) -> str:
    lines = [ln for ln in text.splitlines() if ln.strip()]
    assert len(lines) == 1, f"expected one line, got {len(lines)}:\n{text}"
    assert "Traceback" not in text
    return lines[0]


def _marks(case, key):
    reason = case.xfail.get(key)
    return [pytest.mark.xfail(strict=True, reason=reason)] if reason else []


API_PARAMS = [
    pytest.param(c.name, path, id=f"{c.name}-{path}", marks=_marks(c, path))
    for c in CASES
    for path in c.api
]
CLI_PARAMS = [
    pytest.param(
        c.name, i, id=f"{c.name}-{c.cli[i][0]}{i}", marks=_marks(c, c.cli[i][0])
    )
    for c in CASES
    for i in range(len(c.cli))
]


@pytest.mark.parametrize("name,path", API_PARAMS)
def test_api(name, path, case_dir):
    case = BY_NAME[name]
    paths = case_dir(name)
    folder = (
        Path(paths["model"]).parent.parent
        if "model_dir" in str(paths["model"])
        else Path(paths["model"]).parent
    )
    before = snapshot(folder)
    with pytest.raises(case.api_raises) as info:
        case.api[path](paths)
    message = _one_line(str(info.value))
    assert (case.api_match or case.match).lower() in message.lower(), message
    assert snapshot(folder) == before


@pytest.mark.parametrize("name,index", CLI_PARAMS)
def test_cli(name, index, case_dir, capsys):
    case = BY_NAME[name]
    paths = case_dir(name)
    template = case.cli[index]
    if "{out}" in template and "out" not in paths:
        paths["out"] = Path(paths["model"]).parent / "converted.onnx"
    folder = (
        Path(paths["model"]).parent.parent
        if "model_dir" in str(paths["model"])
        else Path(paths["model"]).parent
    )
    before = snapshot(folder)
    rc = main(_argv(template, paths))
    captured = capsys.readouterr()
    assert rc != 0, captured
    line = _one_line(captured.err)
    assert line.startswith("ort-dml-ops: error: "), line
    assert case.match.lower() in line.lower(), line
    assert snapshot(folder) == before, "files changed or appeared"


@pytest.mark.parametrize(
    "name",
    [
        "missing_file",
        "truncated_protobuf",
        "external_outside_folder",
        "output_equals_input",
        "indices_out_of_range_fallback",
    ],
)
def test_cli_subprocess(name, case_dir):
    """The real console entry point: exit code 1, one line on stderr."""
    case = BY_NAME[name]
    paths = case_dir(name)
    template = case.cli[0]
    if "{out}" in template and "out" not in paths:
        paths["out"] = Path(paths["model"]).parent / "converted.onnx"
    out = subprocess.run(
        [sys.executable, "-m", "ort_dml_ops", *_argv(template, paths)],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 1, out
    line = _one_line(out.stderr)
    assert case.match.lower() in line.lower()
