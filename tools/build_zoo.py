"""Rebuild the model zoo shipped in ort_dml_ops/data/zoo/ (see docs/zoo.md).

    python tools/build_zoo.py            # write every model, its inputs and expected outputs
    python tools/build_zoo.py --check    # rebuild in memory; fail if any stored byte differs

Each model is shaped like a real use of CumSum / CumProd / ScatterElements and is written with
`ort_dml_ops.GraphBuilder` (the graph under test). Its example inputs come from a fixed seed and
its expected outputs from an independent numpy implementation in THIS file (plain loops and
numpy, in float64 where the model's dtype allows it) — never from `ort_dml_ops.ops`, ONNX
Runtime or the converter. Files are byte-reproducible: .npz archives are written with a fixed
timestamp, models are serialized deterministically.

Layout: ort_dml_ops/data/zoo/index.json (metadata: what each model is, tolerance, whether its
shapes are static, a known ONNX Runtime limitation for its unconverted form) and
ort_dml_ops/data/zoo/<name>/{model.onnx, inputs.npz, expected.npz}.
"""

from __future__ import annotations

import argparse
import io
import json
import sys
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import onnx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ort_dml_ops import GraphBuilder

ZOO = ROOT / "ort_dml_ops" / "data" / "zoo"
F16_LOWEST = float(np.finfo(np.float16).min)
F32_LOWEST = float(np.finfo(np.float32).min)


@dataclass
class Entry:
    name: str
    title: str
    use: str  # the real use it is shaped like
    families: list[str]
    model: onnx.ModelProto
    inputs: dict[str, np.ndarray]
    expected: dict[str, np.ndarray]
    rtol: float
    atol: float
    why_tolerance: str
    static: bool = True
    #: substring of ONNX Runtime's error when the UNCONVERTED model runs on its CPU EP, if it cannot
    native_cpu_error: str | None = None
    notes: list[str] = field(default_factory=list)


def f16(x):
    return np.asarray(x, np.float64).astype(np.float16)


def sigmoid64(x):
    return 1.0 / (1.0 + np.exp(-np.asarray(x, np.float64)))


# ------------------------------------------------------------------------------------ models


def position_ids() -> Entry:
    """HF transformers: position_ids = attention_mask.cumsum(-1) - 1, masked_fill(mask == 0, 1)."""
    b = GraphBuilder(opset=17, name="position_ids")
    mask = b.input("attention_mask", "int64", ["batch", "seq"])
    cs = b.cumsum(mask, axis=-1)
    pos = b.op("Sub", cs, np.array(1, np.int64))
    pad = b.op("Equal", mask, np.array(0, np.int64))
    out = b.op("Where", pad, np.array(1, np.int64), pos)
    model = b.build(outputs={"position_ids": out})

    seq, pads = 16, [0, 5, 11]  # left padding, as in batched generation
    m = np.zeros((len(pads), seq), np.int64)
    for r, p in enumerate(pads):
        m[r, p:] = 1
    want = np.ones_like(m)
    for r in range(m.shape[0]):
        count = 0
        for c in range(seq):
            count += m[r, c]
            if m[r, c]:
                want[r, c] = count - 1
    return Entry(
        "position_ids",
        "Position ids from an attention mask",
        "LLM decoding with left-padded batches (transformers' position_ids from attention_mask)",
        ["CumSum"],
        model,
        {"attention_mask": m},
        {"position_ids": want},
        0.0,
        0.0,
        "integers: exact",
        static=False,
    )


