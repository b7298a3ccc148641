"""`ort-dml-ops bench` on its tiniest setting: the JSON's structure and the outputs' agreement.

No timing assertions: the numbers depend on the machine.
"""

import json
import sys

import pytest

from ort_dml_ops.cli import main


def _bench(capsys, *extra):
    rc = main(
        [
            "bench",
            "--sizes",
            "1000",
            "--dtypes",
            "float32",
            "--axes",
            "last",
            "--reps",
            "1",
            "--nodes",
            "0",
            "--no-gpu",
            "--no-memory",
            "--json",
            *extra,
        ]
    )
    out = capsys.readouterr().out
    assert rc == 0
    return json.loads(out)


@pytest.mark.parametrize("ops", ["CumProd", "ScatterElements:add"])
def test_bench_json_structure_and_native_fallback_agree(capsys, ops):
    result = _bench(capsys, "--ops", ops)
    assert {"meta", "cases", "verdicts"} <= set(result)
    assert {"date", "cpu", "onnxruntime", "config"} <= set(result["meta"])
    (case,) = result["cases"]
    assert (
        case["size"] == 1000 and case["shape"] == [10, 100] and case["axis"] == "last"
    )
    assert set(case["variants"]) == {"native", "fallback", "lowered", "numpy"}
    for name, v in case["variants"].items():
        assert v["status"] in ("ok", "n/a"), name
        if v["status"] == "ok":
            assert v["ms"] > 0 and v["reps"] == 1 and v["agrees"], (name, v)
        else:
            assert v["reason"]
    native, fallback = case["variants"]["native"], case["variants"]["fallback"]
    assert native["status"] == fallback["status"] == "ok"
    assert fallback["diff_vs_native"] <= 1e-6
    assert fallback["checksum"] == pytest.approx(native["checksum"], rel=1e-6)
    assert case["ratios"]["fallback/native"] == pytest.approx(
        fallback["ms"] / native["ms"], rel=1e-2
    )


def test_bench_float16_native_is_na_with_reason(capsys):
    result = _bench(capsys, "--ops", "CumSum", "--dtypes", "float16")
    v = result["cases"][0]["variants"]
    assert v["native"]["status"] == "n/a" and "no CPU kernel" in v["native"]["reason"]
    assert v["fallback"]["status"] == "ok" and v["fallback"]["agrees"]


