"""The DML EP orders no writes to a repeated position: MaxUnpool, ScatterElements, ScatterND.

    .venv/bin/python tools/dml_lane/repro_repeated_positions.py

Each op alone (reduction none) on the DML lane against ORT's CPU EP, three runs each: MaxUnpool
of 180,000 writes into 150,000 positions, 18,000 of them written, ten times each in turn;
ScatterElements-16 / ScatterND-16 of 60,000 rows of 3 into 150,000 rows, 6,000 rows written,
ten times each (2026-11-30, 22:10–22:30 UTC):

- ORT's CPU kernels write in order, so each position keeps its last write (scatter.cc,
  unpool.cc: a loop over the updates);
- on the DML EP a run may leave thousands of elements with another write, a different set
  each time, and the next run none (MaxUnpool 5,178 / 16,954 / 11,273 of 150,000 in one
  sitting, 6,658 / 0 / 16,970 in another; ScatterElements 0 / 7,672 / 17,639 of 450,000;
  ScatterND 0 / 0 / 17,619). DirectML
  says so: "If two output element indices overlap (which is invalid), then there's no
  guarantee of which last write wins" (DML_SCATTER_OPERATOR_DESC, DML_SCATTER_ND_OPERATOR_DESC).
  Small inputs (a few thousand writes) came out in order: one workgroup.

Not an emulator bug, then, but the EP's contract; ONNX calls repeated indices without a
reduction invalid too. It is why the lowered scatter without a reduction sorts its positions
and lets only the last update of each write (converter/rules/scatter_write.py, tests/dml/
test_convert_dml.py `lean_none_repeated*`), and why docs/convert.md says what a scatter moved
to the EP's own kernel (opset 17) does with repeated indices. Exit status 1 when a small case
differs from ORT's CPU EP, 0 otherwise (the large cases are reported, not judged: any order
is the EP's to choose).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

from dml_lane.driver import Case, run_cases


def _model(op: str):
    f, i64 = TensorProto.FLOAT, TensorProto.INT64
    if op == "MaxUnpool":
        node = helper.make_node(
            "MaxUnpool", ["x", "i", "s"], ["y"], kernel_shape=[1], strides=[1]
        )
        inputs = [
            helper.make_tensor_value_info("x", f, [1, 1, "k"]),
            helper.make_tensor_value_info("i", i64, [1, 1, "k"]),
            helper.make_tensor_value_info("s", i64, [3]),
        ]
        opset = 11
    else:
        attrs = {"axis": 0} if op == "ScatterElements" else {}
        node = helper.make_node(op, ["x", "i", "u"], ["y"], **attrs)
        coords = 3 if op == "ScatterElements" else 1
        inputs = [
            helper.make_tensor_value_info("x", f, ["n", 3]),
            helper.make_tensor_value_info("i", i64, ["k", coords]),
            helper.make_tensor_value_info("u", f, ["k", 3]),
        ]
        opset = 16
    graph = helper.make_graph(
        [node], "g", inputs, [helper.make_tensor_value_info("y", f, None)]
    )
    return helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8
    )


def _feeds(op: str, n: int, k: int, distinct: int, rng) -> dict:
    """n positions (MaxUnpool: n elements; the scatters: n rows of 3), k writes (rows of 3),
    `distinct` of them different, repeated in turn."""
    if op == "MaxUnpool":
        base = rng.integers(0, n, distinct)
        pos = np.tile(base, k // distinct + 1)[:k].astype(np.int64)
        return {
            "x": np.arange(1, k + 1, dtype=np.float32).reshape(1, 1, -1),
            "i": pos.reshape(1, 1, -1),
            "s": np.array([1, 1, max(n, k)], np.int64),
        }
    coords = 3 if op == "ScatterElements" else 1
    base = rng.integers(0, n, (distinct, coords))
    return {
        "x": rng.normal(size=(n, 3)).astype(np.float32),
        "i": np.tile(base, (k // distinct + 1, 1))[:k].astype(np.int64),
        "u": rng.normal(size=(k, 3)).astype(np.float32),
    }


def main() -> int:
    rng = np.random.default_rng(0)
    cases, wants, small = [], [], []
    for op in ("MaxUnpool", "ScatterElements", "ScatterND"):
        sizes = (
            ((7_500, 3_000, 300), (150_000, 180_000, 18_000))
            if op == "MaxUnpool"
            else ((2_500, 1_000, 100), (150_000, 60_000, 6_000))
        )
        for n, k, distinct in sizes:
            model, feeds = _model(op), _feeds(op, n, k, distinct, rng)
            sess = ort.InferenceSession(
                model.SerializeToString(), providers=["CPUExecutionProvider"]
            )
            want = sess.run(None, feeds)[0]
            for run in range(3):
                cases.append(Case(f"{op} {k} writes #{run}", model, feeds))
                wants.append(want)
                small.append(k < 10_000)
    failed = False
    for case, result, want, is_small in zip(cases, run_cases(cases), wants, small):
        if not result.ok:
            print(f"{case.name}: {result.stage}: {result.error}")
            failed = True
            continue
        wrong = int(np.count_nonzero(result.outputs[0] != want))
        print(f"{case.name}: {wrong} of {want.size} elements differ from ORT's CPU EP")
        failed |= is_small and wrong > 0
    return int(failed)


if __name__ == "__main__":
    sys.exit(main())
