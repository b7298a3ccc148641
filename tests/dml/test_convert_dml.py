"""After convert(target="dml"), the real DML EP (Wine lane) runs every node of these static-shape
models — no node at all on the CPU EP — and their outputs equal numpy references; of the
symbolic-shape CumProds (`SYMBOLIC`), every node of the data path.

One `run_cases` batch (the module's LANE_CASES, run by conftest's `lane_results`): CumProd
(blocked/transposed and single-chain paths), ScatterElements with a reduction and duplicate
indices, ScatterElements at opset 18, ScatterND max at opset 18, an ONNX CumProd-26 model brought
to opset 21, and the cases that only failed under the old Wine 8 lane (a blocked CumProd whose
float32 Mul has a multiple of 4 elements: DirectML's vec4 shader; a float64 CumSum, whose
lowering casts float64 <-> float32; a fused chain of 5 Relu, which crashed). Graph fusion is on (ORT's default), as for users: the
placement comes from ORT's assignment record, which names the nodes inside DmlFusedNode_*.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

from dml_lane.driver import CPU, DML, Case
from ort_dml_ops import DOMAIN
from ort_dml_ops.conversion import convert
from tests.converter.rules._util import run_cpu
from tests.support import np_scatter_elements

# a sweep on the lane (ops, placement truth, converted models): `make test-full` and CI run it
pytestmark = [pytest.mark.dml, pytest.mark.full]

# self-contained (tests/dml is not a package): tiny copies of the helpers in tests/lowering


def single_op(op, inputs, attrs=None, *, opset=17, domain="", inits=None):
    inits = inits or {}
    vis = [
        helper.make_tensor_value_info(
            n, helper.np_dtype_to_tensor_dtype(np.dtype(dt)), s
        )
        for n, dt, s in inputs
    ]
    y = helper.make_tensor_value_info(
        "y", helper.np_dtype_to_tensor_dtype(np.dtype(inputs[0][1])), inputs[0][2]
    )
    node = helper.make_node(
        op,
        [n for n, _, _ in inputs] + list(inits),
        ["y"],
        domain=domain,
        name=f"the_{op}",
        **(attrs or {}),
    )
    imports = [helper.make_opsetid("", opset)] + (
        [helper.make_opsetid(DOMAIN, 1)] if domain == DOMAIN else []
    )
    g = helper.make_graph(
        [node],
        "g",
        vis,
        [y],
        [numpy_helper.from_array(np.asarray(v), k) for k, v in inits.items()],
    )
    return helper.make_model(g, opset_imports=imports, ir_version=10)


def ref_cumprod(x, axis, exclusive=0, reverse=0):
    x = np.moveaxis(np.asarray(x, np.float64), axis, -1)
    x = x[..., ::-1] if reverse else x
    y = np.cumprod(x, axis=-1)
    if exclusive:
        y = np.concatenate([np.ones_like(y[..., :1]), y[..., :-1]], axis=-1)
    y = y[..., ::-1] if reverse else y
    return np.moveaxis(y, -1, axis).astype(np.float32)


def _cumprod(name, shape, attrs, axis, opset=17, onnx_op=False, seed=0):
    x = np.random.default_rng(seed).uniform(0.8, 1.2, shape).astype(np.float32)
    m = single_op(
        "CumProd",
        [("x", np.float32, shape)],
        attrs,
        domain="" if onnx_op else DOMAIN,
        opset=opset,
        inits={"axis": np.array(axis, np.int64)},
    )
    return (
        name,
        m,
        {"x": x},
        ref_cumprod(
            x, axis % len(shape), attrs.get("exclusive", 0), attrs.get("reverse", 0)
        ),
    )


def _cumprod_masked(name, declared, shape, attrs, axis, seed=0):
    """A float32 CumProd along a run-time axis (masked_scan.py: Where, ReduceProd, Pad, Slice,
    Range, Greater, Mul): factors ±1 with adjacent (2, 0.5) pairs, so every product is exact."""
    rng = np.random.default_rng(seed)
    x = rng.choice(np.array([1, -1], np.float32), shape)
    line = np.moveaxis(x, axis, -1)
    pairs = rng.random(line.shape[:-1] + (line.shape[-1] // 2,)) < 0.1
    line[..., 0 : 2 * pairs.shape[-1] : 2][pairs] *= 2
    line[..., 1 : 2 * pairs.shape[-1] : 2][pairs] *= 0.5
    m = single_op(
        "CumProd",
        [("x", np.float32, declared)],
        attrs,
        domain=DOMAIN,
        inits={"axis": np.array(axis, np.int64)},
    )
    want = ref_cumprod(x, axis, attrs.get("exclusive", 0), attrs.get("reverse", 0))
    return name, m, {"x": x}, want


def _scatter_elements(name, dshape, ishape, reduction, opset, unique, seed=1):
    rng = np.random.default_rng(seed)
    data = rng.normal(size=dshape).astype(np.float32)
    if unique:
        idx = np.stack(
            [rng.permutation(dshape[1])[: ishape[1]] for _ in range(ishape[0])]
        ).astype(np.int64)
    else:
        idx = rng.integers(-dshape[1], dshape[1], ishape).astype(np.int64)
    upd = rng.normal(size=ishape).astype(np.float32)
    attrs = {"axis": 1} | ({"reduction": reduction} if reduction != "none" else {})
    m = single_op(
        "ScatterElements",
        [
            ("data", np.float32, dshape),
            ("indices", np.int64, ishape),
            ("updates", np.float32, ishape),
        ],
        attrs,
        opset=opset,
    )
    return (
        name,
        m,
        {"data": data, "indices": idx, "updates": upd},
        np_scatter_elements(data, idx, upd, 1, reduction),
    )


def _scatternd_max(name, dshape, rows, seed=2):
    rng = np.random.default_rng(seed)
    d = rng.normal(size=dshape).astype(np.float32)
    i = rows.reshape(-1, 1).astype(np.int64)
    u = rng.normal(size=[len(rows), dshape[1]]).astype(np.float32)
    want = d.copy()
    for k, r in enumerate(rows):
        want[r] = np.maximum(want[r], u[k])
    m = single_op(
        "ScatterND",
        [
            ("data", np.float32, dshape),
            ("indices", np.int64, list(i.shape)),
            ("updates", np.float32, list(u.shape)),
        ],
        {"reduction": "max"},
        opset=18,
    )
    return name, m, {"data": d, "indices": i, "updates": u}, want


def _models():
    """(name, original model, feeds, numpy reference)."""
    return [
        # small static CumProds: the doubling scan (Pad with negative pads, Mul; cumprod.py)
        _cumprod("cumprod_doubling", [3, 35], {"exclusive": 1}, 1),
        _cumprod("cumprod_doubling_op13", [3, 5, 8], {"reverse": 1}, -1, opset=13),
        _cumprod(
            "cumprod26_to_21", [3, 45], {}, 1, opset=26, onnx_op=True
        ),  # opset 26 -> 21
        # 2^20 elements: passes outweigh kernels, the blocked scan (blocks of 4, 9 levels)
        _cumprod("cumprod_blocked", [4, 2**18], {"exclusive": 1, "reverse": 1}, 1),
        _scatter_elements(
            "scatter_add_op17", [5, 7], [5, 3], "add", 17, unique=False
        ),  # duplicates
        _scatter_elements("scatter_none_op18", [5, 7], [5, 3], "none", 18, unique=True),
        _scatter_elements(
            "scatter_none_op18_6x8", [6, 8], [6, 5], "none", 18, unique=True
        ),
        _scatternd_max("scatternd_max_op18", [5, 3], np.array([1, 3, 1])),
        # static float max/min as users run them (ORT_ENABLE_ALL folds the write's constant Range;
        # with ORT_DISABLE_ALL the lane's process dies: docs/dml-lane.md); K = 3 and 40 per row
        _scatter_elements("scatter_max_op18", [5, 7], [5, 3], "max", 18, unique=False),
        _scatter_elements(
            "scatter_min_op16_k40", [6, 8], [6, 40], "min", 16, unique=False
        ),
        # Wine 8 lane: float32 Mul of [40, 1, 1] columns (a multiple of 4 elements, vec4 shader);
        # the doubling scan now
        _cumprod("cumprod_4x40", [4, 40], {"exclusive": 1}, 1),
        _cumsum_f64("cumsum_f64_cast", [3, 7]),  # Wine 8 lane: no 64-bit Cast compiled
    ]


def _cumsum_f64(name, shape, seed=5):
    x = np.random.default_rng(seed).normal(size=shape)
    m = single_op(
        "CumSum",
        [("x", np.float64, shape)],
        opset=17,
        inits={"axis": np.array(1, np.int64)},
    )
    return name, m, {"x": x}, np.cumsum(x, axis=1)


#: the lowerings themselves (no run-time index guard): every node on DML, no copy (strategy
#: lower: at these sizes auto keeps the scatters on ORT's CPU kernel, rules/cost.py)
MODELS = {
    name: (convert(m, "dml", strategy="lower", check_indices=False).model, feeds, want)
    for name, m, feeds, want in _models()
}
#: float32 CumProds along a run-time axis (masked_scan.py), past two of its levels
SYMBOLIC = {
    name: (convert(m, "dml", strategy="lower").model, feeds, want)
    for name, m, feeds, want in (
        _cumprod_masked("cumprod_masked", ["A", "B"], [3, 4099], {}, 1),
        _cumprod_masked(
            "cumprod_masked_rev_excl",
            ["L", 3],
            [600, 3],
            {"exclusive": 1, "reverse": 1},
            0,
        ),
    )
}
#: as convert writes them by default: lowered scatters guard their indices, which hands one flag
#: to the host per scatter, where two scalar nodes pick the output's shape
GUARDED = {
    f"{name}@guarded": (convert(m, "dml", strategy="lower").model, feeds, want, m)
    for name, m, feeds, want in _models()
    if m.graph.node[0].op_type.startswith("Scatter")
}


def _scatter18(dshape, ishape, axis, reduction, dtype=np.float32):
    """A ScatterElements-18 with `reduction` along `axis` (`_lean_cases`' one model shape)."""
    return single_op(
        "ScatterElements",
        [
            ("data", dtype, dshape),
            ("indices", np.int64, ishape),
            ("updates", dtype, ishape),
        ],
        {"axis": axis, "reduction": reduction},
        opset=18,
    )


def _lean_cases():
    """(name, original model, feeds) for the sort / prefix-sum folds (rules/scatter_lean.py):
    duplicates everywhere, NaN and signed zeros for float max / min, int32 sums that overflow;
    a last-axis scatter (rows sorted apart) and an axis-0 one (one sort over all updates)."""
    rng = np.random.default_rng(11)
    cases = []
    for red in ("max", "min"):
        for axis, dshape, ishape in ((1, [4, 6], [4, 30]), (0, [5, 3], [40, 3])):
            data = rng.integers(-3, 4, dshape).astype(np.float32)
            data[rng.random(dshape) < 0.2] = np.nan
            # where it beats every update, the data keeps its sign
            data[data == 0] = -0.0
            upd = rng.integers(-3, 4, ishape).astype(np.float32)
            upd[rng.random(ishape) < 0.15] = np.nan
            upd[rng.random(ishape) < 0.15] = -0.0
            upd[rng.random(ishape) < 0.1] = 0.0
            idx = rng.integers(-dshape[axis], dshape[axis], ishape).astype(np.int64)
            m = _scatter18(dshape, ishape, axis, red)
            feeds = {"data": data, "indices": idx, "updates": upd}
            cases.append((f"lean_float_{red}_axis{axis}", m, feeds))
        # every dim at run time: each sorted position's predecessor is one Pad that crops its
        # end (segscan.shift) on the DML EP, and no update at all leaves the data as it is
        m = _scatter18(["N", 3], ["K", 3], 0, red)
        for k in (0, 700):
            data = rng.integers(-3, 4, (6, 3)).astype(np.float32)
            data[rng.random(data.shape) < 0.2] = np.nan
            data[data == 0] = -0.0
            upd = rng.integers(-3, 4, (k, 3)).astype(np.float32)
            upd[rng.random(upd.shape) < 0.1] = np.nan
            upd[rng.random(upd.shape) < 0.2] = -0.0
            idx = rng.integers(-6, 6, (k, 3)).astype(np.int64)
            feeds = {"data": data, "indices": idx, "updates": upd}
            cases.append((f"lean_float_{red}_symbolic_k{k}", m, feeds))
    for axis, dshape, ishape, tail in (
        (1, [4, 6], [4, 30], ""),
        (0, [5, 3], [3000, 3], ""),
        (1, [60, 7], [60, 300], "_rows"),
    ):
        # the block sums (blocksum.py): small integers sum exactly in any order; −0.0 runs,
        # inf − inf and NaN as ORT's kernel gives them; 9,000 updates along axis 0 take two
        # Transposes, then blocks of 8 and a last level of 375 ends (whole rows of 3,000:
        # blocksum.plan), 18,000 along axis 1 blocks of 6, then of 50 ends
        data = rng.integers(-3, 4, dshape).astype(np.float32)
        data[rng.random(dshape) < 0.3] = -0.0
        upd = rng.integers(-3, 4, ishape).astype(np.float32)
        upd[rng.random(ishape) < 0.3] = -0.0
        upd[rng.random(ishape) < 0.002] = np.inf
        upd[rng.random(ishape) < 0.002] = -np.inf
        upd[rng.random(ishape) < 0.001] = np.nan
        idx = rng.integers(-dshape[axis], dshape[axis], ishape).astype(np.int64)
        idx[..., 0] = 1  # position 1 of each row / column: −0.0 updates only
        upd[..., 0] = -0.0
        m = _scatter18(dshape, ishape, axis, "add")
        feeds = {"data": data, "indices": idx, "updates": upd}
        cases.append((f"lean_float_add_axis{axis}{tail}", m, feeds))
        # the block products: factors ±1, ±2, ½ multiply exactly in any order; ±0.0 signs,
        # 0 · inf and NaN as ORT's kernel gives them
        mul = rng.choice(np.array([1, -1, 2, -1, 0.5, 1], np.float32), ishape)
        mul[rng.random(ishape) < 0.01] = -0.0
        mul[rng.random(ishape) < 0.002] = np.inf
        mul[rng.random(ishape) < 0.001] = np.nan
        mul[..., 0] = -0.0
        m = _scatter18(dshape, ishape, axis, "mul")
        feeds = {"data": data, "indices": idx, "updates": mul}
        cases.append((f"lean_float_mul_axis{axis}{tail}", m, feeds))
    for red, dt in (
        ("add", np.int32),
        ("add", np.int64),
        ("max", np.int32),
        ("min", np.int64),
    ):
        info = np.iinfo(dt)
        data = rng.integers(info.max - 5, info.max, [4, 6]).astype(dt)
        upd = rng.integers(info.max // 2, info.max, [4, 25]).astype(dt)  # sums wrap
        idx = rng.integers(-6, 6, [4, 25]).astype(np.int64)
        m = _scatter18([4, 6], [4, 25], 1, red, dt)
        cases.append(
            (
                f"lean_{np.dtype(dt).name}_{red}",
                m,
                {"data": data, "indices": idx, "updates": upd},
            )
        )
    for dt in (np.int32, np.int64):
        # the integer products by halving Muls (blocksum.INTEGER_PRODUCT): odd full-width
        # factors wrap modulo 2^bits; 3,000 updates along axis 0 reach every level of blocks
        info = np.iinfo(dt)
        data = (rng.integers(0, info.max // 2, [5, 3]) * 2 + 1).astype(dt)
        upd = (rng.integers(0, info.max // 2, [3000, 3]) * 2 + 1).astype(dt)
        idx = rng.integers(-5, 5, [3000, 3]).astype(np.int64)
        m = _scatter18([5, 3], [3000, 3], 0, "mul", dt)
        feeds = {"data": data, "indices": idx, "updates": upd}
        cases.append((f"lean_{np.dtype(dt).name}_mul_wraps", m, feeds))
    for red in ("add", "mul"):
        # a ScatterND of 3,000 row slices of 40: each slice element's updates are a row
        # (scatter._slice_rows: a Transpose), blocks of 6 and 10, then 50 ends (whole rows)
        upd = rng.integers(-3, 4, [3000, 40]).astype(np.float32)
        if red == "mul":
            upd = rng.choice(np.array([1, -1, 2, -1, 0.5, 1], np.float32), [3000, 40])
        upd[rng.random(upd.shape) < 0.2] = -0.0
        upd[rng.random(upd.shape) < 0.001] = np.inf
        data = rng.integers(-3, 4, [9, 40]).astype(np.float32)
        data[rng.random(data.shape) < 0.3] = -0.0
        idx = rng.integers(-9, 9, [3000, 1]).astype(np.int64)
        m = single_op(
            "ScatterND",
            [
                ("data", np.float32, [9, 40]),
                ("indices", np.int64, [3000, 1]),
                ("updates", np.float32, [3000, 40]),
            ],
            {"reduction": red},
            opset=18,
        )
        feeds = {"data": data, "indices": idx, "updates": upd}
        cases.append((f"lean_float_{red}_scatter_nd_slices", m, feeds))
    for red in ("add", "mul"):
        # the block folds with every dim at run time: the top padded to whole blocks of 8 ·
        # 64 · 64, then a last level of as many items as that gives (0 updates: one item; 700:
        # one; 70,000: three, runs crossing their ends), its masks cut by a Slice (blocksum.py)
        m = _scatter18(["N", 1], ["K", 1], 0, red)
        for k in (0, 700, 70_000):
            data = rng.integers(-3, 4, (600, 1)).astype(np.float32)
            data[rng.random(data.shape) < 0.3] = -0.0
            upd = rng.integers(-3, 4, (k, 1)).astype(np.float32)
            if red == "mul":  # ~117 factors a position: far from the float range's ends
                upd = rng.choice(np.array([1, -1, 2, -1, 0.5, 1], np.float32), (k, 1))
            upd[rng.random(upd.shape) < 0.2] = -0.0
            upd[rng.random(upd.shape) < 0.0005] = np.inf
            idx = rng.integers(-600, 600, (k, 1)).astype(np.int64)
            feeds = {"data": data, "indices": idx, "updates": upd}
            cases.append((f"lean_float_{red}_symbolic_k{k}", m, feeds))
    for red in ("max", "min"):
        # the ends of the range: ±max and ±inf sort to where a TopK that pads its rows to a
        # power of two puts its padding (ORT's WebGPU TopK does, tests/webgpu); rows of 3 and 11
        big = np.finfo(np.float32).max
        for axis, dshape, ishape in ((0, [5, 3], [6, 3]), (1, [4, 7], [4, 11])):
            data = rng.integers(-3, 4, dshape).astype(np.float32)
            data[rng.random(dshape) < 0.2] = big
            data[rng.random(dshape) < 0.2] = -big
            upd = rng.integers(-3, 4, ishape).astype(np.float32)
            for value, share in (
                (big, 0.1),
                (-big, 0.1),
                (np.inf, 0.05),
                (-np.inf, 0.05),
            ):
                upd[rng.random(ishape) < share] = value
            upd[rng.random(ishape) < 0.01] = np.nan
            idx = rng.integers(-dshape[axis], dshape[axis], ishape).astype(np.int64)
            m = _scatter18(dshape, ishape, axis, red)
            feeds = {"data": data, "indices": idx, "updates": upd}
            cases.append((f"lean_float_{red}_ends_axis{axis}", m, feeds))
    # reduction none with repeated positions: ORT's CPU kernel keeps each position's last
    # update, and the DML EP's MaxUnpool orders no writes to one position (thousands of these
    # 180,000 came out wrong, differently each run, while the lowering unpooled every update:
    # docs/dml-lane.md), so all but the last update of each position write the dummy
    base = rng.integers(-50_000, 50_000, (6_000, 3)).astype(np.int64)
    for tail, dshape, ishape, axis in (
        ("", [50_000, 3], [60_000, 3], 0),
        ("_symbolic", ["N", 3], ["K", 3], 0),
        ("_axis1", [3, 50_000], [3, 60_000], 1),
    ):
        idx = np.tile(base, (10, 1))
        if axis == 1:
            idx = np.ascontiguousarray(idx.T)
        data = rng.normal(size=(50_000, 3) if axis == 0 else (3, 50_000))
        upd = rng.normal(size=idx.shape)
        m = _scatter18(dshape, ishape, axis, "none")
        feeds = {
            "data": data.astype(np.float32),
            "indices": idx,
            "updates": upd.astype(np.float32),
        }
        cases.append((f"lean_none_repeated{tail}", m, feeds))
    return cases


#: the sort / prefix-sum folds as convert writes them (guard on); reference: ORT's CPU kernel
LEAN = {
    name: (convert(m, "dml", strategy="lower").model, feeds, m)
    for name, m, feeds in _lean_cases()
}


def _chain(op, n, size=15):
    names = ["x"] + [f"t{i}" for i in range(n - 1)] + ["y"]
    vi = [helper.make_tensor_value_info(v, 1, [size]) for v in ("x", "y")]
    nodes = [
        helper.make_node(op, [names[i]], [names[i + 1]], name=f"{op.lower()}{i}")
        for i in range(n)
    ]
    m = helper.make_model(
        helper.make_graph(nodes, "chain", vi[:1], vi[1:]),
        opset_imports=[helper.make_opsetid("", 17)],
    )
    m.ir_version = 8
    return m


CONTROLS = {
    n: Case(
        n,
        _chain("Relu", k),
        {"x": np.random.default_rng(6).normal(size=[15]).astype(np.float32)},
    )
    for n, k in (("relu4@fused", 4), ("relu5@fused", 5))
}  # Wine 8 lane: 5 fused nodes crashed

#: as users run them: ORT's default optimizations (with them off, a fused DML graph holding the
#: lowering's constant Range — folded away by default — crashes the guest; not pursued further)
AS_USERS_RUN = {"graph_optimization_level": "ORT_ENABLE_ALL"}
LANE_CASES = (
    [
        Case(name, model, feeds, session_options=AS_USERS_RUN)
        for name, (model, feeds, _) in MODELS.items()
    ]
    + list(CONTROLS.values())
    + [
        Case(name, model, feeds, session_options=AS_USERS_RUN)
        for name, (model, feeds, _, _) in GUARDED.items()
    ]
)
LANE_CASES += [
    Case(name, model, feeds, session_options=AS_USERS_RUN)
    for name, (model, feeds, _) in {**LEAN, **SYMBOLIC}.items()
]
_BAD = {
    name: dict(
        feeds,
        indices=np.where(
            feeds["indices"] == feeds["indices"].flat[0], 99, feeds["indices"]
        ),
    )
    for name, (_, feeds, _, _) in GUARDED.items()
}
LANE_CASES += [
    Case(f"{name}:bad-index", model, _BAD[name], session_options=AS_USERS_RUN)
    for name, (model, _, _, _) in GUARDED.items()
]


def _longer_indices():
    """A ScatterElements-16 without reduction whose indices are longer than the data on the
    axis (6 rows of updates into 5, duplicates): DirectML fails it (docs/dml-lane.md), and
    convert's default lowers it (targets/dml_rules.py scatter_fit). Reference: ORT's CPU kernel
    on the original."""
    import onnxruntime as ort

    rng = np.random.default_rng(12)
    m = single_op(
        "ScatterElements",
        [
            ("data", np.float32, [5, 3]),
            ("indices", np.int64, [6, 3]),
            ("updates", np.float32, [6, 3]),
        ],
        {"axis": 0},
        opset=16,
    )
    feeds = {
        "data": rng.normal(size=(5, 3)).astype(np.float32),
        "indices": rng.integers(-5, 5, (6, 3)).astype(np.int64),
        "updates": rng.normal(size=(6, 3)).astype(np.float32),
    }
    want = ort.InferenceSession(
        m.SerializeToString(), providers=["CPUExecutionProvider"]
    ).run(None, feeds)[0]
    return m, convert(m, "dml").model, feeds, want


LONGER = _longer_indices()
LANE_CASES += [
    Case(
        "scatter_longer_op16:original",
        LONGER[0],
        LONGER[2],
        session_options=AS_USERS_RUN,
    ),
    Case(
        "scatter_longer_op16:converted",
        LONGER[1],
        LONGER[2],
        session_options=AS_USERS_RUN,
    ),
]


def test_scatter_with_longer_indices_fails_on_dml_and_runs_converted(lane_results):
    """The original: the DML EP claims the node and DirectML fails it (a session or run error,
    never an output). Converted with the default strategy: it runs on DML, the guard's two
    scalar nodes on the CPU, and writes what ORT's CPU kernel writes."""
    original = lane_results["scatter_longer_op16:original"]
    assert not original.ok, (
        "DirectML took indices longer than the data: update dml-lane.md"
    )
    r = lane_results["scatter_longer_op16:converted"]
    assert r.ok, f"{r.stage}: {r.error}"
    assert r.providers[0] == DML, r.providers
    assert all(
        n.rsplit("/", 1)[-1].split("_")[0] in ("Equal", "Where") for n in r.on(CPU)
    ), r.on(CPU)
    np.testing.assert_array_equal(r.outputs[0], LONGER[3])


@pytest.mark.parametrize("name", list(MODELS))
def test_converted_model_runs_entirely_on_dml(lane_results, name):
    _, _, want = MODELS[name]
    r = lane_results[name]
    assert r.ok, f"{name}: {r.stage}: {r.error}"
    assert r.providers[0] == DML, r.providers
    assert r.placement, "no placement read"
    assert not r.on(CPU), f"on CPU: {r.on(CPU)}"
    assert not r.copies, r.copies
    assert not r.memcpy, r.memcpy
    got = r.outputs[0]
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(
        got, want, rtol=1e-5, atol=1e-5
    )  # float64 CumSum: a float32 scan


@pytest.mark.parametrize("name", list(SYMBOLIC))
def test_symbolic_float_cumprod_runs_its_scan_on_dml_exactly(lane_results, name):
    """Every node of the masked scan that writes float32 or bool tensors runs on the DML EP,
    with no copy: only the sizes (what the run-time shape decides: int64, and the 0-d float32
    limit of the last level's Range) are on the CPU, as ORT places shape computations
    (fallback_cpu_capability.cc). The products are exact."""
    model, _, want = SYMBOLIC[name]
    r = lane_results[name]
    assert r.ok, f"{name}: {r.stage}: {r.error}"
    inferred = onnx.shape_inference.infer_shapes(model)
    typed = {v.name: v.type.tensor_type for v in inferred.graph.value_info}
    typed.update({v.name: v.type.tensor_type for v in inferred.graph.output})
    data = {
        n.name
        for n in model.graph.node
        if n.output[0] in typed
        and typed[n.output[0]].elem_type
        in (onnx.TensorProto.FLOAT, onnx.TensorProto.BOOL)
        and len(typed[n.output[0]].shape.dim) > 0
    }
    placed = {node: ep for ep, node, _, _ in r.assignment}
    assert data and data <= placed.keys(), sorted(data - placed.keys())
    assert {placed[n] for n in data} == {DML}, sorted(
        (n, placed[n]) for n in data if placed[n] != DML
    )
    assert not r.memcpy, r.memcpy
    np.testing.assert_array_equal(r.outputs[0], want)


def test_converted_models_have_no_cpu_node_per_inspect():
    from ort_dml_ops import inspect

    for name, (model, _, _) in MODELS.items():
        assert inspect(model, "dml").to_dict()["summary"]["cpu_nodes"] == 0, name


@pytest.mark.parametrize("name", list(CONTROLS))
def test_fused_relu_chain_runs_on_dml(lane_results, name):
    r = lane_results[name]
    assert r.ok, f"{r.stage}: {r.error}"
    assert r.providers[0] == DML and set(r.placement.values()) == {DML}, r.placement
    assert r.fused, "graph fusion did not run"
    np.testing.assert_array_equal(
        r.outputs[0], np.maximum(CONTROLS[name].inputs["x"], 0)
    )


@pytest.mark.parametrize("name", list(GUARDED))
def test_guarded_scatter_on_dml_one_flag_to_the_host(lane_results, name):
    """convert's default: the lowering on DML, plus the index guard: its two scalar nodes on the
    CPU and one copy (the flag), as inspect predicts; an out-of-range index fails the run."""
    model, _, want, _ = GUARDED[name]
    r = lane_results[name]
    assert r.ok, f"{name}: {r.stage}: {r.error}"
    assert r.providers[0] == DML, r.providers
    on_cpu = r.on(CPU)
    assert on_cpu and all(
        n.rsplit("/", 1)[-1].split("_")[0] in ("Equal", "Where") for n in on_cpu
    ), on_cpu
    assert len(r.memcpy) == 1, r.memcpy
    summary = __import__("ort_dml_ops").inspect(model, "dml").to_dict()["summary"]
    assert (summary["cpu_nodes"], summary["copies"]) == (len(on_cpu), 1), summary
    np.testing.assert_allclose(r.outputs[0], want, rtol=1e-5, atol=1e-5)
    bad = lane_results[f"{name}:bad-index"]
    assert not bad.ok and "IndexOrSizeOutOfRange" in (bad.error or ""), (
        bad.stage,
        bad.error,
    )


def _off_axis_cases():
    """A ScatterElements-18 (add) with symbolic shapes, converted as users do (guarded), fed
    indices that fit and indices longer than the data on dim 0, off the axis: ORT's kernel fails
    the latter ("Indices dim=5 at pos=0 is greater than input dim=4", scatter.cc), and the DML
    EP's gathers check no bounds, so only the guard can fail it. Reference: ORT's CPU kernel."""
    import onnxruntime as ort

    m = _scatter18(["d0", "d1"], ["k0", "k1"], 1, "add")
    rng = np.random.default_rng(21)

    def feeds(ishape):
        return {
            "data": rng.integers(-4, 5, (4, 5)).astype(np.float32),
            "indices": rng.integers(-5, 5, ishape).astype(np.int64),
            "updates": rng.integers(-3, 4, ishape).astype(np.float32),
        }

    good, bad = feeds((4, 7)), feeds((5, 2))
    want = ort.InferenceSession(
        m.SerializeToString(), providers=["CPUExecutionProvider"]
    ).run(None, good)[0]
    return convert(m, "dml", strategy="lower").model, good, bad, want


OFF_AXIS = _off_axis_cases()
LANE_CASES += [
    Case(
        "scatter_off_axis:fits", OFF_AXIS[0], OFF_AXIS[1], session_options=AS_USERS_RUN
    ),
    Case(
        "scatter_off_axis:longer",
        OFF_AXIS[0],
        OFF_AXIS[2],
        session_options=AS_USERS_RUN,
    ),
]


def test_indices_longer_off_the_axis_fail_the_run_on_dml(lane_results):
    """On the real DML EP the guard fails the run whose indices are longer than the data off
    the axis, as ORT's kernel does; indices that fit give ORT's values (small integers: exact)."""
    fits = lane_results["scatter_off_axis:fits"]
    assert fits.ok, f"{fits.stage}: {fits.error}"
    assert fits.providers[0] == DML, fits.providers
    np.testing.assert_array_equal(fits.outputs[0], OFF_AXIS[3])
    longer = lane_results["scatter_off_axis:longer"]
    assert not longer.ok and "IndexOrSizeOutOfRange" in (longer.error or ""), (
        longer.stage,
        longer.error,
    )


@pytest.mark.parametrize("name", list(LEAN))
def test_lean_scatter_folds_on_dml_equal_ort_cpu_kernel(lane_results, name):
    """The sort / prefix-sum folds on the real DML EP (TopK's order of equal keys, MaxUnpool,
    int CumSum): bit for bit ORT's sequential CPU kernel — NaN, signed zeros, wrapped sums."""
    _, feeds, original = LEAN[name]
    r = lane_results[name]
    assert r.ok, f"{name}: {r.stage}: {r.error}"
    assert r.providers[0] == DML, r.providers
    op = original.graph.node[0].op_type
    assert f"the_{op}" not in r.on(CPU)  # lowered, not left to the CPU kernel
    # on one thread: ORT's CPU ScatterND reduces on its pool without atomics
    # (tools/repro_ort_cpu_scatternd_race.py)
    (want,) = run_cpu(original, feeds)
    got = r.outputs[0]
    assert got.dtype == want.dtype and got.shape == want.shape
    if "float_add" in name or "float_mul" in name:
        # the block folds' NaN is a NaN, not ORT's CPU payload (inf − inf gives x86's negative
        # default NaN there); every other value bit for bit, the sign of each zero included
        assert np.array_equal(np.isnan(got), np.isnan(want))
        keep = ~np.isnan(want)
        np.testing.assert_array_equal(
            got[keep].view(np.uint8), want[keep].view(np.uint8)
        )
        return
    np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))  # bits
