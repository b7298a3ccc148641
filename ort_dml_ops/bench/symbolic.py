"""CumProd lowered on a symbolic axis vs the static lowering of the same length (issue 15 item 2).

A CumProd whose axis length is known only at run time must cost within `LIMIT` (1.3×) of the
static lowering of the same length n, on the CPU EP, at n = 10, 1000, 100000. For each n,
float32 x of about `elements` elements, the scan along the last axis ([elements/n, n]: strided
columns) and along the first ([n, elements/n]: contiguous slices); both models are converted with
strategy lower (target dml), one with the axis length static, one with it symbolic ("L"), and
timed interleaved in one process (`timing.interleaved`, medians); the two outputs are compared
with each other and with numpy's cumprod in float64.
"""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper, numpy_helper

LENGTHS = (10, 1000, 100_000)
LIMIT = 1.3


def cumprod_model(shape, axis: int):
    from .._domain import DOMAIN

    g = helper.make_graph(
        [helper.make_node("CumProd", ["x", "axis"], ["y"], domain=DOMAIN)],
        "cumprod",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)],
        [numpy_helper.from_array(np.array(axis, np.int64), "axis")],
    )
    return helper.make_model(
        g,
        opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(DOMAIN, 1)],
        ir_version=10,
    )


def run_case(
    n: int, elements: int, axis: int, reps: int, budget_s: float | None = None
) -> dict:
    import onnxruntime as ort

    from ..conversion import convert
    from .timing import interleaved, quiet_session_options

    other = max(1, elements // n)
    shape = [other, n] if axis == 1 else [n, other]
    sym: list[int | str] = list(shape)
    sym[axis] = "L"
    static = convert(
        cumprod_model(shape, axis), "dml", strategy="lower", with_inspect=False
    )
    symbolic = convert(
        cumprod_model(sym, axis), "dml", strategy="lower", with_inspect=False
    )
    x = np.random.default_rng(n).uniform(0.9, 1.1, shape).astype(np.float32)
    sess = {
        k: ort.InferenceSession(
            r.model.SerializeToString(),
            quiet_session_options(),
            providers=["CPUExecutionProvider"],
        )
        for k, r in (("static", static), ("symbolic", symbolic))
    }
    a, b = (s.run(None, {"x": x})[0] for s in sess.values())
    want = np.cumprod(x.astype(np.float64), axis=axis)
    t = interleaved(
        {k: (lambda s=s: s.run(None, {"x": x})) for k, s in sess.items()},
        reps,
        budget_s=budget_s,
        min_reps=min(3, reps),
    )
    return {
        "n": n,
        "shape": shape,
        "axis": axis,
        "static_ms": t["static"]["median_s"] * 1e3,
        "symbolic_ms": t["symbolic"]["median_s"] * 1e3,
        "ratio": t["symbolic"]["median_s"] / t["static"]["median_s"],
        "static_nodes": len(static.model.graph.node),
        "symbolic_nodes": len(symbolic.model.graph.node),
        "symbolic_vs_static_max_rel": float(
            np.max(np.abs(b - a) / np.maximum(np.abs(a), 1e-30))
        ),
        "symbolic_vs_numpy_max_rel": float(
            np.max(np.abs(b - want) / np.maximum(np.abs(want), 1e-30))
        ),
    }


def run_symbolic(
    lengths=LENGTHS,
    *,
    elements: int = 1_000_000,
    reps: int = 5,
    budget_s: float | None = None,
    progress=None,
) -> dict:
    rows = []
    for n in lengths:
        for axis in (1, 0):
            rows.append(run_case(int(n), elements, axis, reps, budget_s))
            if progress:
                progress(rows[-1])
    return {"limit": LIMIT, "elements": elements, "rows": rows}


def table(sym: dict) -> list[str]:
    title = (
        f"\nCumProd lowered, symbolic axis length vs static (CPU EP, ~{sym['elements']:.0e} float32 elements, "
        f"target <= {sym['limit']}x):"
    )
    head = (
        f"  {'n':>7} {'shape':>16} {'axis':>4} {'static ms':>10} {'symbolic ms':>12} {'ratio':>6} "
        f"{'nodes static/sym':>17}"
    )
    lines = [title, head]
    for r in sym["rows"]:
        lines.append(
            f"  {r['n']:>7} {r['shape']!s:>16} {r['axis']:>4} {r['static_ms']:10.3g} {r['symbolic_ms']:12.3g} "
            f"{r['ratio']:6.2f} {r['static_nodes']:>8}/{r['symbolic_nodes']:<8}"
        )
    return lines


def markdown(sym: dict) -> list[str]:
    title = (
        f"**CumProd lowered on a symbolic axis / static lowering of the same n** (CPU EP, "
        f"~{sym['elements']:.0e} float32 elements; target <= {sym['limit']})"
    )
    out = [
        title,
        "",
        "| n | shape | axis | static ms | symbolic ms | ratio | nodes static / symbolic |",
        "|---:|---|---:|---:|---:|---:|---|",
    ]
    out += [
        f"| {r['n']} | {r['shape']} | {r['axis']} | {r['static_ms']:.3g} | {r['symbolic_ms']:.3g} | "
        f"{r['ratio']:.2f} | {r['static_nodes']} / {r['symbolic_nodes']} |"
        for r in sym["rows"]
    ]
    return out


def verdict(sym: dict) -> dict:
    label = f"CumProd on a symbolic axis <= {sym['limit']}x the static lowering (n = 10, 1000, 100000, CPU EP)"
    rows = sym.get("rows") or []
    if not rows:
        return {"target": label, "status": "not measured"}
    worst = max(rows, key=lambda r: r["ratio"])
    return {
        "target": label,
        "limit": sym["limit"],
        "worst": round(worst["ratio"], 2),
        "worst_case": f"n={worst['n']} axis {worst['axis']}",
        "best": round(min(r["ratio"] for r in rows), 2),
        "met": sum(r["ratio"] <= sym["limit"] for r in rows),
        "cases": len(rows),
        "status": "met" if worst["ratio"] <= sym["limit"] else "missed",
    }
