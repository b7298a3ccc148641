"""A prototype CumProd construction for the lowering owner, measured by `bench --proto`.

Not used by `convert` (ort_dml_ops/converter/rules/cumprod.py is the rule). Inclusive, forward,
static shape, scan axis with inner size >= 16 (the layout the current rule does not transpose).

The current rule (docs/convert.md): within-block chains first, then the block totals' exclusive
chain, then one broadcast Mul of every element by its block's prefix: ~2·(b + B) nodes and
about four full passes. This one computes the block totals first, with one ReduceProd (a read
pass, no write), chains them (small: B slices of [O, 1, 1, I]) and seeds each block's chain with
its prefix, so the broadcast Mul pass disappears and the node count halves (b + B + 6):

    x4 = Reshape(x, [O, B, b, I])
    T  = ReduceProd(x4, axes=[2], keepdims=1)                  # [O, B, 1, I] block totals
    E  = Concat(ones, T0, T0·T1, ...)  (B-2 Muls)              # exclusive prefix of the blocks
    y0 = x4[:, :, 0] · E ;  yt = y(t-1) · x4[:, :, t]          # b Muls, one Split, one Concat
    y  = Reshape(Concat(y0..y(b-1), axis=2), shape)

Every output is still a product of exactly its k factors, each multiplication rounding once, so
the bound of docs/convert.md (2·(n+1)·u elementwise) holds unchanged.
"""

from __future__ import annotations

import math

import numpy as np
import onnx
from onnx import helper, numpy_helper


def _block(n: int) -> int | None:
    """A divisor b of n near sqrt(n) (None when n has none in [sqrt(n)/2, 2 sqrt(n)])."""
    r = math.isqrt(n)
    for d in sorted(range(1, n + 1), key=lambda d: abs(d - r)):
        if n % d == 0 and r / 2 <= d <= 2 * r + 1:
            return d
        if abs(d - r) > r:
            break
    return None


def proto_model(shape, axis: int, dtype: str = "float32") -> onnx.ModelProto | None:
    n = shape[axis]
    O = int(np.prod(shape[:axis], dtype=np.int64))  # noqa: E741 - outer, inner: the usual names
    I = int(np.prod(shape[axis + 1 :], dtype=np.int64))  # noqa: E741
    b = _block(n)
    if b is None or I < 16 or n < 4:
        return None
    B = n // b
    t = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    inits = [
        numpy_helper.from_array(np.array([O, B, b, I], np.int64), "s4"),
        numpy_helper.from_array(np.array(shape, np.int64), "s"),
        numpy_helper.from_array(np.array([2], np.int64), "ax2"),
        numpy_helper.from_array(np.ones([O, 1, 1, I], dtype), "one"),
    ]
    nodes = [
        helper.make_node("Reshape", ["x", "s4"], ["x4"]),
        helper.make_node("ReduceProd", ["x4", "ax2"], ["T"], keepdims=1),
    ]
    if B == 1:
        seed = None
    else:
        tot = [f"T{j}" for j in range(B)]
        nodes.append(helper.make_node("Split", ["T"], tot, axis=1, num_outputs=B))
        ex = ["one", tot[0]]
        for j in range(1, B - 1):
            nodes.append(helper.make_node("Mul", [ex[-1], tot[j]], [f"E{j}"]))
            ex.append(f"E{j}")
        nodes.append(helper.make_node("Concat", ex, ["E"], axis=1))
        seed = "E"
    xs = [f"x_{k}" for k in range(b)]
    nodes.append(helper.make_node("Split", ["x4"], xs, axis=2, num_outputs=b))
    ys = []
    prev = seed
    for k in range(b):
        if prev is None:
            prev = xs[k]
            ys.append(prev)
            continue
        nodes.append(helper.make_node("Mul", [prev, xs[k]], [f"y_{k}"]))
        prev = f"y_{k}"
        ys.append(prev)
    nodes += [
        helper.make_node("Concat", ys, ["y4"], axis=2),
        helper.make_node("Reshape", ["y4", "s"], ["y"]),
    ]
    g = helper.make_graph(
        nodes,
        "cumprod_proto",
        [helper.make_tensor_value_info("x", t, shape)],
        [helper.make_tensor_value_info("y", t, shape)],
        inits,
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)], ir_version=10)
    onnx.checker.check_model(m, full_check=True)
    return m


def run_proto(shapes, reps: int = 9) -> list[dict]:
    """Native CumProd-26 vs the current lowering vs the prototype, interleaved, on the CPU EP."""
    import onnxruntime as ort

    from .._domain import DOMAIN
    from ..conversion import convert
    from . import models
    from .timing import interleaved, quiet_session_options

    so = quiet_session_options(log_severity_level=3)
    rows = []
    for shape, axis in shapes:
        x = np.random.default_rng(0).uniform(0.999, 1.001, shape).astype(np.float32)
        proto = proto_model(shape, axis)
        if proto is None:
            continue
        cur = convert(
            models.scan_model("CumProd", "float32", shape, axis, domain=DOMAIN),
            "dml",
            strategy="lower",
        ).model
        sess = {
            k: ort.InferenceSession(
                m.SerializeToString(), so, providers=["CPUExecutionProvider"]
            )
            for k, m in (
                ("native", models.scan_model("CumProd", "float32", shape, axis)),
                ("lowered", cur),
                ("proto", proto),
            )
        }
        outs = {k: s.run(None, {"x": x})[0] for k, s in sess.items()}
        ref = np.cumprod(x.astype(np.float64), axis=axis)
        t = interleaved(
            {k: (lambda s=s, x=x: s.run(None, {"x": x})) for k, s in sess.items()}, reps
        )
        ms = {k: v["median_s"] * 1e3 for k, v in t.items()}
        rows.append(
            {
                "shape": list(shape),
                "axis": axis,
                "ms": {k: round(v, 3) for k, v in ms.items()},
                "lowered/native": round(ms["lowered"] / ms["native"], 2),
                "proto/native": round(ms["proto"] / ms["native"], 2),
                "nodes": {
                    "lowered": len(cur.graph.node),
                    "proto": len(proto.graph.node),
                },
                "max_rel_err": {
                    k: float(np.max(np.abs(outs[k] - ref) / np.abs(ref))) for k in outs
                },
            }
        )
    return rows
