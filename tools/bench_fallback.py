"""Python fallback vs ONNX Runtime's native CPU kernels, side by side in one run.

    python tools/bench_fallback.py [--reps 15] [--json] [--stock]

Each case runs the native model (ONNX CumProd-26 / CumSum-14 / ScatterElements-18) and the
same op as DOMAIN::<Op> through ort_dml_ops.InferenceSession, interleaved rep by rep; the
table shows medians and the ratio fallback / native. With --stock it also times the same
kernels through onnxruntime-extensions' stock return path (outputs as Python lists), which
the project's fast path replaces. Targets (issue 2): CumProd and CumSum
<= 1.5x, ScatterElements(add) <= 2x.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time

import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper

import ort_dml_ops
from ort_dml_ops import DOMAIN
from ort_dml_ops.bench.timing import quiet_session_options


def scan_model(op, domain, opset, shape, axis):
    node = helper.make_node(op, ["x", "axis"], ["y"], domain=domain)
    graph = helper.make_graph(
        [node],
        "bench",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)],
        [helper.make_tensor("axis", TensorProto.INT64, [], [axis])],
    )
    return _model(graph, opset, domain)


def scatter_model(domain, opset, data_shape, n_updates):
    attrs = {"axis": 0, "reduction": "add"}
    node = helper.make_node(
        "ScatterElements", ["data", "indices", "updates"], ["y"], domain=domain, **attrs
    )
    graph = helper.make_graph(
        [node],
        "bench",
        [
            helper.make_tensor_value_info("data", TensorProto.FLOAT, data_shape),
            helper.make_tensor_value_info("indices", TensorProto.INT64, [n_updates]),
            helper.make_tensor_value_info("updates", TensorProto.FLOAT, [n_updates]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, data_shape)],
    )
    return _model(graph, opset, domain)


def _model(graph, opset, domain):
    imports = [helper.make_opsetid("", opset)] + (
        [helper.make_opsetid(DOMAIN, 1)] if domain else []
    )
    model = helper.make_model(graph, opset_imports=imports)
    model.ir_version = 10 if opset <= 21 else 13
    return model


def cases():
    rng = np.random.default_rng(0)
    x = (rng.random((8, 1024, 1024), dtype=np.float32) * 0.1 + 0.95).astype(np.float32)
    for op, opset in (("CumProd", 26), ("CumSum", 14)):
        for axis in (2, 0):
            yield (
                f"{op} f32 [8,1024,1024] axis={axis}",
                scan_model(op, "", opset, [8, 1024, 1024], axis),
                scan_model(op, DOMAIN, 17, [8, 1024, 1024], axis),
                {"x": x},
                1.5,
            )
    n = 1_000_000
    feeds = {
        "data": np.zeros(50_000, np.float32),
        "indices": rng.integers(0, 50_000, n),
        "updates": rng.random(n, dtype=np.float32),
    }
    yield (
        "ScatterElements add, 1M updates into 50k",
        scatter_model("", 18, [50_000], n),
        scatter_model(DOMAIN, 17, [50_000], n),
        feeds,
        2.0,
    )


def _timed(sess, feeds, stock: bool) -> float:
    from onnxruntime_extensions import PyCustomOpDef, _ocos

    from ort_dml_ops.fallback import registry

    if stock:
        PyCustomOpDef.install_hooker(_ocos._on_pyop_invocation)
    try:
        start = time.perf_counter()
        sess.run(None, feeds)
        return time.perf_counter() - start
    finally:
        if stock:
            PyCustomOpDef.install_hooker(registry._fast_invoke)


def measure(native, fallback, feeds, reps, stock=False):
    so = quiet_session_options()
    native_s = ort.InferenceSession(
        native.SerializeToString(), so, providers=["CPUExecutionProvider"]
    )
    fallback_s = ort_dml_ops.InferenceSession(
        fallback,
        providers=["CPUExecutionProvider"],
        sess_options=quiet_session_options(),
    )
    a, b = (
        native_s.run(None, feeds)[0],
        fallback_s.run(None, feeds)[0],
    )  # warm-up, and a sanity check
    if not np.allclose(a, b, rtol=1e-4, atol=1e-5, equal_nan=True):
        raise SystemExit("fallback and native outputs differ")
    t_native, t_fallback, t_stock = [], [], []
    for rep in range(reps):  # interleaved: all see the same machine state
        t_native.append(_timed(native_s, feeds, False))
        t_fallback.append(_timed(fallback_s, feeds, False))
        if stock and rep < 3:  # the stock path takes seconds: three runs are enough
            t_stock.append(_timed(fallback_s, feeds, True))
    return (
        float(np.median(t_native)),
        float(np.median(t_fallback)),
        float(np.median(t_stock)) if t_stock else None,
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--reps", type=int, default=15)
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--stock",
        action="store_true",
        help="also time the library's stock (tolist) return path",
    )
    args = parser.parse_args()
    rows = []
    for name, native, fallback, feeds, target in cases():
        tn, tf, ts = measure(native, fallback, feeds, args.reps, args.stock)
        rows.append(
            {
                "case": name,
                "native_ms": tn * 1e3,
                "fallback_ms": tf * 1e3,
                "ratio": tf / tn,
                "target": target,
                "stock_ms": ts * 1e3 if ts else None,
            }
        )
    meta = {
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores",
        "onnxruntime": ort.__version__,
        "date": time.strftime("%Y-%m-%d"),
        "reps": args.reps,
    }
    if args.json:
        print(json.dumps({"meta": meta, "rows": rows}, indent=1))
        return
    print(f"# {meta}")
    print(
        f"{'case':44} {'native ms':>10} {'fallback ms':>12} {'ratio':>6} {'target':>7}"
        + ("  stock ms (ratio)" if args.stock else "")
    )
    for r in rows:
        flag = "ok  " if r["ratio"] <= r["target"] else "MISS"
        stock = (
            f"  {r['stock_ms']:.0f} ({r['stock_ms'] / r['native_ms']:.0f}x)"
            if r["stock_ms"]
            else ""
        )
        print(
            f"{r['case']:44} {r['native_ms']:10.1f} {r['fallback_ms']:12.1f} {r['ratio']:6.2f} {r['target']:6.1f}x {flag}{stock}"
        )


if __name__ == "__main__":
    main()
