"""Which kernels keep the last write to a repeated position: the WebGPU plugin's, ORT's CPU
EP's, the lowering's.

    . ~/.cache/ort-dml-ops/webgpu-lane/env.sh   # after `make webgpu-lane`
    .venv/bin/python tools/webgpu_lane/repro_repeated_positions.py

A scatter without a reduction (opset 18) of [1000, 1000] updates into [1000, 1000] data, indices
drawn from [-1000, 1000) so that about a third of the positions are written twice or more:
ScatterElements along axis 0, and ScatterND of 1,000 rows of 1,000. The reference is the last
update in row-major order, written by a Python loop. Three runs of each, counting elements that
differ from it (2026-12-01, 01:00 UTC, lavapipe; int32 data):

- the plugin's own ScatterElements: 85,435 / 57,667 / 74,444 of 1,000,000 (81,013 and
  100,355 in an earlier sitting, 38,546 / 53,159 / 84,635 at 04:00 UTC); its ScatterND
  0 / 0 / 0 here, 85,000 in an earlier sitting (with run-time shapes), 0 / 0 / 72,000 at 04:00 — its shaders write in no fixed order, like the DML EP's
  (tools/dml_lane/repro_repeated_positions.py); `auto` leaves these nodes to it, as the
  original model does;
- ORT's CPU ScatterElements: 0 (scatter.cc writes the updates in order); ORT's CPU ScatterND:
  71,000 / 0 / 0 with its thread pool (59,000 and 152,000 in the earlier sitting), 0 with
  one thread — it copies slices in parallel
  (scatter_nd.cc, `ScatterNumber`: TryParallelFor over the slices), so with repeated indices
  even ORT's CPU EP has no one answer, and the lowering's reference for ScatterND is the
  row-major order that a single thread gives;
- `convert --target webgpu --strategy lower`: 0 (scatter_clean.last_writes: the last writer
  found by a ScatterElements max, every writer of a position writing its bits).

ONNX calls repeated indices without a reduction invalid, so each of these is within the spec;
the lowering is the one that gives ORT's sequential answer everywhere.

With a reduction (add, mul, max, min) repeated indices are valid, and for int32 and uint32 the
plugin's kernels give the sequential fold exactly: each update is an atomic read-modify-write
of its element, and a wrapped integer sum or product, a max or a min, is the same in any order.
The same data, values over the whole range (sums and products wrap): 0 elements differ, in
every run, for both ops, both types and all four reductions (2026-12-01, 04:00 UTC). This is
what `scatter_exact_integer_reductions` (ort_dml_ops/targets/__init__.py) records and why
`convert --target webgpu` leaves such nodes to the plugin under every strategy.

Exit status 1 when the lowering, a single-threaded CPU kernel or the plugin's integer reduction
differs from the reference; the others are reported, not judged.
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from ort_dml_ops.conversion import convert
from ort_dml_ops.session import InferenceSession

N = 1000
RUNS = 3


def _model(op: str, elem: int = TensorProto.INT32, **reduction: str):
    if op == "ScatterElements":
        node = helper.make_node(
            op, ["data", "indices", "updates"], ["y"], axis=0, **reduction
        )
        ishape = [N, N]
    else:
        node = helper.make_node(op, ["data", "indices", "updates"], ["y"], **reduction)
        ishape = [N, 1]
    graph = helper.make_graph(
        [node],
        "g",
        [
            helper.make_tensor_value_info("data", elem, [N, N]),
            helper.make_tensor_value_info("indices", TensorProto.INT64, ishape),
            helper.make_tensor_value_info("updates", elem, [N, N]),
        ],
        [helper.make_tensor_value_info("y", elem, [N, N])],
    )
    return helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=10
    )


def _reference(op: str, feeds: dict) -> np.ndarray:
    """The last update in row-major order wins, one write at a time."""
    out = feeds["data"].copy()
    idx, upd = feeds["indices"] % N, feeds["updates"]
    if op == "ScatterElements":
        for i in range(idx.shape[0]):
            out[idx[i], np.arange(N)] = upd[i]
    else:
        for i in range(idx.shape[0]):
            out[idx[i, 0]] = upd[i]
    return out


def _folded(op: str, reduction: str, feeds: dict) -> np.ndarray:
    """Every update folded into its element in row-major order (wrapping)."""
    fold = {"add": np.add, "mul": np.multiply, "max": np.maximum, "min": np.minimum}
    out = feeds["data"].copy()
    idx, upd = feeds["indices"] % N, feeds["updates"]
    with np.errstate(over="ignore"):
        if op == "ScatterElements":
            cols = np.broadcast_to(np.arange(N), idx.shape)
            fold[reduction].at(out, (idx, cols), upd)
        else:
            for i in range(idx.shape[0]):
                out[idx[i, 0]] = fold[reduction](out[idx[i, 0]], upd[i])
    return out


def integer_reductions(rng) -> bool:
    """The plugin's own int32 / uint32 reductions against the sequential fold: any wrong?"""
    failed = False
    webgpu = [("WebGpuExecutionProvider", {})]
    for dtype, elem in ((np.int32, TensorProto.INT32), (np.uint32, TensorProto.UINT32)):
        info = np.iinfo(dtype)
        for op in ("ScatterElements", "ScatterND"):
            ishape = (N, N) if op == "ScatterElements" else (N, 1)
            for reduction in ("add", "mul", "max", "min"):
                feeds = {
                    "data": rng.integers(
                        info.min, info.max, (N, N), dtype, endpoint=True
                    ),
                    "indices": rng.integers(-N, N, ishape).astype(np.int64),
                    "updates": rng.integers(
                        info.min, info.max, (N, N), dtype, endpoint=True
                    ),
                }
                want = _folded(op, reduction, feeds)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    session = InferenceSession(
                        _model(op, elem, reduction=reduction), providers=webgpu
                    )
                wrong = [
                    int(np.sum(session.run(None, feeds)[0] != want))
                    for _ in range(RUNS)
                ]
                failed |= any(wrong)
                print(
                    f"{op:16s} {dtype.__name__:6s} {reduction:3s} plugin's own kernel "
                    f"elements not the sequential fold: {wrong}"
                )
    return failed


