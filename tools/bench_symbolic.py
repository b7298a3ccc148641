"""Lowerings of a symbolic axis vs the static lowering of the same length, on the CPU EP.

    python tools/bench_symbolic.py [--lengths 10,1000,100000] [--elements 1000000] [--reps 7] [--json]

Issue 15 item 2: a CumProd whose axis length is known only at run time must cost within 1.3× of
the static lowering of the same length. For each length n, float32 x of about `--elements`
elements, the scan along the last axis ([elements/n, n]: strided columns) and along the first
([n, elements/n]: contiguous slices); both models converted with strategy lower, one with the
axis length static, one with it symbolic; interleaved medians in one run (`bench.timing`),
outputs compared with each other.
"""

from __future__ import annotations

import argparse
import json

import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

from ort_dml_ops import DOMAIN, convert
from ort_dml_ops.bench.timing import interleaved, quiet_session_options


def cumprod_model(shape, axis):
    g = helper.make_graph(
        [helper.make_node("CumProd", ["x", "axis"], ["y"], domain=DOMAIN)],
        "cumprod",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)],
        [numpy_helper.from_array(np.array(axis, np.int64), "axis")],
    )
    return helper.make_model(
        g,
        opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(DOMAIN, 1)],
        ir_version=10,
    )


def case(n: int, elements: int, axis: int, reps: int) -> dict:
    other = max(1, elements // n)
    shape = [other, n] if axis == 1 else [n, other]
    sym = list(shape)
    sym[axis] = "L"
    static = convert(cumprod_model(shape, axis), "dml", strategy="lower")
    symbolic = convert(cumprod_model(sym, axis), "dml", strategy="lower")
    x = np.random.default_rng(n).uniform(0.9, 1.1, shape).astype(np.float32)
    sess = {
        k: ort.InferenceSession(
            r.model.SerializeToString(),
            quiet_session_options(),
            providers=["CPUExecutionProvider"],
        )
        for k, r in (("static", static), ("symbolic", symbolic))
    }
    a, b = (s.run(None, {"x": x})[0] for s in sess.values())
    t = interleaved(
        {k: (lambda s=s: s.run(None, {"x": x})) for k, s in sess.items()}, reps
    )
    return {
        "n": n,
        "shape": shape,
        "axis": axis,
        "static_ms": t["static"]["median_s"] * 1e3,
        "symbolic_ms": t["symbolic"]["median_s"] * 1e3,
        "ratio": t["symbolic"]["median_s"] / t["static"]["median_s"],
        "static_nodes": len(static.model.graph.node),
        "symbolic_nodes": len(symbolic.model.graph.node),
        "max_rel_diff": float(np.max(np.abs(a - b) / np.maximum(np.abs(a), 1e-30))),
        "static_plan": static.report.nodes[0].note,
        "symbolic_plan": symbolic.report.nodes[0].note,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lengths", default="10,1000,100000")
    ap.add_argument("--elements", type=int, default=1_000_000)
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    rows = [
        case(int(n), args.elements, axis, args.reps)
        for n in args.lengths.split(",")
        for axis in (1, 0)
    ]
    if args.json:
        print(json.dumps({"onnxruntime": ort.__version__, "cases": rows}, indent=1))
        return
    print(
        f"onnxruntime {ort.__version__}, CPU EP, CumProd lowered: symbolic axis length vs static, interleaved medians"
    )
    print(
        f"{'n':>7} {'shape':>16} {'axis':>4} {'static ms':>10} {'symbolic ms':>12} {'ratio':>6} {'nodes s/sym':>12} {'max rel diff':>12}"
    )
    for r in rows:
        print(
            f"{r['n']:>7} {r['shape']!s:>16} {r['axis']:>4} {r['static_ms']:10.2f} {r['symbolic_ms']:12.2f} "
            f"{r['ratio']:6.2f} {r['static_nodes']:>5}/{r['symbolic_nodes']:<6} {r['max_rel_diff']:12.2e}"
        )


if __name__ == "__main__":
    main()