def nucleus_sampling() -> Entry:
    """Top-p filtering of next-token probabilities (float16, opset 18 as torch.onnx exports)."""
    B, V, temperature, top_p = 4, 64, 0.8, 0.9
    b = GraphBuilder(opset=18, name="nucleus_sampling")
    logits = b.input("logits", "float16", [B, V])
    probs = b.op(
        "Softmax", b.op("Div", logits, np.array(temperature, np.float16)), axis=-1
    )
    sorted_p, order = b.op(
        "TopK", probs, np.array([V], np.int64), axis=-1, largest=1, sorted=1, outputs=2
    )
    mass_before = b.cumsum(sorted_p, axis=-1, exclusive=True)
    keep = b.op("Less", mass_before, np.array(top_p, np.float16))
    kept = b.op("Where", keep, sorted_p, np.array(0, np.float16))
    zeros = b.op(
        "ConstantOfShape",
        b.op("Shape", probs),
        value=onnx.numpy_helper.from_array(np.zeros(1, np.float16)),
    )
    filtered = b.scatter_elements(zeros, order, kept, axis=-1)
    out = b.op(
        "Div",
        filtered,
        b.op("ReduceSum", filtered, np.array([-1], np.int64), keepdims=1),
    )
    model = b.build(outputs={"probs": out})

    # Draw logits until no prefix mass lies within 0.01 of top_p, so no keep/drop decision can
    # depend on rounding order or on the order of tied probabilities (seeded: reproducible).
    rng = np.random.default_rng(6)
    while True:
        x = f16(rng.normal(0.0, 2.0, (B, V)))
        scaled = (x / np.float16(temperature)).astype(np.float16)  # Div in float16
        e = np.exp(
            scaled.astype(np.float64) - scaled.astype(np.float64).max(-1, keepdims=True)
        )
        p16 = f16(e / e.sum(-1, keepdims=True))
        p = p16.astype(np.float64)
        ok = True
        want = np.zeros((B, V))
        for r in range(B):
            idx = sorted(range(V), key=lambda i: -p[r, i])
            before = 0.0
            for i in idx:
                ok &= abs(before - top_p) > 0.01
                if before < top_p:
                    want[r, i] = p[r, i]
                before += p[r, i]
        if ok:
            break
    want = want / want.sum(-1, keepdims=True)
    return Entry(
        "nucleus_sampling",
        "Nucleus (top-p) sampling filter",
        "LLM sampling: sort probabilities, CumSum, drop the tail past p, scatter back to vocabulary order",
        ["CumSum", "ScatterElements"],
        model,
        {"logits": x},
        {"probs": f16(want)},
        5e-3,
        1e-3,
        "float16 outputs after ~4 float16 roundings (softmax, cumsum, div): rtol 5e-3, atol 1e-3; "
        "inputs drawn so no keep/drop decision is within 0.01 of top_p",
    )


def ddpm_step() -> Entry:
    """DDPM: alphas_cumprod = CumProd(1 - betas) over 1000 steps, then the posterior mean step."""
    T, shape, ts = 1000, [2, 4, 8, 8], [10, 500]
    b = GraphBuilder(opset=17, name="ddpm_step")
    betas = b.input("betas", "float32", [T])
    x_t = b.input("x_t", "float32", shape)
    eps = b.input("eps", "float32", shape)
    t = b.input("t", "int64", [2])
    alphas = b.op("Sub", np.array(1.0, np.float32), betas)
    abar = b.cumprod(alphas, axis=0)
    col = np.array([2, 1, 1, 1], np.int64)
    beta_t = b.op("Reshape", b.op("Gather", betas, t), col)
    alpha_t = b.op("Reshape", b.op("Gather", alphas, t), col)
    abar_t = b.op("Reshape", b.op("Gather", abar, t), col)
    coef = b.op(
        "Div", beta_t, b.op("Sqrt", b.op("Sub", np.array(1.0, np.float32), abar_t))
    )
    mean = b.op("Div", b.op("Sub", x_t, b.op("Mul", coef, eps)), b.op("Sqrt", alpha_t))
    model = b.build(outputs={"x_prev_mean": mean, "alphas_cumprod": abar})

    rng = np.random.default_rng(7)
    beta = np.linspace(1e-4, 0.02, T, dtype=np.float32)  # DDPM's linear schedule
    xt = rng.normal(size=shape).astype(np.float32)
    ep = rng.normal(size=shape).astype(np.float32)
    tt = np.array(ts, np.int64)
    a = 1.0 - beta.astype(np.float64)
    abar64 = np.ones(T)
    acc = 1.0
    for i in range(T):
        acc *= a[i]
        abar64[i] = acc
    want = np.empty(shape)
    for n in range(2):
        k = tt[n]
        want[n] = (xt[n] - beta[k] / np.sqrt(1.0 - abar64[k]) * ep[n]) / np.sqrt(a[k])
    return Entry(
        "ddpm_step",
        "Diffusion noise schedule and denoising step",
        "DDPM sampler: alphas_cumprod = CumProd(1 - beta) over 1000 steps feeds the posterior mean of x_{t-1}",
        ["CumProd"],
        model,
        {"betas": beta, "x_t": xt, "eps": ep, "t": tt},
        {
            "x_prev_mean": want.astype(np.float32),
            "alphas_cumprod": abar64.astype(np.float32),
        },
        2e-4,
        1e-5,
        "float32 CumProd of 1000 factors: relative error <= 2*(n+1)*2^-24 = 1.2e-4 (docs/convert.md), x2 margin",
    )


