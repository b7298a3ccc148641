"""ORT's CPU ScatterND loses updates of a reduction when its thread pool splits the work.

    .venv/bin/python tools/repro_ort_cpu_scatternd_race.py

onnxruntime/core/providers/cpu/tensor/scatter_nd.cc (`ScatterNDDispatchTarget`) applies each
update slice in a `TryParallelFor` over the slices, with a plain read-modify-write of the output
(`Func_Add_ND`, `Func_Max_ND`, ...): two slices aimed at the same row on two threads race, and
one of the updates can be lost. ONNX allows repeated indices with a reduction (that is what a
reduction is for), so this is a wrong value, not an unspecified order. The pool splits only
large work (cost per slice: its element count), so small models never show it. The symptom
was reported as microsoft/onnxruntime#18048 ("ScatterND multithreaded inference": outputs
that change from run to run, none on one thread), closed; 1.31.1 still shows it.

The case: ScatterND of 1,000 slices of 1,000 float32 into the first 100 of 1,000 rows (ten
slices a row on average), updates from {1, -1, 2, 0.5, 3} — every partial sum and product is
exact in float32 and a max or min is order-free, so any difference from numpy's sequential
loop is a lost update. Ten runs of each reduction (onnxruntime 1.31.1, 2 cores, 2026-12-01
01:10 UTC), elements wrong per run: add [0, 0, 0, 704, 0, 160, 344, 16, 0, 0], mul [3, 4,
33, 0, 0, 0, 15, 0, 898, 0], max [28, 0, 0, 0, 0, 0, 24, 0, 9, 0], min [2, 11, 0, 22, 21, 7,
3, 1, 0, 0]; without a reduction 75,917 to 97,572 in every run hold another slice than the
last (ONNX calls repeated indices without a reduction invalid: an unspecified order,
docs/webgpu.md). One thread: always numpy's answer. ORT's CPU ScatterElements (scatter.cc)
loops in order and is unaffected.

What ort-dml-ops does about it: the lowered ScatterND is exact whatever ORT's thread count
(tests/converter/rules/test_scatter.py, `test_lowered_scatter_nd_reduction_is_exact_where_orts_
cpu_kernel_races`); where `auto` keeps a ScatterND with a reduction on ORT's CPU kernel, as the
original model would run it, the report's `cost` note says that kernel may lose updates, and
`--strategy lower` avoids it. Exit status: 0 whatever the race does (it is ORT's, and it may
not show in a given run); 1 if a single-threaded session differs from numpy.
"""

from __future__ import annotations

import sys

import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper

N = 1000
RUNS = 10
ROWS = 100  # rows written: ten slices each on average, so that two threads meet


def _model(reduction: str) -> bytes:
    node = helper.make_node(
        "ScatterND", ["data", "indices", "updates"], ["y"], reduction=reduction
    )
    graph = helper.make_graph(
        [node],
        "g",
        [
            helper.make_tensor_value_info("data", TensorProto.FLOAT, [N, N]),
            helper.make_tensor_value_info("indices", TensorProto.INT64, [N, 1]),
            helper.make_tensor_value_info("updates", TensorProto.FLOAT, [N, N]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [N, N])],
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=10
    )
    return model.SerializeToString()


def _numpy(reduction: str, feeds: dict) -> np.ndarray:
    out = feeds["data"].copy()
    for i, row in enumerate(feeds["indices"][:, 0] % N):
        upd = feeds["updates"][i]
        if reduction == "add":
            out[row] += upd
        elif reduction == "mul":
            out[row] *= upd
        elif reduction == "max":
            out[row] = np.maximum(out[row], upd)
        elif reduction == "min":
            out[row] = np.minimum(out[row], upd)
        else:
            out[row] = upd
    return out


def main() -> int:
    rng = np.random.default_rng(0)
    values = np.array([1, -1, 2, 0.5, 3], np.float32)
    failed = False
    for reduction in ("add", "mul", "max", "min", "none"):
        model = _model(reduction)
        one = ort.SessionOptions()
        one.intra_op_num_threads = 1
        single = ort.InferenceSession(model, one, providers=["CPUExecutionProvider"])
        pooled = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
        feeds = {
            "data": rng.integers(-3, 4, (N, N)).astype(np.float32),
            "indices": rng.integers(-ROWS, ROWS, (N, 1)),
            "updates": rng.choice(values, (N, N)),
        }
        want = _numpy(reduction, feeds)
        if (
            reduction == "mul"
        ):  # products of up to ~10 factors of 3: exact, but compare as such
            want = want.astype(np.float32)
        single_wrong = int(np.sum(single.run(None, feeds)[0] != want))
        failed |= single_wrong > 0
        pooled_wrong = [
            int(np.sum(pooled.run(None, feeds)[0] != want)) for _ in range(RUNS)
        ]
        print(
            f"ScatterND {reduction:4s}: one thread {single_wrong} wrong; "
            f"thread pool, {RUNS} runs: {pooled_wrong}"
        )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
