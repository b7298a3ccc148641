"""Lowering budgets (issue 28): what each lowered node costs on the target EP, against its budget.

    python tools/lowering_budget.py [--targets dml,webgpu] [--quick] [--no-models]
                                    [--size 300] [--json PATH] [--check]

A lowering replaces one CumSum / CumProd / ScatterElements / ScatterND node by many ONNX ops.
Three costs grow with it, and this script measures each:

* kernels: every non-view node the target EP runs is a GPU dispatch (~5-20 µs each, whatever
  the tensor size) and one kernel the EP compiles when the session is created. Counted from
  `ort_dml_ops.inspect` (the project's model of ORT's placement: provider per node, nodes ORT
  removes before running), views (Reshape, Squeeze, Unsqueeze, Flatten, Identity:
  ort_dml_ops/bench/passes.py `VIEWS`) left out. A row's +KERN is what the lowering added:
  the converted single-op model's count minus the original's (0 when the original op runs on
  the CPU). The index guard (convert's check_indices, on) is included.
* passes: memory traffic, as full-size write passes = bytes written by all kernels / bytes of
  the op's output, from ONNX Runtime's own profile of one run on the CPU EP
  (ort_dml_ops/bench/passes.py `count_passes`), views excluded. Static shapes only; float16
  rows are shown but not checked (the CPU EP runs most float16 ops in float32 between Casts it
  inserts, which a GPU EP does not), bfloat16 rows not measured (no numpy feeds).
* copies: host<->device transfers per run (`inspect(...).copies`).

Budgets (per lowered node, kernels on the target EP): ScatterElements / ScatterND reduction
none <= 12, add / max / min <= 40, mul <= 60; CumProd <= 25; a CumSum cast lowering (a dtype
the EP lacks) <= 4; symbolic shapes 1.25x those; passes <= 30. Whole models of the
real-export corpus (tests/real_models.py), converted for dml with strategy auto: copies per run
must not grow, and ORT session creation on the CPU EP may take at most 2x the original's
(geometric mean over the corpus), no model above 5x.

The counting lives in ort_dml_ops/bench/budget.py (tests/test_budget.py uses it). The exit
status is 0, or with --check 1 when any budget is exceeded (or a case fails to convert).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import platform
import sys
import time
from pathlib import Path

import onnxruntime as ort

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ort_dml_ops.bench import budget

#: --quick: a few models of the corpus, one per kind of lowering
QUICK = ("pyg_scatter_sum", "scatter_reduce_amax", "hf_top_p", "survival_cumprod")

OP_COLUMNS = (
    ("TARGET", 6),
    ("OP", 19),
    ("RED", 4),
    ("DTYPE", 8),
    ("SHAPE", 8),
    ("ACTION", 7),
    ("KERN", 5),
    ("+KERN", 5),
    ("BUDGET", 6),
    ("CPU", 4),
    ("COPIES", 6),
    ("PASSES", 6),
    ("STATUS", 6),
    ("NOTE", 0),
)
MODEL_COLUMNS = (
    ("MODEL", 32),
    ("ACTIONS", 22),
    ("COPIES", 7),
    ("KERNELS", 11),
    ("CPU", 9),
    ("SESSION ms", 16),
    ("RATIO", 8),
    ("STATUS", 6),
    ("NOTE", 0),
)


def line(columns, values) -> str:
    cells = []
    for (_, width), value in zip(columns, values):
        text = str(value)
        numeric = text[:1].isdigit() or (text[:1] in ("-", "x") and text[1:2].isdigit())
        cells.append(text.rjust(width) if numeric else text.ljust(width))
    return "  ".join(cells).rstrip()


def header(columns) -> str:
    return line(columns, [name for name, _ in columns])


def fmt(value, spec: str = "") -> str:
    return "-" if value is None else format(value, spec)


def op_section(targets, size: int) -> tuple[list, dict]:
    print(
        "== single-op lowerings: convert(strategy='lower'), index guard on; KERN = non-view kernels "
        f"on the target EP, +KERN = added by the lowering; passes at [{size}, {size}] ==",
        flush=True,
    )
    rows, cumsum = [], {}
    for target in targets:
        cumsum[target] = budget.cumsum_actions(target)
        actions = ", ".join(f"{d} {a.split(':')[0]}" for d, a in cumsum[target].items())
        print(f"CumSum on {target}, converter action by dtype: {actions}", flush=True)
    print(header(OP_COLUMNS), flush=True)
    for target in targets:
        for case in budget.op_cases(target, cumsum[target]):
            r = budget.measure_op(case, target, n=size)
            rows.append(r)
            budget_text = fmt(r.budget, "g")
            print(
                line(
                    OP_COLUMNS,
                    [
                        r.target,
                        r.op,
                        r.reduction,
                        r.dtype,
                        r.shape,
                        r.action,
                        fmt(r.kernels),
                        fmt(r.added),
                        budget_text,
                        fmt(r.cpu),
                        fmt(r.copies),
                        fmt(r.passes, ".1f"),
                        r.status,
                        r.note,
                    ],
                ),
                flush=True,
            )
    return rows, cumsum


def model_section(
    names, reps: int, strategy: str = "auto", export_sizes: bool = False
) -> tuple[list, dict]:
    from tests.real_models import REAL_MODELS

    print(
        f"\n== real-export corpus: original -> converted (target dml, strategy {strategy}"
        + (", --input-shape: the export's own input sizes" if export_sizes else "")
        + "); session "
        f"creation on the CPU EP, median of {reps} to {budget.MAX_ROUNDS} interleaved "
        "(more for fast sessions) ==",
        flush=True,
    )
    print(header(MODEL_COLUMNS), flush=True)
    rows = []
    for m in REAL_MODELS:
        if names is not None and m.name not in names:
            continue
        shapes = (
            {k: tuple(v.shape) for k, v in m.inputs.items()} if export_sizes else None
        )
        r = budget.measure_real_model(
            m.name, m.load(), reps=reps, strategy=strategy, input_shapes=shapes
        )
        rows.append(r)
        actions = ",".join(f"{k}:{v}" for k, v in sorted(r.actions.items()))
        print(
            line(
                MODEL_COLUMNS,
                [
                    r.name,
                    actions or "-",
                    f"{r.copies[0]}->{r.copies[1]}",
                    f"{r.kernels[0]}->{r.kernels[1]}",
                    f"{r.cpu[0]}->{r.cpu[1]}",
                    f"{r.session_ms[0]:.1f}->{r.session_ms[1]:.1f}",
                    f"x{r.ratio:.2f}",
                    r.status,
                    r.note,
                ],
            ),
            flush=True,
        )
    summary = budget.summarize_models(rows)
    print(
        f"summary: {summary['models']} models; session creation converted/original: geometric "
        f"mean x{summary['session_geomean']:.2f} (budget {budget.SESSION_GEOMEAN:g}), max "
        f"x{fmt(summary['session_max'], '.2f')} ({summary['session_max_model']}; budget "
        f"{budget.SESSION_MAX:g}); copies grew in {len(summary['copies_grew'])} models"
        + (f" ({', '.join(summary['copies_grew'])})" if summary["copies_grew"] else "")
        + f" -> {summary['status']}",
        flush=True,
    )
    return rows, summary


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--targets", default="dml,webgpu", help="comma-separated")
    ap.add_argument(
        "--models",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="the real-export section (default on)",
    )
    ap.add_argument("--quick", action="store_true", help=f"models: {', '.join(QUICK)}")
    ap.add_argument(
        "--strategy",
        choices=("auto", "lower"),
        default="auto",
        help="the real-export section's conversion: auto (what users get, default) or lower "
        "(every lowering applied: what the lowerings cost)",
    )
    ap.add_argument(
        "--export-sizes",
        action="store_true",
        help="real-export section: tell convert the sizes of each export's own inputs "
        "(--input-shape), so that auto can weigh each lowering at them",
    )
    ap.add_argument(
        "--size", type=int, default=300, help="static data [size, size] (passes)"
    )
    ap.add_argument(
        "--reps", type=int, default=3, help="least session creations per model"
    )
    ap.add_argument("--json", metavar="PATH", help="write every row to PATH")
    ap.add_argument(
        "--check", action="store_true", help="exit 1 when a budget is exceeded"
    )
    a = ap.parse_args(argv)
    t0 = time.perf_counter()
    op_rows, cumsum = op_section(a.targets.split(","), a.size)
    t1 = time.perf_counter()
    model_rows: list = []
    summary: dict = {}
    if a.models:
        model_rows, summary = model_section(
            QUICK if a.quick else None, a.reps, a.strategy, a.export_sizes
        )
    t2 = time.perf_counter()
    failed = [r for r in op_rows if r.status in ("OVER", "ERROR")]
    failed += [r for r in model_rows if r.status == "OVER"]
    over = bool(failed) or summary.get("status") == "OVER"
    print(
        f"\n{len(failed)} rows over budget or failing"
        + ("; the corpus summary is over budget" if summary.get("over") else "")
        + f". single-op section {t1 - t0:.0f} s, real-export section {t2 - t1:.0f} s",
        flush=True,
    )
    if a.json:
        meta = {
            "machine": platform.machine(),
            "python": platform.python_version(),
            "onnxruntime": ort.__version__,
            "date": time.strftime("%Y-%m-%d %H:%M"),
            "size": a.size,
            "reps": a.reps,
            "seconds": {"ops": round(t1 - t0, 1), "models": round(t2 - t1, 1)},
        }
        out = {
            "meta": meta,
            "cumsum_actions": cumsum,
            "ops": [dataclasses.asdict(r) for r in op_rows],
            "models": [dataclasses.asdict(r) for r in model_rows],
            "models_summary": summary,
        }
        Path(a.json).write_text(json.dumps(out, indent=1))
    return 1 if a.check and over else 0


if __name__ == "__main__":
    sys.exit(main())