def survival_curve() -> Entry:
    """Discrete-time survival: S(t) = prod_{k<=t} (1 - hazard_k), float16, plus expected lifetime."""
    B, T = 8, 48
    b = GraphBuilder(opset=17, name="survival_curve")
    logits = b.input("hazard_logits", "float16", [B, T])
    hazard = b.op("Sigmoid", logits)
    surv = b.cumprod(b.op("Sub", np.array(1.0, np.float16), hazard), axis=1)
    life = b.op("ReduceSum", surv, np.array([1], np.int64), keepdims=0)
    model = b.build(outputs={"survival": surv, "expected_lifetime": life})

    rng = np.random.default_rng(8)
    x = f16(rng.normal(-3.0, 0.7, (B, T)))
    h = f16(sigmoid64(x))  # the float16 Sigmoid output
    s = f16(1.0 - h.astype(np.float64))  # the float16 Sub output
    want = np.empty((B, T))
    for r in range(B):
        acc = 1.0
        for c in range(T):
            acc *= float(s[r, c])
            want[r, c] = acc
    return Entry(
        "survival_curve",
        "Survival curve (float16)",
        "discrete-time survival / churn models: S(t) = CumProd(1 - hazard), expected lifetime = sum S(t)",
        ["CumProd"],
        model,
        {"hazard_logits": x},
        {"survival": f16(want), "expected_lifetime": f16(want.sum(1))},
        2e-2,
        1e-3,
        "float16 products of 48 factors: bound 2*(n+1)*2^-11 = 4.8%; observed well under 1%, rtol 2e-2",
    )


def discounted_return() -> Entry:
    """RL: G_t = sum_k gamma^k r_{t+k} with a per-environment gamma: CumProd, reverse CumSum."""
    B, T = 8, 64
    b = GraphBuilder(opset=17, name="discounted_return")
    rewards = b.input("rewards", "float32", [B, T])
    gamma = b.input("gamma", "float32", [B, 1])
    powers = b.cumprod(
        b.op("Expand", gamma, np.array([B, T], np.int64)), axis=1, exclusive=True
    )  # gamma^t
    tail = b.cumsum(b.op("Mul", rewards, powers), axis=1, reverse=True)
    model = b.build(outputs={"returns": b.op("Div", tail, powers)})

    rng = np.random.default_rng(9)
    r = rng.normal(0.0, 1.0, (B, T)).astype(np.float32)
    g = rng.uniform(0.95, 0.999, (B, 1)).astype(np.float32)
    want = np.empty((B, T))
    for i in range(B):
        acc = 0.0
        for c in reversed(range(T)):
            acc = float(r[i, c]) + float(g[i, 0]) * acc
            want[i, c] = acc
    return Entry(
        "discounted_return",
        "Discounted returns",
        "reinforcement learning: returns G_t = r_t + gamma G_{t+1} as reverse CumSum over gamma^t (exclusive CumProd)",
        ["CumProd", "CumSum"],
        model,
        {"rewards": r, "gamma": g},
        {"returns": want.astype(np.float32)},
        1e-4,
        1e-4,
        "float32 scan of 64 terms divided by gamma^t >= 0.04: a few hundred ulps, rtol/atol 1e-4",
    )


