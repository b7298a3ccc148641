"""Time `inspect` on a synthetic 10,000-node model (target: < 2 s on the dev machine).

    python tools/bench_inspect.py [--nodes 10000] [--target dml] [--repeat 3]

The model chains element-wise ops, CumSum, ScatterElements (with and without reduction), Shape
and Reshape, so every rule path runs (kernel lookup, support query, CPU-preferred nodes, copies).
Not a timed test: run it by hand and report the number.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import onnx
from onnx import TensorProto as T
from onnx import helper as h

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def build(n_nodes: int, opset: int = 17) -> onnx.ModelProto:
    nodes, inits = (
        [],
        [
            h.make_tensor("axis", T.INT64, [], [1]),
            h.make_tensor("idx", T.INT64, [2, 3], [0] * 6),
        ],
    )
    cur = "x"
    i = 0
    cycle = [
        "Relu",
        "Add",
        "CumSum",
        "ScatterElements",
        "Mul",
        "ScatterElementsAdd",
        "Neg",
    ]
    while len(nodes) < n_nodes:
        kind = cycle[i % len(cycle)]
        out = f"v{i}"
        if kind == "Add":
            nodes.append(h.make_node("Add", [cur, cur], [out], name=f"n{i}"))
        elif kind == "Mul":
            nodes.append(h.make_node("Mul", [cur, "x"], [out], name=f"n{i}"))
        elif kind == "CumSum":
            nodes.append(h.make_node("CumSum", [cur, "axis"], [out], name=f"n{i}"))
        elif kind == "ScatterElements":
            nodes.append(
                h.make_node("ScatterElements", [cur, "idx", cur], [out], name=f"n{i}")
            )
        elif kind == "ScatterElementsAdd":
            nodes.append(
                h.make_node(
                    "ScatterElements",
                    [cur, "idx", cur],
                    [out],
                    name=f"n{i}",
                    reduction="add",
                )
            )
        else:
            nodes.append(h.make_node(kind, [cur], [out], name=f"n{i}"))
        cur = out
        i += 1
    g = h.make_graph(
        nodes,
        "bench",
        [h.make_tensor_value_info("x", T.FLOAT, [2, 3])],
        [h.make_tensor_value_info(cur, T.FLOAT, [2, 3])],
        inits,
    )
    m = h.make_model(g, opset_imports=[h.make_opsetid("", opset)])
    m.ir_version = 10
    return m


def main(argv=None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--nodes", type=int, default=10_000)
    p.add_argument("--target", default="dml")
    p.add_argument("--repeat", type=int, default=3)
    a = p.parse_args(argv)
    from ort_dml_ops import inspect
    from ort_dml_ops.targets import get_target

    get_target(
        a.target
    )  # table loading is a one-off per process; timed separately below
    m = build(a.nodes)
    t0 = time.perf_counter()
    inspect(build(10), a.target)
    first = time.perf_counter() - t0
    times = []
    for _ in range(a.repeat):
        t0 = time.perf_counter()
        r = inspect(m, a.target)
        times.append(time.perf_counter() - t0)
    s = r.summary
    print(
        f"inspect of {len(r.nodes)} nodes (target {a.target}): best {min(times):.3f} s, "
        f"worst {max(times):.3f} s over {a.repeat} runs; warm-up on 10 nodes {first:.3f} s; "
        f"summary {s}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
