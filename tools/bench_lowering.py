"""Lowered CumProd vs ONNX Runtime's native CumProd-26 on the CPU EP, side by side.

    python tools/bench_lowering.py [--shape 8,1024,1024] [--reps 7] [--threads 0] [--json]

Both sessions are built first, then runs are interleaved (native, lowered, native, ...) and
the medians compared, so the ratio is measured in one run on one machine state. A third model,
one float32 Mul of x by itself, is timed alongside: a single elementwise pass over the tensor,
the cost floor of any ONNX-op construction, which makes at least a Split, a Mul chain and a
Concat (each about one such pass).
"""

from __future__ import annotations

import argparse
import json
import platform
import time

import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

from ort_dml_ops import DOMAIN
from ort_dml_ops.bench.timing import quiet_session_options
from ort_dml_ops.conversion import convert


def model(shape, axis, opset, domain):
    g = helper.make_graph([helper.make_node("CumProd", ["x", "axis"], ["y"], domain=domain)], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)],
                          [numpy_helper.from_array(np.array(axis, np.int64), "axis")])
    imports = [helper.make_opsetid("", opset)] + ([helper.make_opsetid(DOMAIN, 1)] if domain else [])
    return helper.make_model(g, opset_imports=imports, ir_version=10)


def one_pass(shape):
    g = helper.make_graph([helper.make_node("Mul", ["x", "x"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shape", default="8,1024,1024")
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--threads", type=int, default=0, help="intra-op threads (0 = ORT default)")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    shape = [int(s) for s in a.shape.split(",")]
    so = quiet_session_options(intra_op_num_threads=a.threads)
    x = np.random.default_rng(0).uniform(0.999, 1.001, shape).astype(np.float32)
    rows = []
    mul = ort.InferenceSession(one_pass(shape).SerializeToString(), so, providers=["CPUExecutionProvider"])
    for axis in range(len(shape)):
        if shape[axis] == 1:
            continue
        native = ort.InferenceSession(model(shape, axis, 26, "").SerializeToString(), so, providers=["CPUExecutionProvider"])
        low = convert(model(shape, axis, 21, DOMAIN), "cpu", strategy="lower").model
        lowered = ort.InferenceSession(low.SerializeToString(), so, providers=["CPUExecutionProvider"])
        tn, tl, tm = [], [], []
        yn = native.run(None, {"x": x})[0]
        yl = lowered.run(None, {"x": x})[0]
        mul.run(None, {"x": x})
        for _ in range(a.reps):
            for sess, acc in ((native, tn), (lowered, tl), (mul, tm)):
                t0 = time.perf_counter()
                sess.run(None, {"x": x})
                acc.append(time.perf_counter() - t0)
        mn, ml, mm = (float(np.median(t)) * 1e3 for t in (tn, tl, tm))
        rows.append({"shape": shape, "axis": axis, "native_ms": round(mn, 2), "lowered_ms": round(ml, 2),
                     "ratio": round(ml / mn, 2), "one_mul_pass_ratio": round(mm / mn, 2), "nodes": len(low.graph.node),
                     "max_rel_err": float(np.max(np.abs(yl - yn) / np.maximum(np.abs(yn), 1e-30)))})
    meta = {"machine": platform.machine(), "python": platform.python_version(), "onnxruntime": ort.__version__,
            "date": time.strftime("%Y-%m-%d %H:%M"), "threads": a.threads}
    if a.json:
        print(json.dumps({"meta": meta, "rows": rows}, indent=2))
    else:
        print(meta)
        for r in rows:
            print(f"{r['shape']} axis {r['axis']}: native {r['native_ms']} ms, lowered {r['lowered_ms']} ms, "
                  f"ratio {r['ratio']}x (one Mul pass {r['one_mul_pass_ratio']}x), {r['nodes']} nodes, max rel err {r['max_rel_err']:.2e}")


if __name__ == "__main__":
    main()