def test_bench_chart_without_matplotlib_is_one_line(capsys, monkeypatch, tmp_path):
    monkeypatch.setitem(
        sys.modules, "matplotlib", None
    )  # import fails as if not installed
    rc = main(
        [
            "bench",
            "--ops",
            "CumSum",
            "--sizes",
            "1000",
            "--reps",
            "1",
            "--chart",
            str(tmp_path / "c.png"),
        ]
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 1 and len(err) == 1 and "matplotlib" in err[0]
    assert not (tmp_path / "c.png").exists()


def test_bench_bad_op_is_a_one_line_error(capsys):
    assert main(["bench", "--ops", "Gather"]) == 1
    assert "unknown --ops" in capsys.readouterr().err


def test_bench_gpu_part_runs_with_the_cpu_ep_standing_in(monkeypatch):
    """The GPU code path (sessions, interleaving, ORT profile placements) on the CPU EP, so it is
    exercised on machines without a GPU; on a real GPU the provider is CUDA or DirectML."""
    from ort_dml_ops.bench import gpu

    assert gpu.gpu_provider() in (None, *gpu.GPU_EPS)
    monkeypatch.setattr(gpu, "gpu_provider", lambda: "CPUExecutionProvider")
    result = gpu.run_gpu([1000], reps=1)
    assert result["status"] == "ok" and len(result["rows"]) == 3
    for row in result["rows"]:
        assert "error" not in row, row
        assert row["lowered_gpu"] > 0 and row["left_native"] > 0
        assert set(row["placement_lowered"]) == {"CPUExecutionProvider"}
        assert (
            "Mul" in row["placement_lowered"]["CPUExecutionProvider"]
            or "TopK" in row["placement_lowered"]["CPUExecutionProvider"]
        )


def test_memory_part_runs_each_variant_in_its_own_process():
    """Structure and agreement only: the bound (<= 4x the inputs) is a benchmark verdict."""
    from ort_dml_ops.bench.memory import available, run_memory
    from ort_dml_ops.bench.report import verdicts

    mem = run_memory(vocab=2_000, batch=2, reductions=("none", "add"))
    if available():  # not Linux: the part says so instead of measuring
        assert mem == {"status": "n/a", "reason": available()}
        return
    assert mem["status"] == "ok" and mem["input_bytes"] == 2 * 2_000 * (4 + 8 + 4)
    for row in mem["rows"]:
        assert row["outputs_agree"], row
        for v in ("native", "lowered"):
            assert (
                row[v]["added_bytes"] >= 0
                and row[v]["peak_bytes"] >= row[v]["rss_before_bytes"] > 0
            ), row[v]
    (v,) = [
        v for v in verdicts({"cases": [], "memory": mem}) if "nucleus" in v["target"]
    ]
    assert (
        v["status"] in ("met", "missed")
        and v["worst"] == mem["rows"][0]["lowered/inputs"]
    )


def test_bench_prints_the_symbolic_cumprod_ratios(capsys):
    """Issue 15 item 2: the symbolic-axis CumProd vs the static lowering of the same n, in bench."""
    result = _bench(capsys, "--ops", "CumProd", "--symbolic-lengths", "10,100")
    sym = result["symbolic"]
    assert sym["elements"] == 1000 and sym["limit"] == 1.3
    assert [(r["n"], r["axis"]) for r in sym["rows"]] == [
        (10, 1),
        (10, 0),
        (100, 1),
        (100, 0),
    ]
    for r in sym["rows"]:
        assert r["ratio"] == pytest.approx(r["symbolic_ms"] / r["static_ms"], rel=0.01)
        assert r["symbolic_vs_numpy_max_rel"] < 1e-5  # against numpy's float64 cumprod
    assert any(
        v["target"].startswith("CumProd on a symbolic axis") for v in result["verdicts"]
    )


def test_bench_table_shows_the_symbolic_section(capsys):
    rc = main(
        [
            "bench",
            "--sizes",
            "1000",
            "--dtypes",
            "float32",
            "--axes",
            "last",
            "--reps",
            "1",
            "--nodes",
            "0",
            "--no-gpu",
            "--no-memory",
            "--ops",
            "CumProd",
            "--symbolic-lengths",
            "10",
        ]
    )
    out = capsys.readouterr().out
    assert rc == 0
    assert "CumProd lowered, symbolic axis length vs static" in out
    assert "CumProd on a symbolic axis <= 1.3x the static lowering" in out


def test_bench_symbolic_lengths_refuses_nonsense(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["bench", "--symbolic-lengths", "1,x"])
    assert exc.value.code == 2
    assert "axis lengths" in capsys.readouterr().err


def test_convert_floor_reports_both_floors_per_strategy():
    """`bench`'s convert-cost part: for each strategy, convert and its two floors (issue 14's, and
    an onnx-ir converter's) each ran as a child that succeeded, and the table shows both ratios."""
    from ort_dml_ops.bench.convert_floor import run_convert_floor, table_lines

    r = run_convert_floor(n_nodes=40, reps=1)
    for strategy in ("lower", "native"):
        for key in (strategy, f"floor_{strategy}", f"ir_floor_{strategy}"):
            assert r["s"][key] > 0
        assert r[f"{strategy}/floor"] > 0 and r[f"{strategy}/ir_floor"] > 0
    assert r["nodes_out"]["native"] == 40 < r["nodes_out"]["lower"]
    text = "\n".join(table_lines(r, None))
    assert "floor" in text and "onnx-ir converter's floor" in text
