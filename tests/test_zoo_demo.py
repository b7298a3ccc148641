"""The demo verb beyond the CLI smoke test: JSON output, the picture, and exit code 1 on a mismatch."""

import json

from ort_dml_ops import zoo
from ort_dml_ops.cli import main
from ort_dml_ops.commands import demo_html


def test_demo_json_and_picture(tmp_path, capsys):
    out = tmp_path / "pic.html"
    assert (
        main(
            [
                "demo",
                "--json",
                "--provider",
                "cpu",
                "--model",
                "scatter_reduce_amax",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    data = json.loads(capsys.readouterr().out)
    (m,) = data["models"]
    assert data["ok"] and data["picture"] == str(out.resolve())
    assert (
        m["name"] == "scatter_reduce_amax"
        and m["converted"] == "ok"
        and m["original"] == "ok"
    )
    # ORT's own record on the DML lane (tests/data/placement/truth.json)
    assert m["before"] == {"gpu_nodes": 2, "cpu_nodes": 2, "copies": 1}
    # its two scatters read the same indices: their index guards are one computation after ORT's
    # common-subexpression elimination, so one flag goes to the host, where two scalar nodes are
    assert m["after"]["cpu_nodes"] == 2 and m["after"]["copies"] == 1
    page = out.read_text()
    assert (
        page.count("<svg") == 2
        and demo_html.COLOURS["cpu"] in page
        and "<script" not in page
    )


def test_demo_exits_1_when_an_output_does_not_verify(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(
        zoo.ZooModel, "compare", lambda self, outputs: ["y: 3 of 4 values off"]
    )
    assert (
        main(
            [
                "demo",
                "--provider",
                "cpu",
                "--model",
                "bincount",
                "--out",
                str(tmp_path / "p.html"),
            ]
        )
        == 1
    )
    text = capsys.readouterr().out
    assert "converted: FAIL: y: 3 of 4 values off" in text and "FAILED" in text
    assert (tmp_path / "p.html").exists()


def test_demo_refuses_a_missing_output_folder(tmp_path, capsys):
    assert main(["demo", "--out", str(tmp_path / "no" / "pic.html")]) == 1
    err = capsys.readouterr().err
    assert (
        err.startswith("ort-dml-ops: error: ")
        and "does not exist" in err
        and err.count("\n") == 1
    )
