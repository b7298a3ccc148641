"""Why a converted model takes longer to open: session creation against node count, with ONNX
Runtime's memory-reuse planning on (its default) and off.

    python tools/bench_session.py [--target dml] [--reps 5] [--only NAME,...] [--no-third-party]

For every model of the real-export corpus (tests/real_models.py) and every third-party file
(tests/third_party.py, once `make third-party` fetched them) that `convert` changes: nodes,
original -> converted, and the median CPU-EP session creation of each, interleaved, with
ORT's default options and with `SessionOptions.enable_mem_reuse = False`.

What it shows: ORT's sequential allocation planner (onnxruntime/core/framework/
allocation_planner.cc, `ComputeSingleStreamReusePlan`) looks for a dead buffer of the same size
for each output (`FindReusableTensor`) by walking its whole free list, and a buffer whose
shape holds a dim nothing else has (every run-time-sized temporary of a lowering) is never
taken, so the list grows with the graph: that step costs about the square of the node count,
and it is the larger part of opening a converted model. Not a timed test: run it by hand and
report the numbers (docs/performance.md).
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _models(third_party: bool):
    from tests.real_models import REAL_MODELS

    for r in REAL_MODELS:
        yield r.name, r.load
    if not third_party:
        return
    from tests.third_party import THIRD_PARTY

    for m in THIRD_PARTY:
        if m.missing is None and not m.name.startswith("onnx_backend/"):
            yield m.name, m.load


def main(argv=None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--target", default="dml")
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--only", default="", help="comma-separated model names")
    p.add_argument("--no-third-party", action="store_true")
    a = p.parse_args(argv)
    from ort_dml_ops.bench.budget import session_creator
    from ort_dml_ops.bench.timing import interleaved
    from ort_dml_ops.conversion import convert

    only = {n for n in a.only.split(",") if n}

    print(
        f"{'MODEL':34s} {'NODES':>13s} {'SESSION ms (reuse on)':>24s} {'RATIO':>7s}"
        f" {'SESSION ms (reuse off)':>24s} {'RATIO':>7s}"
    )
    ratios: dict[str, list[float]] = {"on": [], "off": []}
    for name, load in _models(not a.no_third_party):
        if only and name not in only:
            continue
        model = load()
        converted = convert(model, a.target, with_inspect=False).model
        if converted.SerializeToString() == model.SerializeToString():
            continue
        fns = {
            f"{k}_{reuse}": session_creator(m, enable_mem_reuse=reuse == "on")
            for k, m in (("orig", model), ("conv", converted))
            for reuse in ("on", "off")
        }
        t = {k: v["median_s"] * 1e3 for k, v in interleaved(fns, a.reps).items()}
        on = t["conv_on"] / t["orig_on"]
        off = t["conv_off"] / t["orig_off"]
        ratios["on"].append(on)
        ratios["off"].append(off)
        nodes = f"{len(model.graph.node)} -> {len(converted.graph.node)}"
        print(
            f"{name:34s} {nodes:>13s} {t['orig_on']:>10.1f} -> {t['conv_on']:>9.1f}"
            f" {on:>6.2f}x {t['orig_off']:>10.1f} -> {t['conv_off']:>9.1f} {off:>6.2f}x",
            flush=True,
        )
    for k, v in ratios.items():
        if v:
            geo = math.exp(sum(map(math.log, v)) / len(v))
            print(
                f"reuse {k}: {len(v)} models, converted / original geometric mean "
                f"x{geo:.2f}, max x{max(v):.2f}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
