"""Unit tests of the lane runner's parsing and discovery (no Wine needed; not marked dml)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from dml_lane import driver as lane
from dml_lane.driver import CPU, DML

LOG = """\
2026-11-22 06:32:58.4301258 [I:onnxruntime:case0001, transformer_memcpy.cc:393 onnxruntime::TransformerMemcpyImpl::AddCopyNode] Add MemcpyFromHost after s for DmlExecutionProvider
2026-11-22 06:32:58.4302383 [I:onnxruntime:case0001, transformer_memcpy.cc:393 onnxruntime::TransformerMemcpyImpl::AddCopyNode] Add MemcpyToHost before m for DmlExecutionProvider
2026-11-22 06:32:58.4305806 [V:onnxruntime:case0001, session_state.cc:1307 onnxruntime::VerifyEachNodeIsAssignedToAnEp] Node placements
2026-11-22 06:32:58.4306615 [V:onnxruntime:case0001, session_state.cc:1313 onnxruntime::VerifyEachNodeIsAssignedToAnEp]  Node(s) placed on [CPUExecutionProvider]. Number of nodes: 1
2026-11-22 06:32:58.4307650 [V:onnxruntime:case0001, session_state.cc:1315 onnxruntime::VerifyEachNodeIsAssignedToAnEp]   ScatterElements (scat)
2026-11-22 06:32:58.4308494 [V:onnxruntime:case0001, session_state.cc:1313 onnxruntime::VerifyEachNodeIsAssignedToAnEp]  Node(s) placed on [DmlExecutionProvider]. Number of nodes: 4
2026-11-22 06:32:58.4309521 [V:onnxruntime:case0001, session_state.cc:1315 onnxruntime::VerifyEachNodeIsAssignedToAnEp]   DmlFusedNode_0_0 (DmlFusedNode_0_0)
2026-11-22 06:32:58.4310418 [V:onnxruntime:case0001, session_state.cc:1315 onnxruntime::VerifyEachNodeIsAssignedToAnEp]   DmlFusedNode_1_2 (DmlFusedNode_1_2)
2026-11-22 06:32:58.4311317 [V:onnxruntime:case0001, session_state.cc:1315 onnxruntime::VerifyEachNodeIsAssignedToAnEp]   MemcpyFromHost (Memcpy)
2026-11-22 06:32:58.4312148 [V:onnxruntime:case0001, session_state.cc:1315 onnxruntime::VerifyEachNodeIsAssignedToAnEp]   MemcpyToHost (Memcpy_token_0)
2026-11-22 06:32:58.4312148 [V:onnxruntime:case0002, session_state.cc:1315 onnxruntime::VerifyEachNodeIsAssignedToAnEp]   Other (other)
"""


def test_split_and_parse_placements():
    per = lane._split_log(LOG)
    assert set(per) == {"0001", "0002"}
    placed, copies, all_on = lane.parse_placements(per["0001"])
    assert (
        placed["scat"] == CPU
        and placed["DmlFusedNode_0_0"] == DML
        and placed["Memcpy"] == DML
    )
    assert copies == [
        "MemcpyFromHost after s for DmlExecutionProvider",
        "MemcpyToHost before m for DmlExecutionProvider",
    ]
    assert all_on is None


def test_fused_nodes_resolve_to_original_names():
    placed, _, all_on = lane.parse_placements(lane._split_log(LOG)["0001"])
    placement, unresolved, fused = lane._resolve(
        ["cs", "mul1", "scat", "add1"], placed, all_on, True
    )
    assert placement == {"cs": DML, "mul1": DML, "scat": CPU, "add1": DML}
    assert fused == ["DmlFusedNode_0_0", "DmlFusedNode_1_2"] and unresolved == []
    # with graph optimizations on, a missing node may have been optimized away: not guessed
    placement, unresolved, _ = lane._resolve(["cs", "scat"], placed, all_on, False)
    assert placement == {"scat": CPU} and unresolved == ["cs"]


def test_all_nodes_on_one_provider():
    msgs = [" All nodes placed on [DmlExecutionProvider]. Number of nodes: 1"]
    placed, _, all_on = lane.parse_placements(msgs)
    assert all_on == DML
    placement, unresolved, _ = lane._resolve(["a"], placed, all_on, True)
    assert placement == {"a": DML} and not unresolved


def test_lane_unavailable_reason(tmp_path, monkeypatch):
    monkeypatch.setenv("DML_LANE", str(tmp_path))
    ok, why = lane.lane_available()
    assert not ok and "make dml-lane" in why
    monkeypatch.setenv("ORT_DML_OPS_NO_LANE", "1")
    assert lane.lane_available() == (False, "ORT_DML_OPS_NO_LANE=1")


def test_lane_on_wine8_direct3d_is_not_available(tmp_path, monkeypatch):
    """A lane whose run.sh does not load Wine 10's Direct3D 12 stack is refused, not used."""
    monkeypatch.setenv("DML_LANE", str(tmp_path))
    monkeypatch.delenv("ORT_DML_OPS_NO_LANE", raising=False)
    (tmp_path / "cp311" / "Lib" / "site-packages" / "onnxruntime").mkdir(parents=True)
    (tmp_path / "smoke.ok").write_text("x\n")
    (tmp_path / "run.sh").write_text(
        'export WINEDLLOVERRIDES="mscoree,mshtml=;winedbg.exe=d"\n'
    )
    ok, why = lane.lane_available()
    if "not on PATH" in why:
        return  # no Wine on this machine: the earlier check answers first
    assert not ok and "Wine 8's own Direct3D 12" in why and "make dml-lane" in why
    (tmp_path / "run.sh").write_text(
        'export WINEDLLOVERRIDES="mscoree,mshtml=;d3d12,d3d12core,dxgi,wined3d=n"\n'
    )
    assert lane.lane_available() == (True, "")


