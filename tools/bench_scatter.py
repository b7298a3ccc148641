"""Lowered scatter vs ONNX Runtime's native ScatterElements on the CPU EP, side by side.

    python tools/bench_scatter.py [--sizes 10000,1000000] [--reductions none,add,max] [--reps 5]
                                  [--target dml|webgpu] [--json]

Per reduction and size (float32 data [n, n], as many updates along axis 1, duplicates
everywhere): the native kernel on the original model, the lowered graph with static shapes
(run-time index guard on, and off), and the lowered graph of the same model with every dim
symbolic (the shapes torch.onnx exports), all interleaved in one run (`bench.timing`).
Alongside: the lowered graphs' node counts and full-size write passes from ORT's own profile
(`bench.passes`: bytes written by the kernels ÷ bytes of the data; views — Reshape, Squeeze,
Unsqueeze — counted apart), and the host↔device copies `inspect` predicts for the target.
Outputs are checked against the native kernel in the same run (ints exact, floats within the
documented bound). `--target webgpu` converts for the WebGPU plugin instead (float data there
takes the WebGPU-clean variant, converter/rules/scatter_clean.py), still run on the CPU EP.
"""

from __future__ import annotations

import argparse
import json
import platform

import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper

from ort_dml_ops import convert, inspect
from ort_dml_ops.bench.passes import count_passes
from ort_dml_ops.bench.timing import interleaved, quiet_session_options


def scatter_model(n: int, reduction: str, symbolic: bool):
    dims = ["rows", "cols"] if symbolic else [n, n]
    node = helper.make_node(
        "ScatterElements",
        ["data", "indices", "updates"],
        ["y"],
        axis=1,
        reduction=reduction,
    )
    g = helper.make_graph(
        [node],
        "scatter",
        [
            helper.make_tensor_value_info("data", TensorProto.FLOAT, dims),
            helper.make_tensor_value_info("indices", TensorProto.INT64, dims),
            helper.make_tensor_value_info("updates", TensorProto.FLOAT, dims),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, dims)],
    )
    return helper.make_model(
        g, opset_imports=[helper.make_opsetid("", 18)], ir_version=10
    )


def feeds_for(n: int, reduction: str, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    if reduction == "none":  # a permutation per row: the result is defined
        indices = np.argsort(rng.random((n, n)), axis=1).astype(np.int64)
    else:
        indices = rng.integers(-n, n, (n, n)).astype(np.int64)
    return {
        "data": rng.normal(size=(n, n)).astype(np.float32),
        "indices": indices,
        "updates": rng.normal(size=(n, n)).astype(np.float32),
    }


def _write_passes(model, feeds, data_bytes: int) -> float:
    """Passes without the view ops (their output aliases the input on the CPU EP)."""
    so = quiet_session_options()
    return count_passes(model, feeds, sess_options=so).passes(data_bytes, views=False)


def bench_case(n: int, reduction: str, reps: int, target: str = "dml") -> dict:
    feeds = feeds_for(n, reduction)
    static = scatter_model(n, reduction, symbolic=False)
    symbolic = scatter_model(n, reduction, symbolic=True)
    variants = {
        "native": static,
        "lowered": convert(static, target, strategy="lower").model,
        "lowered_unguarded": convert(
            static, target, strategy="lower", check_indices=False
        ).model,
        "lowered_symbolic": convert(symbolic, target, strategy="lower").model,
    }
    sessions = {
        k: ort.InferenceSession(
            m.SerializeToString(),
            quiet_session_options(),
            providers=["CPUExecutionProvider"],
        )
        for k, m in variants.items()
    }
    want = sessions["native"].run(None, feeds)[0]
    checks = {}
    for k, s in sessions.items():
        got = s.run(None, feeds)[0]
        checks[k] = bool(
            np.allclose(
                got, want, rtol=1e-5, atol=1e-5 * max(1.0, float(np.abs(want).max()))
            )
        )
    times = interleaved(
        {k: (lambda s=s: s.run(None, feeds)) for k, s in sessions.items()}, reps
    )
    data_bytes = feeds["data"].nbytes
    out = {
        "n": n,
        "elements": n * n,
        "reduction": reduction,
        "outputs_match": checks,
        "variants": {},
    }
    for k, m in variants.items():
        summary = inspect(m, target).to_dict()["summary"]
        out["variants"][k] = {
            "median_ms": times[k]["median_s"] * 1e3,
            "ratio_to_native": times[k]["median_s"] / times["native"]["median_s"],
            "nodes": len(m.graph.node),
            "write_passes": _write_passes(m, feeds, data_bytes),
            "dml_copies": summary["copies"],
            "dml_cpu_nodes": summary["cpu_nodes"],
        }
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--sizes",
        default="100,1000",
        help="n for [n, n] data (comma-separated); 1000 = 1e6 elements",
    )
    ap.add_argument("--reductions", default="none,add,mul,max,min")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--target", choices=("dml", "webgpu"), default="dml")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    cases = [
        bench_case(int(n), r, args.reps, args.target)
        for n in args.sizes.split(",")
        for r in args.reductions.split(",")
    ]
    record = {
        "machine": {"platform": platform.platform(), "onnxruntime": ort.__version__},
        "cases": cases,
    }
    if args.json:
        print(json.dumps(record, indent=1))
        return
    print(
        f"onnxruntime {ort.__version__}, CPU EP, lowered for {args.target}, interleaved medians; "
        "passes = bytes written / data bytes (views apart)"
    )
    print(
        f"{'elements':>9} {'red':>4} | {'variant':<18} {'ms':>9} {'x native':>9} {'nodes':>6} {'passes':>7} "
        f"{'copies':>10} {'cpu nodes':>13} ok"
    )
    for c in cases:
        for k, v in c["variants"].items():
            print(
                f"{c['elements']:>9} {c['reduction']:>4} | {k:<18} {v['median_ms']:9.2f} {v['ratio_to_native']:9.2f} "
                f"{v['nodes']:6d} {v['write_passes']:7.1f} {v['dml_copies']:10d} {v['dml_cpu_nodes']:13d} "
                f"{'yes' if c['outputs_match'][k] else 'NO'}"
            )


if __name__ == "__main__":
    main()