def bincount() -> Entry:
    """Weighted histogram (torch.bincount(weights=...) / histc): ScatterElements add."""
    B, N, bins = 4, 256, 16
    b = GraphBuilder(opset=17, name="bincount")
    x = b.input("values", "float32", [B, N])
    w = b.input("weights", "float32", [B, N])
    k = b.op("Floor", b.op("Mul", x, np.array(bins, np.float32)))
    k = b.op(
        "Cast",
        b.op("Clip", k, np.array(0, np.float32), np.array(bins - 1, np.float32)),
        to=onnx.TensorProto.INT64,
    )
    hist = b.scatter_elements(
        np.zeros((B, bins), np.float32), k, w, axis=1, reduction="add"
    )
    model = b.build(outputs={"histogram": hist})

    rng = np.random.default_rng(10)
    xv = rng.beta(2.0, 5.0, (B, N)).astype(np.float32)
    wv = rng.uniform(0.0, 1.0, (B, N)).astype(np.float32)
    want = np.zeros((B, bins))
    for r in range(B):
        for c in range(N):
            k_ = min(
                max(int(np.floor(np.float32(xv[r, c]) * np.float32(bins))), 0), bins - 1
            )  # exact in float32
            want[r, k_] += float(wv[r, c])
    return Entry(
        "bincount",
        "Weighted histogram (bincount)",
        "feature statistics / calibration histograms: torch.bincount(weights) exported as ScatterElements add",
        ["ScatterElements"],
        model,
        {"values": xv, "weights": wv},
        {"histogram": want.astype(np.float32)},
        1e-5,
        1e-5,
        "float32 sums of up to 256 weights: (log2 K + 2) * 2^-24 * sum|w| ~ 1.5e-4 abs worst case; typical 1e-6",
    )


def segment_max() -> Entry:
    """GNN global max pooling (float16): out[g] = max over nodes of graph g, ScatterElements max."""
    N, D, G = 64, 8, 6
    b = GraphBuilder(opset=17, name="segment_max")
    feats = b.input("node_features", "float16", [N, D])
    batch = b.input("batch", "int64", [N])
    idx = b.op(
        "Expand",
        b.op("Unsqueeze", batch, np.array([1], np.int64)),
        np.array([N, D], np.int64),
    )
    init = np.full((G, D), F16_LOWEST, np.float16)
    out = b.scatter_elements(init, idx, feats, axis=0, reduction="max")
    model = b.build(outputs={"graph_features": out})

    rng = np.random.default_rng(11)
    fv = f16(rng.normal(size=(N, D)))
    sizes = [
        7,
        13,
        9,
        15,
        8,
        12,
    ]  # nodes per graph, sorted batch vector as PyG builds it
    bv = np.repeat(np.arange(G), sizes).astype(np.int64)
    want = np.full((G, D), -np.inf)
    for n in range(N):
        for d in range(D):
            want[bv[n], d] = max(want[bv[n], d], float(fv[n, d]))
    return Entry(
        "segment_max",
        "Segment max (float16)",
        "graph neural networks: global max pooling of node features per graph (torch_scatter.scatter_max)",
        ["ScatterElements"],
        model,
        {"node_features": fv, "batch": bv},
        {"graph_features": f16(want)},
        0.0,
        0.0,
        "max is exact",
    )


def moe_combine() -> Entry:
    """Mixture-of-experts combine (float16): scatter-add the gate-weighted expert outputs back to
    their tokens (index_add_ / scatter_add over top-2 routing)."""
    T, D, k = 32, 16, 2
    b = GraphBuilder(opset=17, name="moe_combine")
    expert_out = b.input("expert_outputs", "float16", [T * k, D])
    gates = b.input("gate_weights", "float16", [T * k, 1])
    token = b.input("token_ids", "int64", [T * k])
    idx = b.op(
        "Expand",
        b.op("Unsqueeze", token, np.array([1], np.int64)),
        np.array([T * k, D], np.int64),
    )
    out = b.scatter_elements(
        np.zeros((T, D), np.float16),
        idx,
        b.op("Mul", expert_out, gates),
        axis=0,
        reduction="add",
    )
    model = b.build(outputs={"hidden": out})

    rng = np.random.default_rng(14)
    ev = f16(rng.normal(size=(T * k, D)))
    g = rng.uniform(0.1, 1.0, (T, k))
    gv = f16((g / g.sum(1, keepdims=True)).reshape(T * k, 1))
    tv = rng.permutation(np.repeat(np.arange(T), k)).astype(
        np.int64
    )  # rows grouped by expert, not by token
    want = np.zeros((T, D))
    for r in range(T * k):
        want[tv[r]] += (ev[r].astype(np.float64) * float(gv[r, 0])).astype(
            np.float16
        )  # Mul rounds to float16
    return Entry(
        "moe_combine",
        "Mixture-of-experts combine (float16)",
        "MoE layers: gate-weighted expert outputs scatter-added back to their tokens (index_add_ / scatter_add)",
        ["ScatterElements"],
        model,
        {"expert_outputs": ev, "gate_weights": gv, "token_ids": tv},
        {"hidden": f16(want)},
        2e-3,
        2e-3,
        "float16 sums of 2 float16 products: one or two roundings of 2^-11, rtol/atol 2e-3",
        native_cpu_error="MLFloat16 data type is not supported with ScatterElements opset 16 when reduction is 'add'",
    )


