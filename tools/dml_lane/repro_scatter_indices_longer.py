"""DirectML refuses a ScatterElements whose indices are longer than the data on its axis.

    .venv/bin/python tools/dml_lane/repro_scatter_indices_longer.py

One ScatterElements (opset 17, reduction none, axis 0) into [5, 3] data, static and symbolic
shapes, on the DML lane against ORT's CPU EP (2026-11-28, 23:15 UTC):

- indices [4, 3] (unique, or with duplicates), [2, 3], [5, 3]: run on the DML EP, outputs equal;
- indices [6, 3]: the DML EP claims the node and fails with 80070057 (Invalid parameter,
  MLOperatorAuthorImpl.cpp) — at session creation with static shapes, at the run with symbolic
  ones. ONNX allows it (more updates than rows, as torch's index_add / scatter_ export).

ScatterND with more updates than data rows runs and matches (checked the same way). This is why
`convert` moves a model to opset 17 (where the EP's own scatter kernel serves the node) only
where the graph's shapes rule the longer indices out (converter/rules/opset.py
`_unsafe_scatters`). Exit status 1 when a case that should run does not, or a refused case runs.
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


def _model(dshape, ishape, symbolic):
    d = ["r", "c"] if symbolic else dshape
    i = ["k", "c2"] if symbolic else ishape
    graph = helper.make_graph(
        [
            helper.make_node(
                "ScatterElements", ["data", "indices", "updates"], ["y"], axis=0
            )
        ],
        "g",
        [
            helper.make_tensor_value_info("data", TensorProto.FLOAT, d),
            helper.make_tensor_value_info("indices", TensorProto.INT64, i),
            helper.make_tensor_value_info("updates", TensorProto.FLOAT, i),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, d)],
    )
    return helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=10
    )


def main() -> int:
    rng = np.random.default_rng(0)
    specs = [
        ("fewer-unique", np.array([[4, 0, 1], [2, 3, 4], [0, 1, 2], [1, 4, 0]]), True),
        (
            "fewer-duplicates",
            np.array([[4, 0, 1], [4, 3, 4], [0, 0, 2], [1, 4, 0]]),
            True,
        ),
        ("same-length", rng.integers(0, 5, (5, 3)), True),
        ("longer", rng.integers(0, 5, (6, 3)), False),
    ]
    cases, wants, expect = [], [], []
    for label, idx, runs in specs:
        for symbolic in (False, True):
            model = _model([5, 3], list(idx.shape), symbolic)
            feeds = {
                "data": rng.normal(size=(5, 3)).astype(np.float32),
                "indices": idx.astype(np.int64),
                "updates": rng.normal(size=idx.shape).astype(np.float32),
            }
            cpu = ort.InferenceSession(
                model.SerializeToString(), providers=["CPUExecutionProvider"]
            )
            wants.append(cpu.run(None, feeds)[0])
            name = f"{label}-{'symbolic' if symbolic else 'static'}"
            cases.append(
                Case(name, model, feeds, session_options={"log_severity_level": 3})
            )
            expect.append(runs)
    status = 0
    for case, want, runs, r in zip(cases, wants, expect, run_cases(cases)):
        if r.ok:
            same = np.array_equal(r.outputs[0], want)
            print(
                f"{case.name}: ran on {r.assignment[0][0]}, outputs {'equal' if same else 'DIFFER'}"
            )
            status |= not (runs and same)
        else:
            print(f"{case.name}: fails at {r.stage}: {(r.error or '')[-90:]}")
            status |= runs
    return status


if __name__ == "__main__":
    sys.exit(main())
