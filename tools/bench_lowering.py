"""Lowered CumProd vs ONNX Runtime's native CumProd-26 on the CPU EP, side by side.

    python tools/bench_lowering.py [--shape 8,1024,1024] [--reps 7] [--threads 0] [--json]

All sessions are built first, then runs are interleaved (native, lowered, ...) and the
medians compared, so the ratios are measured in one run on one machine state. Two floors are
timed alongside, each as a ratio to native: one float32 Mul of x by itself (a single
elementwise pass over the tensor), and, where the lowering is one chain, the same Split and
Concat with no arithmetic (the copies no construction from ONNX ops can avoid).
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
from ort_dml_ops.bench.timing import interleaved, quiet_session_options
from ort_dml_ops.conversion import convert


def model(shape, axis, opset, domain):
    g = helper.make_graph(
        [helper.make_node("CumProd", ["x", "axis"], ["y"], domain=domain)],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)],
        [numpy_helper.from_array(np.array(axis, np.int64), "axis")],
    )
    imports = [helper.make_opsetid("", opset)] + (
        [helper.make_opsetid(DOMAIN, 1)] if domain else []
    )
    return helper.make_model(g, opset_imports=imports, ir_version=10)


def _graph_model(nodes, shape, inits=()):
    g = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)],
        list(inits),
    )
    return helper.make_model(
        g, opset_imports=[helper.make_opsetid("", 21)], ir_version=10
    )


def one_pass(shape):
    return _graph_model([helper.make_node("Mul", ["x", "x"], ["y"])], shape)


def split_concat(shape, axis):
    """Split x into its slices along `axis` and Concat them back: a single chain's copies."""
    parts = [f"p{k}" for k in range(shape[axis])]
    return _graph_model(
        [
            helper.make_node("Split", ["x", "sizes"], parts, axis=axis),
            helper.make_node("Concat", parts, ["y"], axis=axis),
        ],
        shape,
        [numpy_helper.from_array(np.ones(shape[axis], np.int64), "sizes")],
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shape", default="8,1024,1024")
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument(
        "--threads", type=int, default=0, help="intra-op threads (0 = ORT default)"
    )
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    shape = [int(s) for s in a.shape.split(",")]
    so = quiet_session_options(intra_op_num_threads=a.threads)
    x = np.random.default_rng(0).uniform(0.999, 1.001, shape).astype(np.float32)
    rows = []
    cpu = ["CPUExecutionProvider"]

    def session(m):
        return ort.InferenceSession(m.SerializeToString(), so, providers=cpu)

    for axis in range(len(shape)):
        if shape[axis] == 1:
            continue
        r = convert(model(shape, axis, 21, DOMAIN), "cpu", strategy="lower")
        sessions = {
            "native": session(model(shape, axis, 26, "")),
            "lowered": session(r.model),
            "one_mul_pass": session(one_pass(shape)),
        }
        if r.report.nodes[0].note.endswith("single chain"):
            sessions["split_concat"] = session(split_concat(shape, axis))
        out = {k: s.run(None, {"x": x})[0] for k, s in sessions.items()}  # warm-up
        t = interleaved(
            {k: (lambda s=s: s.run(None, {"x": x})) for k, s in sessions.items()},
            a.reps,
        )
        ms = {k: v["median_s"] * 1e3 for k, v in t.items()}
        yn, yl = out["native"], out["lowered"]
        rows.append(
            {
                "shape": shape,
                "axis": axis,
                "native_ms": round(ms["native"], 2),
                "lowered_ms": round(ms["lowered"], 2),
                "ratio": round(ms["lowered"] / ms["native"], 2),
                "plan": r.report.nodes[0].note,
                "floors": {
                    k: round(ms[k] / ms["native"], 2)
                    for k in ("one_mul_pass", "split_concat")
                    if k in ms
                },
                "nodes": len(r.model.graph.node),
                "max_rel_err": float(
                    np.max(np.abs(yl - yn) / np.maximum(np.abs(yn), 1e-30))
                ),
            }
        )
    meta = {
        "machine": platform.machine(),
        "python": platform.python_version(),
        "onnxruntime": ort.__version__,
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "threads": a.threads,
    }
    if a.json:
        print(json.dumps({"meta": meta, "rows": rows}, indent=2))
    else:
        print(meta)
        for r in rows:
            floors = ", ".join(f"{k} {v}x" for k, v in r["floors"].items())
            print(
                f"{r['shape']} axis {r['axis']}: native {r['native_ms']} ms, lowered {r['lowered_ms']} ms, "
                f"ratio {r['ratio']}x (floors: {floors}), {r['nodes']} nodes, max rel err {r['max_rel_err']:.2e}; {r['plan']}"
            )


if __name__ == "__main__":
    main()