def linear_recurrence() -> Entry:
    """A gated linear-recurrence block: h_t = a_t h_{t-1} + (1 - a_t) x_t, in parallel form."""
    B, T, D = 2, 32, 16
    b = GraphBuilder(opset=17, name="linear_recurrence")
    x = b.input("x", "float32", [B, T, D])
    gate = b.input("gate", "float32", [B, T, D])
    a = b.op(
        "Add",
        np.array(0.9, np.float32),
        b.op("Mul", np.array(0.1, np.float32), b.op("Sigmoid", gate)),
    )
    decay = b.cumprod(a, axis=1)  # A_t = a_1 ... a_t
    u = b.op("Div", b.op("Mul", x, b.op("Sub", np.array(1.0, np.float32), a)), decay)
    h = b.op("Mul", decay, b.cumsum(u, axis=1))
    model = b.build(outputs={"h": h})

    rng = np.random.default_rng(12)
    xv = rng.normal(size=(B, T, D)).astype(np.float32)
    gv = rng.normal(size=(B, T, D)).astype(np.float32)
    av = 0.9 + 0.1 * sigmoid64(gv)
    want = np.empty((B, T, D))
    state = np.zeros((B, D))
    for t in range(T):
        state = av[:, t] * state + (1.0 - av[:, t]) * xv[:, t]
        want[:, t] = state
    return Entry(
        "linear_recurrence",
        "Linear-recurrence block",
        "linear RNN / state-space layers (e.g. minGRU, RetNet-style decay): CumProd of decays, CumSum of scaled inputs",
        ["CumProd", "CumSum"],
        model,
        {"x": xv, "gate": gv},
        {"h": want.astype(np.float32)},
        1e-4,
        1e-4,
        "float32 parallel scan over 32 steps with 1/A_t <= 30: a few hundred ulps, rtol/atol 1e-4",
    )


def scatter_reduce_amax() -> Entry:
    """torch scatter_reduce(dim=0, reduce="amax", include_self=False) at opset 18, as torch.onnx writes it."""
    N, D, V = 128, 16, 24
    b = GraphBuilder(opset=18, name="scatter_reduce_amax")
    pts = b.input("point_features", "float32", [N, D])
    vox = b.input("voxel_ids", "int64", [N])
    idx = b.op(
        "Expand",
        b.op("Unsqueeze", vox, np.array([1], np.int64)),
        np.array([N, D], np.int64),
    )
    self_ = np.zeros((V, D), np.float32)  # torch.zeros(V, D)
    # include_self=False: first overwrite every indexed position with the reduction's identity
    # (ConstantOfShape(Shape(src)) of the dtype's lowest value), then reduce.
    ident = b.op(
        "ConstantOfShape",
        b.op("Shape", pts),
        value=onnx.numpy_helper.from_array(np.array([F32_LOWEST], np.float32)),
    )
    cleared = b.scatter_elements(self_, idx, ident, axis=0)
    out = b.scatter_elements(cleared, idx, pts, axis=0, reduction="max")
    model = b.build(outputs={"voxel_features": out})

    rng = np.random.default_rng(13)
    pv = rng.normal(size=(N, D)).astype(np.float32)
    vv = rng.integers(0, V - 4, N).astype(
        np.int64
    )  # the last 4 voxels stay empty: they keep self (0)
    want = self_.astype(np.float64).copy()
    seen = set()
    for n in range(N):
        v = int(vv[n])
        if v not in seen:
            want[v] = pv[n]
            seen.add(v)
        else:
            want[v] = np.maximum(want[v], pv[n])
    return Entry(
        "scatter_reduce_amax",
        "scatter_reduce amax, include_self=False (opset 18)",
        "point-cloud voxel max pooling (PointPillars-style) exported by torch.onnx at opset 18",
        ["ScatterElements"],
        model,
        {"point_features": pv, "voxel_ids": vv},
        {"voxel_features": want.astype(np.float32)},
        0.0,
        0.0,
        "max is exact",
    )


