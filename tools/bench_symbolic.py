"""Lowerings of a symbolic axis vs the static lowering of the same length, on the CPU EP.

    python tools/bench_symbolic.py [--lengths 10,1000,100000] [--elements 1000000] [--reps 7] [--json]

The same measurement as the CumProd part of `ort-dml-ops bench` (ort_dml_ops/bench/symbolic.py),
on its own and with the element count as a knob.
"""

from __future__ import annotations

import argparse
import json

import onnxruntime as ort

from ort_dml_ops.bench.symbolic import run_symbolic, table


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lengths", default="10,1000,100000")
    ap.add_argument("--elements", type=int, default=1_000_000)
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    sym = run_symbolic(
        [int(n) for n in args.lengths.split(",")],
        elements=args.elements,
        reps=args.reps,
    )
    if args.json:
        print(json.dumps({"onnxruntime": ort.__version__, **sym}, indent=1))
        return
    print(f"onnxruntime {ort.__version__}")
    print("\n".join(table(sym)))


if __name__ == "__main__":
    main()
