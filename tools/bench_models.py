"""Per-model bench (issue 28 item 5): every model of the real-export corpus against its
conversion (`convert --target dml`, strategy auto: what users get) — kernels and copies per run
(`inspect` on the DML EP), session creation (CPU EP and the DML lane) and run time (CPU EP and
the DML lane) at the export's sizes and at sizes ×100 and ×10,000.

    python tools/bench_models.py [--only NAME ...] [--no-lane] [--json PATH] [--markdown PATH]

Sizes grow by tiling the export's inputs along their leading symbolic dims
(ort_dml_ops/bench/per_model.py `scale_feeds`). The CPU EP's run times are medians of
interleaved runs, the converted outputs checked against the original's in the same run; the
lane's (Wine + vkd3d + lavapipe: work and dispatches, not GPU speed) the median of 5 timed runs
after a first, with ORT's default optimizations, its outputs checked the same way.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

from ort_dml_ops.bench import budget, per_model
from ort_dml_ops.conversion import convert

#: the lane's sessions for timing: ORT's defaults, no profiler, quiet log, 5 timed runs
LANE_OPTIONS = {
    "graph_optimization_level": "ORT_ENABLE_ALL",
    "enable_profiling": False,
    "log_severity_level": 3,
    "timed_runs": 5,
}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", action="append", default=[], metavar="NAME")
    ap.add_argument("--no-lane", action="store_true", help="CPU EP only")
    ap.add_argument("--json", type=Path, help="write every row to this file")
    ap.add_argument("--markdown", type=Path, help="write the table to this file")
    args = ap.parse_args(argv)

    from tests.real_models import REAL_MODELS

    models = [m for m in REAL_MODELS if not args.only or m.name in args.only]
    rows: list[dict] = []
    lane_cases = []
    t0 = time.perf_counter()
    for m in models:
        model, feeds = m.load(), m.inputs
        head = budget.measure_real_model(m.name, model, "dml")
        converted = convert(model, target="dml", with_inspect=False).model
        row = {
            "name": m.name,
            "actions": head.actions,
            "kernels": list(head.kernels),
            "copies": list(head.copies),
            "session_cpu_ms": [round(v, 2) for v in head.session_ms],
            "cpu": {},
            "lane": {},
        }
        for k in per_model.SCALES:
            t = per_model.time_on_cpu(model, converted, feeds, k)
            row["cpu"][k] = {
                "original_ms": t.original_ms,
                "converted_ms": t.converted_ms,
                "same": t.same,
                "note": t.note,
            }
            scaled, why = per_model.scale_feeds(model, feeds, k)
            if scaled is not None and not args.no_lane:
                lane_cases.append((m.name, k, model, converted, scaled))
            elif why:
                row["lane"][k] = {"note": why}
        rows.append(row)
        print(f"{m.name}: cpu done ({time.perf_counter() - t0:.0f} s)", flush=True)
    if lane_cases:
        from dml_lane.driver import Case, run_cases
        from ort_dml_ops import fallback

        cases = []
        for name, k, model, converted, scaled in lane_cases:
            for variant, mdl in (("original", model), ("converted", converted)):
                # a model with the project's CumProd runs with its Python fallback registered
                cases.append(
                    Case(
                        f"{name}@{k}:{variant}",
                        mdl,
                        scaled,
                        use_fallback=fallback.uses_fallback(mdl),
                        session_options=LANE_OPTIONS,
                    )
                )
        results = {c.name: r for c, r in zip(cases, run_cases(cases))}
        by_name = {r["name"]: r for r in rows}
        for name, k, _, _, _ in lane_cases:
            a, b = results[f"{name}@{k}:original"], results[f"{name}@{k}:converted"]
            entry: dict = {}
            for variant, r in (("original", a), ("converted", b)):
                entry[f"{variant}_session_s"] = r.session_s
                entry[f"{variant}_run_ms"] = None if r.run_s is None else r.run_s * 1e3
                if not r.ok:
                    entry.setdefault(
                        "note", f"{variant}: {r.stage}: {(r.error or '')[:120]}"
                    )
            if a.ok and b.ok:
                entry["same"] = per_model.outputs_agree(
                    a.outputs or [], b.outputs or [], k
                )
            by_name[name]["lane"][k] = entry
        print(f"lane done ({time.perf_counter() - t0:.0f} s)", flush=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1, default=str))
    table = markdown(rows)
    if args.markdown:
        args.markdown.write_text(table)
    print(table)
    return 0


def _ms(v) -> str:
    if v is None:
        return "-"
    return f"{v:.3g}" if v < 100 else f"{v:,.0f}"


def _pair(entry: dict | None, a: str, b: str) -> str:
    if not entry:
        return "-"
    if entry.get(a) is None and entry.get(b) is not None:
        return f"n/a → {_ms(entry[b])}"  # the original cannot run there (the notes say why)
    if entry.get(a) is None or entry.get(b) is None:
        return "n/a"
    flag = "" if entry.get("same", True) else " ≠"
    return f"{_ms(entry[a])} → {_ms(entry[b])}{flag}"


def _at(by_scale: dict, k: int) -> dict | None:
    """by_scale[k], keyed by int here and by str once read back from JSON."""
    return by_scale.get(k) or by_scale.get(str(k))


def markdown(rows: list[dict]) -> str:
    scales = per_model.SCALES
    head = (
        "| model | kernels | copies | session CPU ms | session lane s | "
        + " | ".join(f"CPU run ms ×{k:,}" for k in scales)
        + " | "
        + " | ".join(f"lane run ms ×{k:,}" for k in scales)
        + " |"
    )
    lines = [head, "|" + "---|" * (5 + 2 * len(scales))]
    for r in rows:
        lane1 = _at(r["lane"], 1) or {}
        cells = [
            r["name"],
            f"{r['kernels'][0]} → {r['kernels'][1]}",
            f"{r['copies'][0]} → {r['copies'][1]}",
            f"{_ms(r['session_cpu_ms'][0])} → {_ms(r['session_cpu_ms'][1])}",
            _pair(lane1, "original_session_s", "converted_session_s"),
        ]
        cells += [
            _pair(_at(r["cpu"], k), "original_ms", "converted_ms") for k in scales
        ]
        cells += [
            _pair(_at(r["lane"], k), "original_run_ms", "converted_run_ms")
            for k in scales
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n\n" + notes(rows)


def notes(rows: list[dict]) -> str:
    """Each reason a cell is n/a, with the models (side, sizes) it applies to."""
    why: dict[str, dict[tuple[str, str], list[str]]] = {}
    for r in rows:
        for side in ("cpu", "lane"):
            for k, entry in r[side].items():
                if entry.get("note"):
                    cells = why.setdefault(entry["note"], {})
                    cells.setdefault((r["name"], side), []).append(f"×{int(k):,}")
    out = []
    for reason, cells in why.items():
        listed = ", ".join(
            f"{name} ({side} {' '.join(sizes)})"
            for (name, side), sizes in cells.items()
        )
        out.append(f"- {reason}: {listed}\n")
    return "".join(out)


if __name__ == "__main__":
    raise SystemExit(main())