def _sessions(model) -> dict:
    one = ort.SessionOptions()
    one.intra_op_num_threads = 1
    lowered = convert(model, "webgpu", strategy="lower", with_inspect=False).model
    webgpu = [("WebGpuExecutionProvider", {})]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {
            "plugin's own kernel": InferenceSession(model, providers=webgpu),
            "ORT CPU EP": ort.InferenceSession(
                model.SerializeToString(), providers=["CPUExecutionProvider"]
            ),
            "ORT CPU EP, 1 thread": ort.InferenceSession(
                model.SerializeToString(), one, providers=["CPUExecutionProvider"]
            ),
            "lowered, on the plugin": InferenceSession(lowered, providers=webgpu),
        }


def main() -> int:
    rng = np.random.default_rng(5)
    failed = False
    for op in ("ScatterElements", "ScatterND"):
        model = _model(op)
        ishape = (N, N) if op == "ScatterElements" else (N, 1)
        info = np.iinfo(np.int32)
        feeds = {
            "data": rng.integers(info.min, info.max, (N, N), np.int32, endpoint=True),
            "indices": rng.integers(-N, N, ishape).astype(np.int64),
            "updates": rng.integers(
                info.min, info.max, (N, N), np.int32, endpoint=True
            ),
        }
        want = _reference(op, feeds)
        for name, session in _sessions(model).items():
            wrong = [
                int(np.sum(session.run(None, feeds)[0] != want)) for _ in range(RUNS)
            ]
            judged = name in ("ORT CPU EP, 1 thread", "lowered, on the plugin")
            failed |= judged and any(wrong)
            print(f"{op:16s} {name:24s} elements not the last write: {wrong}")
    failed |= integer_reductions(rng)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
