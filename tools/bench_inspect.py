"""Time `inspect` on a synthetic 10,000-node model (target: < 2 s on the dev machine).

    python tools/bench_inspect.py [--nodes 10000] [--target dml] [--repeat 3]

The model is `ort_dml_ops.bench.models.chain_model` (the one `bench` converts): a chain of
element-wise ops, CumSum and ScatterElements with and without reduction, so the kernel lookup,
the support query, CPU-preferred nodes and copies all run.
Not a timed test: run it by hand and report the number.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--nodes", type=int, default=10_000)
    p.add_argument("--target", default="dml")
    p.add_argument("--repeat", type=int, default=3)
    a = p.parse_args(argv)
    from ort_dml_ops import inspect
    from ort_dml_ops.bench.models import chain_model
    from ort_dml_ops.targets import get_target

    get_target(
        a.target
    )  # table loading is a one-off per process; timed separately below
    m = chain_model(a.nodes)
    t0 = time.perf_counter()
    inspect(chain_model(10), a.target)
    first = time.perf_counter() - t0
    times = []
    for _ in range(a.repeat):
        t0 = time.perf_counter()
        r = inspect(m, a.target)
        times.append(time.perf_counter() - t0)
    s = r.summary
    print(
        f"inspect of {len(r.nodes)} nodes (target {a.target}): best {min(times):.3f} s, "
        f"worst {max(times):.3f} s over {a.repeat} runs; warm-up on 10 nodes {first:.3f} s; "
        f"summary {s}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
