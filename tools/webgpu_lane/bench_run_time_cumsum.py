"""A CumSum along an axis known only at run time on the WebGPU plugin: its own kernel, the
run-time-length blocked scan `--strategy lower` (or `auto` with `--input-shape`) emits, and ORT's
CPU kernel between copies.

    .venv/bin/python tools/webgpu_lane/bench_run_time_cumsum.py    # after `make webgpu-lane`

The model is `x -> Add 1 -> CumSum(axis 1) -> Add 1` over [4, n] with n a name (a sequence or a
vocabulary the graph leaves open), so the data is on the device before and after the scan, as in
a real model. Per length and type: the median of interleaved runs of each variant, the Memcpy
kernels of one profiled run, the kernels `inspect` places, and the output checked against numpy
(int32 exact; float32 within the bound of any summation order). The plugin's kernel reads the
whole prefix for every element (onnxruntime/core/providers/webgpu/math/cumsum.cc): O(n²) work a
line. On lavapipe the figures count work, not GPU time: a GPU runs the prefix reads in parallel
and pays each of the scan's dispatches (cost.DeviceModel), so the crossover moves up there;
`tune` measures it on the user's device.
"""

from __future__ import annotations

import argparse

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as h

from ort_dml_ops.bench import budget
from ort_dml_ops.bench import webgpu as W
from ort_dml_ops.bench.timing import interleaved
from ort_dml_ops.conversion import convert


def model(dtype: int) -> onnx.ModelProto:
    # Add, not the bench's Neg: the plugin has no int32 Neg
    nodes = [
        h.make_node("Add", ["x", "one"], ["x1"], name="add_x"),
        h.make_node("CumSum", ["x1", "axis"], ["s"], name=W.OP_NODE),
        h.make_node("Add", ["s", "one"], ["y"], name="add_y"),
    ]
    g = h.make_graph(
        nodes,
        "g",
        [h.make_tensor_value_info("x", dtype, [4, "n"])],
        [h.make_tensor_value_info("y", dtype, [4, "n"])],
        [h.make_tensor("axis", T.INT64, [], [1]), h.make_tensor("one", dtype, [], [1])],
    )
    return h.make_model(g, opset_imports=[h.make_opsetid("", 14)], ir_version=8)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lengths", default="1000,10000,100000")
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    print(f"adapter: {W.adapter_name()}")
    print("type     n        variant  kernels copies  median ms")
    for dtype, np_type in ((T.FLOAT, np.float32), (T.INT32, np.int32)):
        native = model(dtype)
        lowered = convert(native, "webgpu", strategy="lower").model
        variants = {
            "native": (native, False),
            "lowered": (lowered, False),
            "cpu": (native, True),
        }
        sessions = {k: W._session(m, force_cpu=f) for k, (m, f) in variants.items()}
        for n in map(int, args.lengths.split(",")):
            if np_type is np.int32:
                x = rng.integers(-(2**31), 2**31, [4, n], dtype=np.int64).astype(
                    np.int32
                )
                want = np.cumsum(x + np.int32(1), axis=1, dtype=np.int32) + np.int32(1)
            else:
                x = rng.uniform(-1, 1, [4, n]).astype(np.float32)
                x1 = (x + np.float32(1)).astype(np.float64)
                want = np.cumsum(x1, axis=1) + 1
            bound = (
                (n + 2) * 2.0**-23 * (np.abs(want) + np.cumsum(np.abs(x) + 1, axis=1))
            )
            for name, s in sessions.items():
                got = s.run(None, {"x": x})[0]
                ok = (
                    np.array_equal(got, want)
                    if np_type is np.int32
                    else bool(np.all(np.abs(got - want) <= bound))
                )
                assert ok, f"{name} n={n}: output differs from numpy"
            times = interleaved(
                {
                    k: (lambda s=s, x=x: s.run(None, {"x": x}))
                    for k, s in sessions.items()
                },
                args.reps,
            )
            for name, (m, force) in variants.items():
                copies, _ = W._copies(m, force, {"x": x})
                kernels = (
                    budget.count_kernels(m, "webgpu").kernels if not force else "-"
                )
                print(
                    f"{np.dtype(np_type).name:8} {n:<8} {name:8} {kernels!s:>7} {copies:>6}"
                    f"  {times[name]['median_s'] * 1e3:9.2f}"
                )


if __name__ == "__main__":
    main()