def _fake_lane(path):
    """A lane folder that passes lane_available()'s checks (nothing of it is ever run here)."""
    (path / "cp311" / "Lib" / "site-packages" / "onnxruntime").mkdir(parents=True)
    (path / "smoke.ok").write_text("x\n")
    (path / "run.sh").write_text(
        'export WINEDLLOVERRIDES="d3d12,d3d12core,dxgi,wined3d=n"\n'
    )


def test_check_needs_the_driver_installed_in_the_lane(tmp_path, monkeypatch, capsys):
    """`ort-dml-ops check` loads the driver from the lane (the package does not ship it): without
    one it says so in one line; `make dml-lane-driver` (install_driver.sh) puts it there."""
    from ort_dml_ops import dml_lane
    from ort_dml_ops.cli import main

    _fake_lane(tmp_path)
    monkeypatch.setenv("DML_LANE", str(tmp_path))
    monkeypatch.delenv("DML_LANE_DRIVER", raising=False)
    monkeypatch.delenv("ORT_DML_OPS_NO_LANE", raising=False)
    if not lane.lane_available()[0]:
        pytest.skip(lane.lane_available()[1])  # no Wine on this machine
    model = tmp_path / "m.onnx"
    model.write_bytes(b"")
    assert main(["check", str(model)]) == 1
    [err] = capsys.readouterr().err.strip().splitlines()
    assert (
        f"no driver in {tmp_path / 'driver'}" in err and "make dml-lane-driver" in err
    ), err

    tools = Path(__file__).resolve().parents[2] / "tools" / "dml_lane"
    subprocess.run(
        ["bash", str(tools / "install_driver.sh")], check=True, capture_output=True
    )
    for name in ("driver.py", "guest.py"):
        assert (tmp_path / "driver" / name).read_bytes() == (tools / name).read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "cp311",
        "driver",
        "m.onnx",
        "run.sh",
        "smoke.ok",
    ]
    driver = dml_lane.load_driver()
    assert Path(driver.__file__) == tmp_path / "driver" / "driver.py"
    assert driver.Case("c", b"", {}).provider == "dml"


def test_a_guest_that_dies_before_saying_anything_is_started_once_more(monkeypatch):
    """A guest that exits non-zero with no output and no result wrote nothing of any case
    (Wine did not start): the chunk runs once more before its first case is blamed."""
    import onnx.helper as oh
    from onnx import TensorProto as T

    calls = []

    def silent_death(w, folder, chunk):
        calls.append([cid for cid, _ in chunk])
        return "", 1

    monkeypatch.setattr(lane, "lane_available", lambda: (True, ""))
    monkeypatch.setattr(lane, "_run_chunk", silent_death)
    g = oh.make_graph(
        [oh.make_node("Relu", ["x"], ["y"], name="relu")],
        "g",
        [oh.make_tensor_value_info("x", T.FLOAT, [2])],
        [oh.make_tensor_value_info("y", T.FLOAT, [2])],
    )
    model = oh.make_model(g, opset_imports=[oh.make_opsetid("", 17)])
    x = {"x": __import__("numpy").zeros(2, "float32")}
    a, b = lane.run_cases([lane.Case("a", model, x), lane.Case("b", model, x)])
    assert calls == [["0000", "0001"], ["0000", "0001"], ["0001"]]
    assert (a.stage, b.stage) == ("crash", "crash")  # two silent deaths each: blamed
