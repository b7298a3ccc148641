"""Truth test: `inspect`'s prediction against the real DML EP's placement, node by node.

Runs a corpus of single-op models (CumSum, ScatterElements, ScatterND and the ops the lowerings
emit, at opsets 11-21, across dtypes and attributes) on onnxruntime-directml 1.24.4 in the Wine
lane (tools/dml_lane/driver.py) and asserts, for every case that runs, that each node's
predicted provider equals ORT's own "Node placements" and that the predicted Memcpy count equals
the Memcpy nodes ORT logged.

CI runs a representative subset in one `run_cases` call; DML_FULL=1 runs the full corpus
(DML_TRUTH_FILTER=substring runs only the cases whose name contains it).
Cases that cannot run are listed (printed and checked against a known list of DirectML and ONNX
Runtime behaviours), never dropped silently.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from onnx import TensorProto as T
from onnx import helper as h

from ort_dml_ops import inspect

# a sweep on the lane (ops, placement truth, converted models): `make test-full` and CI run it
pytestmark = [pytest.mark.dml, pytest.mark.full]

FULL = os.environ.get("DML_FULL") == "1"
OPSETS_FULL = list(range(11, 22))
OPSETS_CI = [11, 18, 21]

NP = {
    T.FLOAT: np.float32,
    T.FLOAT16: np.float16,
    T.DOUBLE: np.float64,
    T.INT32: np.int32,
    T.INT64: np.int64,
    T.UINT32: np.uint32,
    T.UINT64: np.uint64,
    T.BOOL: np.bool_,
    T.INT8: np.int8,
    T.UINT8: np.uint8,
}
SHORT = {
    T.FLOAT: "f32",
    T.FLOAT16: "f16",
    T.DOUBLE: "f64",
    T.INT32: "i32",
    T.INT64: "i64",
    T.UINT32: "u32",
    T.UINT64: "u64",
    T.BOOL: "bool",
    T.INT8: "i8",
    T.UINT8: "u8",
}

#: (substring of case name) -> why it cannot run (checked: a case that fails must match). None of these
#: is an emulator failure: the Wine 8 lane's (int64 CumSum/Mul) are gone with Wine 10's vkd3d.
KNOWN_FAILURES = {
    "ScatterElements-f32-smallidx": "DML kernel creation fails (E_INVALIDARG in AbiCustomRegistry.cpp): "
    "indices smaller than data on a non-axis dimension (measured, deterministic)",
    # float16 Scatter* with a reduction: ORT's CPU kernel refuses MLFloat16 at run time (any build)
    **{
        f"Scatter{k}-f16-{r}": "float16 reduction: the CPU kernel refuses MLFloat16"
        for k in ("Elements", "ND")
        for r in ("add", "mul", "max", "min")
    },
}


def _arr(elem, shape, rng, lo=-4, hi=5):
    return rng.integers(lo, hi, size=shape).astype(NP[elem])


def _model(node, ins, outs, opset, inits=()):
    g = h.make_graph(
        [node],
        "g",
        [h.make_tensor_value_info(n, e, list(s)) for n, e, s in ins],
        [h.make_tensor_value_info(n, e, None) for n, e in outs],
        list(inits),
    )
    m = h.make_model(g, opset_imports=[h.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def corpus(full: bool):
    rng = np.random.default_rng(0)
    opsets = OPSETS_FULL if full else OPSETS_CI
    cases = []

    def add(name, node, ins, outs, opset, feeds, inits=()):
        cases.append((f"{name}@{opset}", _model(node, ins, outs, opset, inits), feeds))

    # CumSum: dtypes x opsets x (constant axis, axis input) x attributes
    cum_types = (
        [T.FLOAT, T.FLOAT16, T.DOUBLE, T.INT32, T.UINT32, T.INT64, T.UINT64]
        if full
        else [T.FLOAT, T.DOUBLE, T.INT32]
    )
    for opset in opsets:
        for e in cum_types:
            if e == T.FLOAT16 and opset < 14:
                continue  # not a valid model before CumSum-14
            for const_axis in (True, False) if full else (opset == 18,):
                for excl, rev in ((0, 0), (1, 1)) if full else ((0, 0),):
                    x = _arr(e, (3, 5), rng)
                    node = h.make_node(
                        "CumSum",
                        ["x", "axis"],
                        ["y"],
                        name="cumsum",
                        exclusive=excl,
                        reverse=rev,
                    )
                    if const_axis:
                        add(
                            f"CumSum-{SHORT[e]}-const-e{excl}r{rev}",
                            node,
                            [("x", e, (3, 5))],
                            [("y", e)],
                            opset,
                            {"x": x},
                            [h.make_tensor("axis", T.INT64, [], [1])],
                        )
                    else:
                        add(
                            f"CumSum-{SHORT[e]}-input-e{excl}r{rev}",
                            node,
                            [("x", e, (3, 5)), ("axis", T.INT64, ())],
                            [("y", e)],
                            opset,
                            {"x": x, "axis": np.array(1, np.int64)},
                        )

    # ScatterElements / ScatterND: reductions x opsets x dtypes
    sc_types = [T.FLOAT, T.FLOAT16, T.INT32] if full else [T.FLOAT]
    for opset in opsets if full else [16, 18]:
        reds = (
            [None]
            + (["add", "mul"] if opset >= 16 else [])
            + (["max", "min"] if opset >= 18 else [])
        )
        if not full:
            reds = reds[:2] if opset == 16 else reds[:1]
        for e in sc_types:
            for red in reds:
                kw = {"reduction": red} if red else {}
                tag = red or "plain"
                data = _arr(e, (3, 4), rng)
                idx = np.array([[0, 1, 2, 0], [2, 2, 1, 0]], np.int64)
                upd = _arr(e, (2, 4), rng)
                add(
                    f"ScatterElements-{SHORT[e]}-{tag}",
                    h.make_node(
                        "ScatterElements",
                        ["data", "idx", "upd"],
                        ["out"],
                        name="scatter",
                        axis=0,
                        **kw,
                    ),
                    [("data", e, (3, 4)), ("idx", T.INT64, (2, 4)), ("upd", e, (2, 4))],
                    [("out", e)],
                    opset,
                    {"data": data, "idx": idx, "upd": upd},
                )
                idx_nd = np.array([[0], [2]], np.int64)
                add(
                    f"ScatterND-{SHORT[e]}-{tag}",
                    h.make_node(
                        "ScatterND",
                        ["data", "idx", "upd"],
                        ["out"],
                        name="scatter",
                        **kw,
                    ),
                    [("data", e, (3, 4)), ("idx", T.INT64, (2, 1)), ("upd", e, (2, 4))],
                    [("out", e)],
                    opset,
                    {"data": data, "idx": idx_nd, "upd": _arr(e, (2, 4), rng)},
                )

    # Ops the lowerings emit
    lo_opsets = opsets if full else [18]
    for opset in lo_opsets:
        x = _arr(T.FLOAT, (2, 3), rng)
        f = [("x", T.FLOAT, (2, 3))]
        for op in ("Mul", "Add", "Max", "Min", "Less", "Equal"):
            for e in (T.FLOAT, T.INT64) if full else (T.FLOAT,):
                if e == T.INT64 and op in ("Max", "Min") and opset < 12:
                    continue  # Max-8/Min-8 have no int64: not a valid model
                out_e = T.BOOL if op in ("Less", "Equal") else e
                add(
                    f"{op}-{SHORT[e]}",
                    h.make_node(op, ["a", "b"], ["y"], name=op.lower()),
                    [("a", e, (2, 3)), ("b", e, (2, 3))],
                    [("y", out_e)],
                    opset,
                    {"a": _arr(e, (2, 3), rng), "b": _arr(e, (2, 3), rng)},
                )
        add(
            "Where-f32",
            h.make_node("Where", ["c", "a", "b"], ["y"], name="where"),
            [("c", T.BOOL, (2, 3)), ("a", T.FLOAT, (2, 3)), ("b", T.FLOAT, (2, 3))],
            [("y", T.FLOAT)],
            opset,
            {"c": rng.integers(0, 2, (2, 3)).astype(bool), "a": x, "b": x},
        )
        add(
            "Pad-f32",
            h.make_node("Pad", ["x", "pads"], ["y"], name="pad"),
            f,
            [("y", T.FLOAT)],
            opset,
            {"x": x},
            [h.make_tensor("pads", T.INT64, [4], [0, 1, 0, 1])],
        )
        add(
            "Slice-f32",
            h.make_node("Slice", ["x", "st", "en"], ["y"], name="slice"),
            f,
            [("y", T.FLOAT)],
            opset,
            {"x": x},
            [
                h.make_tensor("st", T.INT64, [1], [1]),
                h.make_tensor("en", T.INT64, [1], [3]),
            ],
        )
        add(
            "Concat-f32",
            h.make_node("Concat", ["x", "x"], ["y"], name="concat", axis=0),
            f,
            [("y", T.FLOAT)],
            opset,
            {"x": x},
        )
        add(
            "TopK-f32",
            h.make_node("TopK", ["x", "k"], ["v", "i"], name="topk", axis=1),
            f,
            [("v", T.FLOAT), ("i", T.INT64)],
            opset,
            {"x": x},
            [h.make_tensor("k", T.INT64, [1], [2])],
        )
        add(
            "GatherElements-f32",
            h.make_node("GatherElements", ["x", "gi"], ["y"], name="gatherel", axis=1),
            f + [("gi", T.INT64, (2, 3))],
            [("y", T.FLOAT)],
            opset,
            {"x": x, "gi": np.array([[0, 2, 1], [1, 1, 0]], np.int64)},
        )
        add(
            "Gather-f32",
            h.make_node("Gather", ["x", "gi"], ["y"], name="gather", axis=1),
            f + [("gi", T.INT64, (2,))],
            [("y", T.FLOAT)],
            opset,
            {"x": x, "gi": np.array([2, 0], np.int64)},
        )
        if opset < 18:
            rm = h.make_node(
                "ReduceMax", ["x"], ["y"], name="reducemax", axes=[1], keepdims=1
            )
            add("ReduceMax-f32", rm, f, [("y", T.FLOAT)], opset, {"x": x})
        else:
            add(
                "ReduceMax-f32",
                h.make_node(
                    "ReduceMax", ["x", "axes"], ["y"], name="reducemax", keepdims=1
                ),
                f,
                [("y", T.FLOAT)],
                opset,
                {"x": x},
                [h.make_tensor("axes", T.INT64, [1], [1])],
            )
        xu = _arr(T.FLOAT, (1, 1, 2, 2), rng)
        add(
            "MaxUnpool-f32",
            h.make_node(
                "MaxUnpool",
                ["xu", "ui"],
                ["y"],
                name="maxunpool",
                kernel_shape=[2, 2],
                strides=[2, 2],
            ),
            [("xu", T.FLOAT, (1, 1, 2, 2)), ("ui", T.INT64, (1, 1, 2, 2))],
            [("y", T.FLOAT)],
            opset,
            {"xu": xu, "ui": np.array([0, 3, 9, 14], np.int64).reshape(1, 1, 2, 2)},
        )
        add(
            "OneHot-f32",
            h.make_node(
                "OneHot", ["oi", "depth", "vals"], ["y"], name="onehot", axis=-1
            ),
            [("oi", T.INT64, (3,))],
            [("y", T.FLOAT)],
            opset,
            {"oi": np.array([0, 2, 1], np.int64)},
            [
                h.make_tensor("depth", T.INT64, [], [4]),
                h.make_tensor("vals", T.FLOAT, [2], [0, 1]),
            ],
        )
        add(
            "Cast-f32-i32",
            h.make_node("Cast", ["x"], ["y"], name="cast", to=T.INT32),
            f,
            [("y", T.INT32)],
            opset,
            {"x": x},
        )
        add(
            "Range-i64",
            h.make_node("Range", ["s", "l", "d"], ["y"], name="range"),
            [("s", T.INT64, ()), ("l", T.INT64, ()), ("d", T.INT64, ())],
            [("y", T.INT64)],
            opset,
            {
                "s": np.array(0, np.int64),
                "l": np.array(5, np.int64),
                "d": np.array(1, np.int64),
            },
        )
        add(
            "Expand-f32",
            h.make_node("Expand", ["x", "shp"], ["y"], name="expand"),
            f,
            [("y", T.FLOAT)],
            opset,
            {"x": x},
            [h.make_tensor("shp", T.INT64, [3], [2, 2, 3])],
        )
        add(
            "Shape-f32",
            h.make_node("Shape", ["x"], ["y"], name="shape"),
            f,
            [("y", T.INT64)],
            opset,
            {"x": x},
        )
    # DML's scatter needs indices as large as the data on every axis but `axis` (DML_SCATTER_OPERATOR_DESC);
    # ONNX allows smaller: the DML kernel then fails at session creation (placement is still DML's).
    add(
        "ScatterElements-f32-smallidx",
        h.make_node(
            "ScatterElements", ["data", "idx", "upd"], ["out"], name="scatter", axis=1
        ),
        [("data", T.FLOAT, (3, 4)), ("idx", T.INT64, (2, 4)), ("upd", T.FLOAT, (2, 4))],
        [("out", T.FLOAT)],
        16,
        {
            "data": _arr(T.FLOAT, (3, 4), rng),
            "idx": np.array([[0, 1, 2, 3], [3, 2, 1, 0]], np.int64),
            "upd": _arr(T.FLOAT, (2, 4), rng),
        },
    )
    cases.extend(multi_node_cases(rng))
    if not full:  # one more CumSum dtype that DML takes
        add(
            "CumSum-i32-input-e0r0",
            h.make_node("CumSum", ["x", "axis"], ["y"], name="cumsum"),
            [("x", T.INT32, (3, 5)), ("axis", T.INT64, ())],
            [("y", T.INT32)],
            14,
            {"x": _arr(T.INT32, (3, 5), rng), "axis": np.array(0, np.int64)},
        )
    return cases


def multi_node_cases(rng):
    """Small graphs whose device boundaries need Memcpy nodes (and one CPU-preferred shape chain)."""
    out = []
    f = T.FLOAT
    data = _arr(f, (3, 4), rng)
    idx = np.array([[0, 1, 2, 0], [2, 2, 1, 0]], np.int64)
    upd = _arr(f, (2, 4), rng)
    vi = h.make_tensor_value_info
    scatter_ins = [vi("x", f, [3, 4]), vi("idx", T.INT64, [2, 4]), vi("upd", f, [2, 4])]
    feeds = {"x": data, "idx": idx, "upd": upd}
    # DML -> CPU (QueryScatter rejects add) -> DML: one MemcpyToHost, one MemcpyFromHost
    g = h.make_graph(
        [
            h.make_node("Relu", ["x"], ["r"], name="relu"),
            h.make_node(
                "ScatterElements",
                ["r", "idx", "upd"],
                ["s"],
                name="scatter",
                reduction="add",
            ),
            h.make_node("Neg", ["s"], ["y"], name="neg"),
        ],
        "g",
        scatter_ins,
        [vi("y", f, None)],
    )
    out.append(("Chain-relu-scatteradd-neg@16", g))
    # a graph input read on both sides: one MemcpyFromHost for it
    g = h.make_graph(
        [
            h.make_node("Relu", ["x"], ["r"], name="relu"),
            h.make_node(
                "ScatterElements",
                ["x", "idx", "upd"],
                ["s"],
                name="scatter",
                reduction="mul",
            ),
        ],
        "g",
        scatter_ins,
        [vi("r", f, None), vi("s", f, None)],
    )
    out.append(("Input-both-sides@16", g))
    # Shape -> Gather -> Unsqueeze -> Concat -> Reshape: the middle stays on the CPU (GetCpuPreferredNodes)
    g = h.make_graph(
        [
            h.make_node("Shape", ["x"], ["sh"], name="shape"),
            h.make_node("Gather", ["sh", "zero"], ["d0"], name="gather", axis=0),
            h.make_node("Unsqueeze", ["d0", "ax0"], ["d0u"], name="unsqueeze"),
            h.make_node("Concat", ["d0u", "minus1"], ["shp"], name="concat", axis=0),
            h.make_node("Reshape", ["x", "shp"], ["y"], name="reshape"),
        ],
        "g",
        [vi("x", f, ["N", 4])],
        [vi("y", f, None)],
        [
            h.make_tensor("zero", T.INT64, [], [0]),
            h.make_tensor("ax0", T.INT64, [1], [0]),
            h.make_tensor("minus1", T.INT64, [1], [-1]),
        ],
    )
    out.append(("Shape-chain@16", g))
    cases = []
    for name, g in out:
        m = h.make_model(g, opset_imports=[h.make_opsetid("", 16)])
        m.ir_version = 8
        cases.append(
            (
                name,
                m,
                {k: v for k, v in feeds.items() if k in {i.name for i in g.input}},
            )
        )
    return cases


#: Cases also run with ORT's default optimizations on (inspect's default): constant folding.
OPTIMIZED = ("Shape-f32", "CumSum-f32-const")


def test_inspect_matches_real_dml_placement():
    from dml_lane.driver import Case, lane_available, run_cases

    ok, why = lane_available()
    if not ok:
        pytest.skip(why)
    only = os.environ.get("DML_TRUTH_FILTER")  # substring: run a slice of the corpus
    cases = [
        (name, model, feeds, False)
        for name, model, feeds in corpus(FULL)
        if not only or only in name
    ]
    cases += [
        (name + "+opt", model, feeds, True)
        for name, model, feeds, _ in cases
        if name.startswith(OPTIMIZED)
    ][:4]
    opt_on = {"graph_optimization_level": "ORT_ENABLE_ALL"}
    per_process = int(
        os.environ.get("DML_LANE_SESSIONS", "4")
    )  # as tests/dml/conftest.py
    results = run_cases(
        [
            Case(name, model, feeds, session_options=opt_on if opt else None)
            for name, model, feeds, opt in cases
        ],
        sessions_per_process=per_process,
    )
    assert len(results) == len(cases)
    cannot_run, mismatches, compared = [], [], 0
    for (name, model, _, opt), res in zip(cases, results):
        if not res.ok:
            cannot_run.append(
                (
                    name,
                    res.stage,
                    (res.error or "").splitlines()[0][:160] if res.error else "",
                )
            )
            if res.stage != "run" or not res.placement:
                continue  # no session, no placement to compare
            # the session was created (placement logged), only the run failed: still compare
        rep = inspect(model, target="dml", optimized=opt)
        predicted = rep.placement()
        real = dict(res.placement)
        if (
            opt
        ):  # a node folded away at session creation is absent from ORT's placements
            real.update({n: None for n in res.unresolved})
        compared += 1
        if predicted != real or rep.summary["copies"] != len(res.copies):
            mismatches.append(
                (
                    name,
                    predicted,
                    real,
                    rep.summary["copies"],
                    res.copies,
                    [n.reason for n in rep.nodes],
                )
            )
    print(
        f"\ninspect truth: {compared} cases compared, {len(mismatches)} mismatches, "
        f"{len(cannot_run)} cannot run"
    )
    for c in cannot_run:
        print("  cannot run:", *c)
    unexplained = [c for c in cannot_run if not any(k in c[0] for k in KNOWN_FAILURES)]
    assert not mismatches, "\n".join(map(str, mismatches))
    assert not unexplained, (
        f"cases failed on the lane for no known reason: {unexplained}"
    )
    assert compared >= len(cases) // 3