BUILDERS = [
    position_ids,
    nucleus_sampling,
    ddpm_step,
    survival_curve,
    discounted_return,
    bincount,
    segment_max,
    moe_combine,
    linear_recurrence,
    scatter_reduce_amax,
]


# ------------------------------------------------------------------------------------ writing


def npz_bytes(arrays: dict[str, np.ndarray]) -> bytes:
    """An .npz archive with fixed timestamps (np.savez stamps the current time)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for key in arrays:  # in the model's input / output order
            info = zipfile.ZipInfo(f"{key}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            arr = io.BytesIO()
            np.lib.format.write_array(
                arr, np.ascontiguousarray(arrays[key]), allow_pickle=False
            )
            zf.writestr(info, arr.getvalue())
    return buf.getvalue()


def files() -> dict[str, bytes]:
    """Every zoo file, relative path -> bytes."""
    out: dict[str, bytes] = {}
    index = {"version": 1, "models": []}
    for build in BUILDERS:
        e = build()
        onnx.checker.check_model(e.model, full_check=True)
        assert set(e.inputs) == {i.name for i in e.model.graph.input}, e.name
        assert list(e.expected) == [o.name for o in e.model.graph.output], e.name
        model = onnx.ModelProto()
        model.CopyFrom(e.model)
        if e.static:  # exporters write static output shapes; shape inference may have left symbols
            for vi in model.graph.output:
                dims = vi.type.tensor_type.shape.dim
                for d, n in zip(dims, e.expected[vi.name].shape):
                    d.Clear()
                    d.dim_value = n
        model.doc_string = f"{e.title}: {e.use}. Rebuilt by tools/build_zoo.py."
        out[f"{e.name}/model.onnx"] = model.SerializeToString(deterministic=True)
        out[f"{e.name}/inputs.npz"] = npz_bytes(e.inputs)
        out[f"{e.name}/expected.npz"] = npz_bytes(e.expected)
        opset = next(
            i.version for i in model.opset_import if i.domain in ("", "ai.onnx")
        )
        dtypes = sorted(
            {str(a.dtype) for a in e.expected.values()}
            | {str(a.dtype) for a in e.inputs.values()}
        )
        index["models"].append(
            {
                "name": e.name,
                "title": e.title,
                "use": e.use,
                "families": e.families,
                "opset": opset,
                "dtypes": dtypes,
                "static_shapes": e.static,
                "rtol": e.rtol,
                "atol": e.atol,
                "why_tolerance": e.why_tolerance,
                "native_cpu_error": e.native_cpu_error,
                "inputs": list(e.inputs),
                "outputs": list(e.expected),
            }
        )
    out["index.json"] = (json.dumps(index, indent=1) + "\n").encode()
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--check",
        action="store_true",
        help="compare with the stored files instead of writing",
    )
    ap.add_argument(
        "--out",
        type=Path,
        default=ZOO,
        help=f"folder (default {ZOO.relative_to(ROOT)})",
    )
    args = ap.parse_args(argv)
    built = files()
    if args.check:
        stale = [
            p
            for p, data in built.items()
            if not (args.out / p).is_file() or (args.out / p).read_bytes() != data
        ]
        extra = sorted(
            str(p.relative_to(args.out))
            for p in args.out.rglob("*")
            if p.is_file() and str(p.relative_to(args.out)) not in built
        )
        for p in stale:
            print(f"differs: {p}")
        for p in extra:
            print(f"not built by this tool: {p}")
        return 1 if stale or extra else 0
    for rel, data in built.items():
        path = args.out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    total = sum(len(d) for d in built.values())
    print(f"wrote {len(built)} files ({total / 1024:.0f} KiB) under {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
