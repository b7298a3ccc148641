"""Export the real-export corpus in models/real/ from public library code (see docs/real-models.md).

    .venv-export/bin/python tools/export_models.py            # export every model, write the files
    .venv-export/bin/python tools/export_models.py --check    # export in memory; fail if a stored byte differs
    .venv-export/bin/python tools/export_models.py --only NAME [--only NAME ...]

Every model here is what a user gets from `torch.onnx.export` (the dynamo exporter mostly, the
TorchScript exporter for some) on code from torch, torch_geometric and transformers, with the
dynamic axes a user would declare. Nothing is written by hand in ONNX: the one exception is the
translation of `aten::cumprod`, which neither exporter can export, to the project's DOMAIN op
`io.github.ortdmlops::CumProd` (dynamo: `custom_translation_table`; TorchScript:
`register_custom_op_symbolic`), which is how a user of this project exports a cumprod.

Per model this writes models/real/<name>/model.onnx, inputs.npz (example inputs, fixed seed) and
expected.npz (torch's own outputs for them), and one entry of models/real/index.json. Before
writing, each model passes `onnx.checker.check_model(full_check=True)` (with the DOMAIN schemas
registered) and runs on ONNX Runtime's CPU EP; where ORT's outputs differ from torch's the
exporter (or the library's export path) wrote a wrong model: that is allowed only where the
spec names it (`wrong=`), with an independent computation of what the written model computes,
and the entry is marked `exporter_wrong`.

Needs the dev-only environment of tools/requirements-export.txt (CPU torch 2.13, transformers,
torch_geometric, onnxscript); the package never does. Files are byte-reproducible: node and
value metadata (the exporter's stack traces, which hold file paths) are dropped, .npz archives
carry a fixed timestamp.
"""

from __future__ import annotations

import argparse
import io
import json
import logging
import os
import sys
import warnings
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import onnx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ort_dml_ops._domain import DOMAIN, DOMAIN_VERSION
from ort_dml_ops.domain_schemas import registered

OUT = ROOT / "models" / "real"
FAMILY_OPS = ("CumSum", "CumProd", "ScatterElements", "ScatterND", "Scatter")
#: ONNX Runtime 1.24.4 (DirectML) loads IR <= 13
MAX_IR_VERSION = 13

F32_WHY = (
    "float32: torch and ONNX Runtime sum, multiply and normalise in different orders "
    "(Gemm, Softmax, scatter-add of duplicate indices), so the last bits may differ"
)


@dataclass
class Spec:
    name: str
    title: str
    #: the public library function or module the model comes from
    source: str
    exporter: str  # "dynamo" or "torchscript"
    module: Any
    #: example inputs, in the order of `module.forward`'s parameters (names = ONNX input names)
    inputs: dict
    outputs: list[str]
    #: {input name: {axis: dim name}} as a user declares them
    dynamic: dict = field(default_factory=dict)
    #: where the library code makes a shape depend on the data (empty: none)
    data_dependent: str = ""
    rtol: float = 0.0
    atol: float = 0.0
    why_tolerance: str = "integer or copied values: exact"
    libraries: tuple = ("torch",)
    cumprod: bool = False  # translate aten::cumprod to DOMAIN::CumProd
    #: substring of ONNX Runtime's error when the stored model runs on its CPU EP (None: it runs);
    #: the export is then checked with onnx's ReferenceEvaluator instead
    ort_cpu_error: str | None = None
    #: opset_version passed to the exporter (None: the exporter's default, what most users get)
    opset: int | None = None
    #: where the written model computes something else than torch: numpy computation of what
    #: it computes (from the example inputs, by name), and a sentence saying what is wrong
    wrong: Callable | None = None
    wrong_note: str = ""


SPECS: list[Callable[[], Spec]] = []


def spec(fn):
    SPECS.append(fn)
    return fn


def _seeded():
    import torch

    torch.manual_seed(0)
    return np.random.default_rng(0)


# ------------------------------------------------------------------------------------------
# torch_geometric
# ------------------------------------------------------------------------------------------
def _graph(rng, nodes=7, edges=14, feats=4):
    import torch

    src = rng.integers(0, nodes, edges)
    dst = rng.integers(0, nodes, edges)
    dst[:2] = src[:2]  # two self loops: add_remaining_self_loops keeps their weight
    ei = torch.tensor(np.stack([src, dst]), dtype=torch.int64)
    x = torch.tensor(rng.standard_normal((nodes, feats)), dtype=torch.float32)
    return x, ei


@spec
def pyg_gcn_conv():
    from torch_geometric.nn import GCNConv

    rng = _seeded()
    conv = GCNConv(4, 3).eval()
    x, ei = _graph(rng)
    return Spec(
        "pyg_gcn_conv",
        "GCN layer (message passing with symmetric normalisation)",
        "torch_geometric.nn.GCNConv",
        "dynamo",
        conv,
        {"x": x, "edge_index": ei},
        ["out"],
        {"x": {0: "num_nodes"}, "edge_index": {1: "num_edges"}},
        data_dependent="add_remaining_self_loops keeps the edges with src != dst (NonZero): "
        "the number of scattered messages depends on the data",
        rtol=1e-5,
        atol=1e-6,
        why_tolerance=F32_WHY,
        libraries=("torch", "torch_geometric"),
    )


@spec
def pyg_gcn_conv_torchscript():
    s = pyg_gcn_conv()
    s.name, s.exporter = "pyg_gcn_conv_torchscript", "torchscript"
    return s


@spec
def pyg_gcn_conv_static():
    """The GCN layer exported with static input shapes (no dynamic axes): the number of
    messages still depends on the data (self-loop removal)."""
    s = pyg_gcn_conv()
    s.name, s.dynamic = "pyg_gcn_conv_static", {}
    s.title = (
        "GCN layer exported with static input shapes (data-dependent message count)"
    )
    return s


@spec
def pyg_gcn_conv_torchscript_opset17():
    """As torch < 2.9 exported by default (TorchScript, opset 17): ScatterElements-16."""
    s = pyg_gcn_conv()
    s.name, s.exporter, s.opset = "pyg_gcn_conv_torchscript_opset17", "torchscript", 17
    return s


@spec
def pyg_gcn_conv_opset18():
    """As torch 2.5-2.8's dynamo exporter wrote by default (opset 18)."""
    s = pyg_gcn_conv()
    s.name, s.opset = "pyg_gcn_conv_opset18", 18
    return s


@spec
def pyg_gat_conv():
    from torch_geometric.nn import GATConv

    rng = _seeded()
    conv = GATConv(4, 3, heads=2).eval()
    x, ei = _graph(rng)
    return Spec(
        "pyg_gat_conv",
        "GAT layer: attention softmax over each node's incoming edges (utils.softmax: scatter max + sum)",
        "torch_geometric.nn.GATConv(heads=2)",
        "dynamo",
        conv,
        {"x": x, "edge_index": ei},
        ["out"],
        {"x": {0: "num_nodes"}, "edge_index": {1: "num_edges"}},
        data_dependent="add_self_loops after remove_self_loops (NonZero): the number of scattered "
        "attention scores depends on the data",
        rtol=1e-5,
        atol=1e-6,
        why_tolerance=F32_WHY,
        libraries=("torch", "torch_geometric"),
    )


@spec
def pyg_sage_conv_mean():
    from torch_geometric.nn import SAGEConv

    rng = _seeded()
    conv = SAGEConv(4, 3, aggr="mean").eval()
    x, ei = _graph(rng)
    return Spec(
        "pyg_sage_conv_mean",
        "GraphSAGE layer, mean aggregation",
        "torch_geometric.nn.SAGEConv(aggr='mean')",
        "dynamo",
        conv,
        {"x": x, "edge_index": ei},
        ["out"],
        {"x": {0: "num_nodes"}, "edge_index": {1: "num_edges"}},
        rtol=1e-5,
        atol=1e-6,
        why_tolerance=F32_WHY,
        libraries=("torch", "torch_geometric"),
    )


class PygScatter:
    """forward(src, index, x) = torch_geometric.utils.scatter(src, index, 0, x.size(0), reduce):
    the output size taken from the node count, as MessagePassing does."""

    def __new__(cls, reduce):
        import torch
        from torch_geometric.utils import scatter

        class M(torch.nn.Module):
            def forward(self, src, index, x):
                return scatter(src, index, 0, x.size(0), reduce=reduce)

        return M()


def _pyg_scatter(reduce: str, exporter: str = "dynamo", wrong=None, wrong_note=""):
    import torch

    rng = _seeded()
    x, ei = _graph(rng)
    src = torch.tensor(rng.standard_normal((ei.shape[1], 3)) - 0.5, dtype=torch.float32)
    index = ei[1].clone()
    index[index == 5] = 4  # node 5 receives nothing: the empty-segment rule shows
    src[index == 6] = (
        -src[index == 6].abs() - 0.1
    )  # an all-negative segment (max: not 0)
    src[index == 3] = (
        src[index == 3].abs() + 0.1
    )  # an all-positive segment (min: not 0)
    exact = reduce in ("max", "min")
    suffix = "" if exporter == "dynamo" else "_torchscript"
    return Spec(
        f"pyg_scatter_{reduce}{suffix}",
        f"torch_geometric.utils.scatter, reduce={reduce!r}",
        f"torch_geometric.utils.scatter(reduce={reduce!r})",
        exporter,
        PygScatter(reduce),
        {"src": src, "index": index, "x": x},
        ["out"],
        {"src": {0: "num_edges"}, "index": {0: "num_edges"}, "x": {0: "num_nodes"}},
        rtol=0 if exact else 1e-5,
        atol=0 if exact else 1e-6,
        why_tolerance="max/min pick one of the values: exact" if exact else F32_WHY,
        libraries=("torch", "torch_geometric"),
        wrong=wrong,
        wrong_note=wrong_note,
    )


def _pyg_export_max(feeds, reduce):
    """What PyG's `is_in_onnx_export()` branch of utils.scatter computes for max/min: a zeros
    tensor scatter-amax'ed (include_self=True) with the global min (resp. max), then with src —
    so every segment also takes 0 into its max (min): an all-negative segment's max is 0."""
    src, index, x = feeds["src"], feeds["index"], feeds["x"]
    out = np.zeros((x.shape[0], src.shape[1]), src.dtype)
    pick = np.maximum if reduce == "max" else np.minimum
    fill = src.min() if reduce == "max" else src.max()
    for j in index:
        out[j] = pick(out[j], fill)
    for i, j in enumerate(index):
        out[j] = pick(out[j], src[i])
    return {"out": out}


PYG_EXPORT_NOTE = (
    "torch_geometric.utils.scatter has its own branch under the TorchScript exporter "
    "(torch_geometric.is_in_onnx_export(): True under TorchScript, False under dynamo, where "
    "torch is compiling; include_self=False is not exportable by TorchScript): it scatters into zeros with "
    "include_self=True, so each segment's {r} also includes 0 — a segment whose values are all "
    "{sign} gets 0 instead of its {r}"
)


@spec
def pyg_scatter_sum():
    return _pyg_scatter("sum")


@spec
def pyg_scatter_mean():
    return _pyg_scatter("mean")


@spec
def pyg_scatter_max():
    return _pyg_scatter("max")


@spec
def pyg_scatter_min():
    return _pyg_scatter("min")


@spec
def pyg_scatter_max_torchscript():
    return _pyg_scatter(
        "max",
        exporter="torchscript",
        wrong=lambda f: _pyg_export_max(f, "max"),
        wrong_note=PYG_EXPORT_NOTE.format(r="max", sign="negative"),
    )


def _half(s: Spec, title: str) -> Spec:
    """The spec in float16 (module and float inputs .half()), values on a 1/8 grid so that
    float16 sums of them are exact whatever the order."""
    import torch

    s.name += "_fp16"
    s.title += title
    s.module = s.module.half()
    s.inputs = {
        k: ((v * 8).round() / 8).half() if v.is_floating_point() else v
        for k, v in s.inputs.items()
    }
    s.rtol = s.atol = 0.0
    s.why_tolerance = "float16 values on a 1/8 grid: sums and maxima are exact"
    if s.name.startswith("pyg_scatter_sum"):
        s.ort_cpu_error = "MLFloat16 data type is not supported with ScatterElements opset 16 when reduction is 'add'"
    assert all(t.dtype in (torch.float16, torch.int64) for t in s.inputs.values())
    return s


@spec
def pyg_scatter_sum_fp16():
    return _half(_pyg_scatter("sum"), " (float16)")


@spec
def pyg_scatter_max_fp16():
    return _half(_pyg_scatter("max"), " (float16)")


@spec
def pyg_scatter_sum_torchscript():
    return _pyg_scatter("sum", exporter="torchscript")


def _pool(kind: str):
    import torch
    from torch_geometric.nn import global_max_pool, global_mean_pool

    fn = {"mean": global_mean_pool, "max": global_max_pool}[kind]

    class M(torch.nn.Module):
        def forward(self, x, batch):
            return fn(x, batch)  # size=None: the number of graphs is batch.max() + 1

    rng = _seeded()
    x = torch.tensor(rng.standard_normal((9, 4)), dtype=torch.float32)
    batch = torch.tensor([0, 0, 0, 1, 1, 2, 2, 2, 2], dtype=torch.int64)
    exact = kind == "max"
    return Spec(
        f"pyg_global_{kind}_pool",
        f"graph-level readout: global_{kind}_pool over a batch of graphs",
        f"torch_geometric.nn.global_{kind}_pool(size=None)",
        "dynamo",
        M(),
        {"x": x, "batch": batch},
        ["out"],
        {"x": {0: "num_nodes"}, "batch": {0: "num_nodes"}},
        data_dependent="size=None: the number of graphs is int(batch.max()) + 1, read from the data",
        rtol=0 if exact else 1e-5,
        atol=0 if exact else 1e-6,
        why_tolerance="max picks one of the values: exact" if exact else F32_WHY,
        libraries=("torch", "torch_geometric"),
    )


@spec
def pyg_global_mean_pool():
    return _pool("mean")


@spec
def pyg_global_max_pool():
    return _pool("max")


# ------------------------------------------------------------------------------------------
# transformers
# ------------------------------------------------------------------------------------------
def _warper(cls_name: str, exporter: str, **kw):
    import torch
    import transformers.generation.logits_process as lp

    warper = getattr(lp, cls_name)(**kw)

    class M(torch.nn.Module):
        def forward(self, scores):
            return warper(None, scores)

    rng = _seeded()
    scores = torch.tensor(rng.standard_normal((3, 32)) * 3, dtype=torch.float32)
    return M(), {"scores": scores}


@spec
def hf_top_p():
    m, feeds = _warper("TopPLogitsWarper", "dynamo", top_p=0.8)
    return Spec(
        "hf_top_p",
        "nucleus (top-p) filtering of next-token logits: sort, softmax, cumsum, scatter back",
        "transformers.generation.TopPLogitsWarper(top_p=0.8)",
        "dynamo",
        m,
        feeds,
        ["scores_processed"],
        {"scores": {0: "batch", 1: "vocab"}},
        libraries=("torch", "transformers"),
        why_tolerance="every output is the input logit or -inf: exact",
    )


@spec
def hf_top_p_opset18():
    """As torch 2.5-2.8's dynamo exporter wrote by default (opset 18)."""
    s = hf_top_p()
    s.name, s.opset = "hf_top_p_opset18", 18
    return s


@spec
def hf_top_p_torchscript():
    s = hf_top_p()
    s.name, s.exporter = "hf_top_p_torchscript", "torchscript"
    return s


@spec
def hf_repetition_penalty():
    import torch
    from transformers.generation.logits_process import RepetitionPenaltyLogitsProcessor

    proc = RepetitionPenaltyLogitsProcessor(penalty=1.3)

    class M(torch.nn.Module):
        def forward(self, input_ids, scores):
            return proc(input_ids, scores)

    rng = _seeded()
    scores = torch.tensor(rng.standard_normal((3, 32)) * 3, dtype=torch.float32)
    ids = torch.tensor(rng.integers(0, 32, (3, 9)), dtype=torch.int64)
    ids[:, -1] = ids[
        :, 0
    ]  # a repeated token: duplicate scatter indices (same value written)
    return Spec(
        "hf_repetition_penalty",
        "repetition penalty: gather the scores of generated tokens, penalise, scatter them back",
        "transformers.generation.RepetitionPenaltyLogitsProcessor(penalty=1.3)",
        "dynamo",
        M(),
        {"input_ids": ids, "scores": scores},
        ["scores_processed"],
        {"input_ids": {0: "batch", 1: "sequence"}, "scores": {0: "batch", 1: "vocab"}},
        rtol=1e-6,
        atol=0,
        why_tolerance="logits times or divided by the penalty: one float32 rounding",
        libraries=("torch", "transformers"),
    )


@spec
def hf_min_p():
    m, feeds = _warper("MinPLogitsWarper", "dynamo", min_p=0.1, min_tokens_to_keep=2)
    return Spec(
        "hf_min_p",
        "min-p filtering: a bool mask with the top tokens scattered back to False",
        "transformers.generation.MinPLogitsWarper(min_p=0.1, min_tokens_to_keep=2)",
        "dynamo",
        m,
        feeds,
        ["scores_processed"],
        {"scores": {0: "batch", 1: "vocab"}},
        libraries=("torch", "transformers"),
        why_tolerance="every output is the input logit or -inf: exact",
    )


@spec
def hf_top_p_torchscript_opset17():
    s = hf_top_p()
    s.name, s.exporter, s.opset = "hf_top_p_torchscript_opset17", "torchscript", 17
    return s


@spec
def hf_top_k():
    m, feeds = _warper("TopKLogitsWarper", "dynamo", top_k=5)
    return Spec(
        "hf_top_k",
        "top-k filtering of next-token logits (no scan or scatter: a control)",
        "transformers.generation.TopKLogitsWarper(top_k=5)",
        "dynamo",
        m,
        feeds,
        ["scores_processed"],
        {"scores": {0: "batch", 1: "vocab"}},
        libraries=("torch", "transformers"),
        why_tolerance="every output is the input logit or -inf: exact",
    )


def _position_ids(exporter: str):
    import torch
    from transformers.models.roberta.modeling_roberta import RobertaEmbeddings

    class M(torch.nn.Module):
        def forward(self, input_ids):
            return RobertaEmbeddings.create_position_ids_from_input_ids(
                input_ids, padding_idx=1
            )

    rng = _seeded()
    ids = rng.integers(2, 100, (3, 9))
    ids[0, 6:] = 1  # right padding
    ids[1, :2] = 1  # left padding
    suffix = "" if exporter == "dynamo" else "_torchscript"
    return Spec(
        f"roberta_position_ids{suffix}",
        "RoBERTa position ids: cumsum of the non-padding mask",
        "transformers RobertaEmbeddings.create_position_ids_from_input_ids",
        exporter,
        M(),
        {"input_ids": torch.tensor(ids, dtype=torch.int64)},
        ["position_ids"],
        {"input_ids": {0: "batch", 1: "sequence"}},
        libraries=("torch", "transformers"),
    )


@spec
def roberta_position_ids():
    return _position_ids("dynamo")


@spec
def roberta_position_ids_torchscript():
    return _position_ids("torchscript")


@spec
def roberta_tiny():
    import torch
    from transformers import RobertaConfig, RobertaModel

    _seeded()
    cfg = RobertaConfig(
        vocab_size=100,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=40,
        type_vocab_size=1,
        pad_token_id=1,
        attn_implementation="eager",
    )
    model = RobertaModel(cfg, add_pooling_layer=False).eval()

    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.roberta = model

        def forward(self, input_ids, attention_mask):
            return self.roberta(
                input_ids=input_ids, attention_mask=attention_mask
            ).last_hidden_state

    rng = np.random.default_rng(0)
    ids = rng.integers(3, 100, (2, 11))
    ids[1, 7:] = 1
    mask = (ids != 1).astype(np.int64)
    return Spec(
        "roberta_tiny",
        "tiny RobertaModel (random weights): embeddings with cumsum position ids, 2 layers",
        "transformers.RobertaModel(RobertaConfig(hidden 32, 2 layers, vocab 100))",
        "dynamo",
        M(),
        {"input_ids": torch.tensor(ids), "attention_mask": torch.tensor(mask)},
        ["last_hidden_state"],
        {
            "input_ids": {0: "batch", 1: "sequence"},
            "attention_mask": {0: "batch", 1: "sequence"},
        },
        rtol=1e-4,
        atol=1e-5,
        why_tolerance=F32_WHY + "; LayerNorm and GELU over 2 layers",
        libraries=("torch", "transformers"),
    )


@spec
def roberta_tiny_torchscript():
    """The same tiny RoBERTa through the TorchScript exporter: dozens of Constant nodes and no
    value_info, as the TorchScript-exported XLM-R of issue 16."""
    s = roberta_tiny()
    s.name, s.exporter = "roberta_tiny_torchscript", "torchscript"
    return s


# ------------------------------------------------------------------------------------------
# mixture of experts
# ------------------------------------------------------------------------------------------
def _moe(exporter: str):
    import torch
    from torch import nn

    class SparseMoE(nn.Module):
        """Top-2 router in the shape of transformers' MixtralSparseMoeBlock: softmax gate, top-k,
        renormalised weights; per expert, the tokens routed to it (torch.where: data-dependent
        count) are processed and added back with index_add_. Also returns the tokens per expert."""

        def __init__(self, d=8, experts=4, k=2):
            super().__init__()
            self.k, self.n = k, experts
            self.gate = nn.Linear(d, experts, bias=False)
            self.experts = nn.ModuleList(nn.Linear(d, d) for _ in range(experts))

        def forward(self, hidden):
            probs = self.gate(hidden).softmax(-1)
            weights, selected = probs.topk(self.k, dim=-1)
            weights = weights / weights.sum(-1, keepdim=True)
            out = torch.zeros_like(hidden)
            for e in range(self.n):
                token, slot = torch.where(selected == e)
                out.index_add_(
                    0,
                    token,
                    self.experts[e](hidden[token]) * weights[token, slot, None],
                )
            load = torch.zeros(self.n, dtype=torch.int64).scatter_add_(
                0, selected.reshape(-1), torch.ones_like(selected.reshape(-1))
            )
            return out, load

    class DenseMoE(SparseMoE):
        """The same router written densely (every expert on every token, then the top-k
        gathered and combined with scatter_add_), as TorchScript-era exports did."""

        def forward(self, hidden):
            probs = self.gate(hidden).softmax(-1)
            weights, selected = probs.topk(self.k, dim=-1)
            weights = weights / weights.sum(-1, keepdim=True)
            every = torch.stack(
                [e(hidden) for e in self.experts], 1
            )  # tokens, experts, d
            picked = every.gather(
                1, selected[..., None].expand(-1, -1, hidden.shape[-1])
            )
            token = (
                torch.arange(hidden.shape[0])[:, None, None]
                .expand_as(picked)
                .reshape(-1, hidden.shape[-1])
            )
            out = torch.zeros_like(hidden).scatter_add_(
                0, token, (picked * weights[..., None]).reshape(-1, hidden.shape[-1])
            )
            load = torch.zeros(self.n, dtype=torch.int64).scatter_add_(
                0, selected.reshape(-1), torch.ones_like(selected.reshape(-1))
            )
            return out, load

    rng = _seeded()
    module = (SparseMoE if exporter == "dynamo" else DenseMoE)().eval()
    hidden = torch.tensor(rng.standard_normal((10, 8)), dtype=torch.float32)
    if exporter == "dynamo":
        return Spec(
            "moe_router",
            "mixture-of-experts layer: top-2 gate, per-expert tokens, index_add_ combine",
            "torch (Mixtral-style SparseMoE: topk, torch.where, index_add_, scatter_add_)",
            "dynamo",
            module,
            {"hidden": hidden},
            ["out", "load"],
            {"hidden": {0: "tokens"}},
            data_dependent="torch.where(selected == e): the number of tokens routed to each expert",
            rtol=1e-5,
            atol=1e-6,
            why_tolerance=F32_WHY + " (load: int64, exact)",
        )
    return Spec(
        "moe_router_torchscript",
        "mixture-of-experts layer, dense: gather the top-2 experts, scatter_add_ combine",
        "torch (dense MoE: topk, gather, scatter_add_)",
        "torchscript",
        module,
        {"hidden": hidden},
        ["out", "load"],
        {"hidden": {0: "tokens"}},
        rtol=1e-5,
        atol=1e-6,
        why_tolerance=F32_WHY + " (load: int64, exact)",
    )


@spec
def moe_router():
    return _moe("dynamo")


@spec
def moe_router_torchscript():
    return _moe("torchscript")


# ------------------------------------------------------------------------------------------
# torch scatter family: scatter_reduce, index_add_, scatter_
# ------------------------------------------------------------------------------------------
def _scatter_inputs():
    import torch

    rng = _seeded()
    x = torch.tensor(rng.standard_normal((5, 3)), dtype=torch.float32)
    # duplicates in every column; row 4 of x is never written (include_self=False shows there)
    index = torch.tensor(
        [[0, 1, 0], [3, 3, 1], [0, 1, 2], [0, 0, 0], [1, 1, 1], [3, 2, 2]],
        dtype=torch.int64,
    )
    src = torch.tensor(rng.standard_normal((6, 3)), dtype=torch.float32)
    return {"x": x, "index": index, "src": src}


def _scatter_reduce(reduce: str, exporter: str = "dynamo"):
    import torch

    class M(torch.nn.Module):
        def forward(self, x, index, src):
            return (
                x.scatter_reduce(0, index, src, reduce, include_self=True),
                x.scatter_reduce(0, index, src, reduce, include_self=False),
            )

    exact = reduce in ("amax", "amin")
    wrong, note = None, ""
    if reduce == "mean":
        wrong, note = _mean_as_written, MEAN_NOTE
    return Spec(
        f"scatter_reduce_{reduce}",
        f"Tensor.scatter_reduce(reduce={reduce!r}), include_self True and False",
        f"torch.Tensor.scatter_reduce(dim=0, reduce={reduce!r}, include_self=True/False)",
        exporter,
        M(),
        _scatter_inputs(),
        ["include_self", "exclude_self"],
        {"x": {0: "rows"}, "index": {0: "updates"}, "src": {0: "updates"}},
        rtol=0 if exact else 1e-6,
        atol=0 if exact else 1e-6,
        why_tolerance="amax/amin pick one of the values: exact"
        if exact
        else "float32 sums/products of duplicates in another order",
        wrong=wrong,
        wrong_note=note,
    )


MEAN_NOTE = (
    "torch.onnx (dynamo) writes scatter_reduce(reduce='mean') as ONE ScatterElements with "
    "reduction='none' (include_self=False: also none, after scattering zeros): with duplicate "
    "indices the last update wins — no sum, no division by the count"
)


def _mean_as_written(feeds):
    """What the dynamo export of scatter_reduce(mean) computes: a plain ScatterElements
    (reduction none: the last of duplicate updates wins, in ORT's CPU order)."""
    x, index, src = feeds["x"], feeds["index"], feeds["src"]
    keep = x.copy()
    for i in range(index.shape[0]):
        for j in range(index.shape[1]):
            keep[index[i, j], j] = src[i, j]
    return {"include_self": keep, "exclude_self": keep.copy()}


@spec
def scatter_reduce_sum():
    return _scatter_reduce("sum")


@spec
def scatter_reduce_prod():
    return _scatter_reduce("prod")


@spec
def scatter_reduce_amax():
    return _scatter_reduce("amax")


@spec
def scatter_reduce_amin():
    return _scatter_reduce("amin")


@spec
def scatter_reduce_mean():
    return _scatter_reduce("mean")


@spec
def scatter_reduce_torchscript():
    import torch

    class M(torch.nn.Module):
        def forward(self, x, index, src):
            return tuple(
                x.scatter_reduce(0, index, src, r, include_self=True)
                for r in ("sum", "prod", "amax", "amin")
            )

    return Spec(
        "scatter_reduce_torchscript",
        "Tensor.scatter_reduce sum/prod/amax/amin (include_self=True: "
        "the TorchScript exporter refuses include_self=False and mean)",
        "torch.Tensor.scatter_reduce(dim=0, include_self=True)",
        "torchscript",
        M(),
        _scatter_inputs(),
        ["sum", "prod", "amax", "amin"],
        {"x": {0: "rows"}, "index": {0: "updates"}, "src": {0: "updates"}},
        rtol=1e-6,
        atol=1e-6,
        why_tolerance="float32 sums/products of duplicates in another order "
        "(amax, amin: exact within this tolerance)",
    )


class IndexAdd:
    def __new__(cls):
        import torch

        class M(torch.nn.Module):
            def forward(self, x, index, src):
                return x.index_add(0, index, src)

        return M()


def _index_add_inputs():
    import torch

    feeds = _scatter_inputs()
    return {
        "x": feeds["x"],
        "index": torch.tensor([0, 3, 0, 0, 1, 3], dtype=torch.int64),
        "src": feeds["src"],
    }


def _index_add_as_written(feeds):
    """What the TorchScript export of index_add computes: x + a zeros tensor ScatterElements'ed
    (reduction none) with the updates — of duplicate rows only the last survives."""
    x, index, src = feeds["x"], feeds["index"], feeds["src"]
    z = np.zeros_like(x)
    for i, j in enumerate(index):
        z[j] = src[i]
    return {"out": x + z}


@spec
def index_add():
    return Spec(
        "index_add",
        "Tensor.index_add with duplicate indices",
        "torch.Tensor.index_add(dim=0)",
        "dynamo",
        IndexAdd(),
        _index_add_inputs(),
        ["out"],
        {"x": {0: "rows"}, "index": {0: "updates"}, "src": {0: "updates"}},
        rtol=1e-6,
        atol=1e-6,
        why_tolerance="float32 sums of duplicates in another order",
    )


@spec
def index_add_torchscript():
    s = index_add()
    s.name, s.exporter = "index_add_torchscript", "torchscript"
    s.wrong = _index_add_as_written
    s.wrong_note = (
        "the TorchScript exporter writes index_add as Add(x, ScatterElements(zeros, index, src)) with "
        "reduction none: with duplicate indices only the last update is added"
    )
    return s


def _index_put(exporter: str):
    import torch

    class M(torch.nn.Module):
        """Advanced-index assignment as users write it: x[rows, cols] = v (index_put_, unique
        positions) and x.index_put_((rows, cols), v, accumulate=True) (duplicates summed)."""

        def forward(self, x, rows, cols, values, acc_rows, acc_cols, acc_values):
            put = x.clone()
            put[rows, cols] = values
            acc = x.index_put((acc_rows, acc_cols), acc_values, accumulate=True)
            return put, acc

    rng = _seeded()
    x = torch.tensor(rng.standard_normal((4, 6)), dtype=torch.float32)
    flat = rng.permutation(24)[:5]
    acc_r = torch.tensor([0, 3, 0, 2, 3, 0], dtype=torch.int64)
    acc_c = torch.tensor(
        [1, 5, 1, 2, 5, 1], dtype=torch.int64
    )  # (0, 1) three times, (3, 5) twice
    feeds = {
        "x": x,
        "rows": torch.tensor(flat // 6, dtype=torch.int64),
        "cols": torch.tensor(flat % 6, dtype=torch.int64),
        "values": torch.tensor(rng.standard_normal(5), dtype=torch.float32),
        "acc_rows": acc_r,
        "acc_cols": acc_c,
        "acc_values": torch.tensor(rng.standard_normal(6), dtype=torch.float32),
    }
    suffix = "" if exporter == "dynamo" else "_torchscript"
    return Spec(
        f"index_put{suffix}",
        "advanced-index assignment: x[rows, cols] = v, and index_put_(accumulate=True) with duplicates",
        "torch.Tensor.index_put_ (x[rows, cols] = v; accumulate=True)",
        exporter,
        M(),
        feeds,
        ["put", "accumulated"],
        {
            "x": {0: "rows_x", 1: "cols_x"},
            "rows": {0: "n"},
            "cols": {0: "n"},
            "values": {0: "n"},
            "acc_rows": {0: "m"},
            "acc_cols": {0: "m"},
            "acc_values": {0: "m"},
        },
        rtol=1e-6,
        atol=1e-6,
        why_tolerance="float32 sums of duplicates in another order",
    )


@spec
def index_put():
    return _index_put("dynamo")


def _index_put_as_written(feeds):
    """What the TorchScript export of index_put_(accumulate=True) computes: x + a zeros tensor
    ScatterND'ed (reduction none) with the values — of duplicate positions only the last counts."""
    x, r, c, v = feeds["x"], feeds["acc_rows"], feeds["acc_cols"], feeds["acc_values"]
    put = x.copy()
    put[feeds["rows"], feeds["cols"]] = feeds["values"]
    z = np.zeros_like(x)
    for i in range(len(r)):
        z[r[i], c[i]] = v[i]
    return {"put": put, "accumulated": x + z}


@spec
def index_put_torchscript():
    s = _index_put("torchscript")
    s.wrong = _index_put_as_written
    s.wrong_note = (
        "the TorchScript exporter writes index_put_(accumulate=True) as Add(x, ScatterND(zeros, "
        "indices, values)) with reduction none: with duplicate positions only the last value is added"
    )
    return s


def _scatter_module(reduce_add: bool):
    import torch

    class M(torch.nn.Module):
        """scatter_ as users write it: a one-hot of labels (scatter_ of a scalar), a permutation
        (plain scatter_, unique indices per row) and a histogram (scatter_(reduce='add'), or
        scatter_add_ where the exporter has no translation for the former)."""

        def forward(self, labels, perm, src, bins):
            one_hot = torch.zeros(labels.shape[0], 6).scatter_(1, labels[:, None], 1.0)
            permuted = torch.zeros_like(src).scatter_(1, perm, src)
            if reduce_add:
                hist = torch.zeros(src.shape[0], 6).scatter_(
                    1, bins, torch.ones_like(src), reduce="add"
                )
            else:
                hist = torch.zeros(src.shape[0], 6).scatter_add_(
                    1, bins, torch.ones_like(src)
                )
            return one_hot, permuted, hist

    rng = _seeded()
    labels = torch.tensor(rng.integers(0, 6, 4), dtype=torch.int64)
    perm = torch.tensor(
        np.stack([rng.permutation(5) for _ in range(4)]), dtype=torch.int64
    )
    src = torch.tensor(rng.standard_normal((4, 5)), dtype=torch.float32)
    bins = torch.tensor(rng.integers(0, 6, (4, 5)), dtype=torch.int64)
    return M(), {"labels": labels, "perm": perm, "src": src, "bins": bins}


@spec
def scatter_():
    m, feeds = _scatter_module(reduce_add=False)
    return Spec(
        "scatter_",
        "Tensor.scatter_: one-hot, permutation; scatter_add_ histogram (the dynamo exporter "
        "has no translation for aten.scatter.reduce, i.e. scatter_(reduce='add'))",
        "torch.Tensor.scatter_(dim=1) (value, src), scatter_add_",
        "dynamo",
        m,
        feeds,
        ["one_hot", "permuted", "hist"],
        {
            "labels": {0: "batch"},
            "perm": {0: "batch", 1: "width"},
            "src": {0: "batch", 1: "width"},
            "bins": {0: "batch", 1: "width"},
        },
        why_tolerance="copied values and sums of ones: exact",
    )


@spec
def scatter_torchscript():
    s = scatter_()
    s.name, s.exporter = "scatter_torchscript", "torchscript"
    s.title = (
        "Tensor.scatter_: one-hot, permutation; scatter_add_ histogram (the TorchScript exporter fails "
        "on scatter_(reduce='add') too: 'A mismatch between the number of arguments (5) and their "
        "descriptors (4)' in its symbolic function 'scatter')"
    )
    return s


# ------------------------------------------------------------------------------------------
# scans: cumprod (DOMAIN), reversed cumsum, masked running mean
# ------------------------------------------------------------------------------------------
@spec
def survival_cumprod():
    import torch

    class M(torch.nn.Module):
        """Discrete-time survival curve (as in pycox' LogisticHazard): S(t) = prod_{s<=t} (1 - h_s)."""

        def forward(self, hazard_logits):
            return torch.cumprod(1 - torch.sigmoid(hazard_logits), dim=1)

    rng = _seeded()
    logits = torch.tensor(rng.standard_normal((3, 12)) - 1.5, dtype=torch.float32)
    return Spec(
        "survival_cumprod",
        "discrete-time survival curve: cumprod of 1 - hazard (DOMAIN::CumProd)",
        "torch.cumprod (custom_translation_table -> io.github.ortdmlops::CumProd)",
        "dynamo",
        M(),
        {"hazard_logits": logits},
        ["survival"],
        {"hazard_logits": {0: "batch", 1: "time"}},
        rtol=1e-6,
        atol=1e-7,
        why_tolerance="float32 products in another order",
        cumprod=True,
    )


@spec
def ddpm_alphas_cumprod_torchscript():
    import torch

    class M(torch.nn.Module):
        """DDPM forward noising q(x_t | x_0) (as in diffusers' DDPMScheduler.add_noise):
        alphas_cumprod = cumprod(1 - betas), x_t = sqrt(a_t) x_0 + sqrt(1 - a_t) noise."""

        def forward(self, betas, x0, noise, t):
            alphas_cumprod = torch.cumprod(1.0 - betas, dim=0)
            a = alphas_cumprod[t][:, None]
            return alphas_cumprod, a.sqrt() * x0 + (1 - a).sqrt() * noise

    rng = _seeded()
    betas = torch.linspace(1e-4, 0.02, 50)
    x0 = torch.tensor(rng.standard_normal((3, 4)), dtype=torch.float32)
    noise = torch.tensor(rng.standard_normal((3, 4)), dtype=torch.float32)
    t = torch.tensor([0, 17, 49], dtype=torch.int64)
    return Spec(
        "ddpm_alphas_cumprod_torchscript",
        "DDPM add_noise: alphas_cumprod = cumprod(1 - betas) (DOMAIN::CumProd)",
        "torch.cumprod (register_custom_op_symbolic -> io.github.ortdmlops::CumProd)",
        "torchscript",
        M(),
        {"betas": betas, "x0": x0, "noise": noise, "t": t},
        ["alphas_cumprod", "x_t"],
        {
            "betas": {0: "steps"},
            "x0": {0: "batch"},
            "noise": {0: "batch"},
            "t": {0: "batch"},
        },
        rtol=1e-6,
        atol=1e-7,
        why_tolerance="float32 products in another order",
        cumprod=True,
    )


def _discounted(exporter: str):
    import torch

    class M(torch.nn.Module):
        """Discounted returns G_t = sum_{k>=t} gamma^(k-t) r_k as a reversed cumsum (flip, cumsum,
        flip), the usual vectorised form in RL code."""

        def forward(self, rewards):
            t = torch.arange(rewards.shape[1], dtype=rewards.dtype)
            scale = 0.9**t
            return (
                torch.flip(torch.cumsum(torch.flip(rewards * scale, [1]), 1), [1])
                / scale
            )

    rng = _seeded()
    rewards = torch.tensor(rng.standard_normal((2, 10)), dtype=torch.float32)
    suffix = "" if exporter == "dynamo" else "_torchscript"
    return Spec(
        f"discounted_returns{suffix}",
        "discounted returns: reversed cumsum through flip",
        "torch.flip + torch.cumsum",
        exporter,
        M(),
        {"rewards": rewards},
        ["returns"],
        {"rewards": {0: "batch", 1: "time"}},
        rtol=1e-5,
        atol=1e-6,
        why_tolerance="float32 sums in another order, divided by gamma^t",
    )


@spec
def discounted_returns():
    return _discounted("dynamo")


@spec
def discounted_returns_torchscript():
    return _discounted("torchscript")


@spec
def masked_running_mean():
    import torch

    class M(torch.nn.Module):
        """Running mean over the valid (unpadded) tokens: cumsum(x * mask) / cumsum(mask)."""

        def forward(self, x, mask):
            m = mask.to(x.dtype)[..., None]
            return torch.cumsum(x * m, 1) / torch.cumsum(m, 1).clamp(min=1)

    rng = _seeded()
    x = torch.tensor(rng.standard_normal((2, 7, 3)), dtype=torch.float32)
    mask = torch.tensor(
        [[1, 1, 1, 1, 0, 0, 0], [0, 1, 1, 0, 1, 1, 1]], dtype=torch.bool
    )
    return Spec(
        "masked_running_mean",
        "running mean over unpadded tokens: cumsum of masked values / cumsum of the mask",
        "torch.cumsum",
        "dynamo",
        M(),
        {"x": x, "mask": mask},
        ["running_mean"],
        {"x": {0: "batch", 1: "sequence"}, "mask": {0: "batch", 1: "sequence"}},
        rtol=1e-5,
        atol=1e-6,
        why_tolerance="float32 sums in another order",
    )


# ------------------------------------------------------------------------------------------
# exporting
# ------------------------------------------------------------------------------------------
def _cumprod_translation():
    """aten::cumprod -> DOMAIN::CumProd(x, axis) for the dynamo exporter (onnxscript traced)."""
    import onnxscript

    op = onnxscript.opset18
    domain = onnxscript.values.Opset(DOMAIN, DOMAIN_VERSION)

    def cumprod(self, dim: int, dtype: int = -1):
        return domain.CumProd(self, op.Constant(value_int=dim))

    import torch

    return {torch.ops.aten.cumprod.default: cumprod}


def _register_torchscript_cumprod():
    import torch
    from torch.onnx import symbolic_helper

    def cumprod(g, self, dim, dtype):
        axis = g.op(
            "Constant",
            value_t=torch.tensor(
                symbolic_helper._get_const(dim, "i", "dim"), dtype=torch.int64
            ),
        )
        out = g.op(f"{DOMAIN}::CumProd", self, axis)
        out.setType(self.type())
        return out

    torch.onnx.register_custom_op_symbolic("aten::cumprod", cumprod, 9)


def export(s: Spec) -> onnx.ModelProto:
    import torch

    args = tuple(s.inputs.values())
    names = list(s.inputs)
    s.module.eval()
    if s.exporter == "dynamo":
        dims: dict[str, Any] = {}
        shapes = {
            n: (
                {
                    a: dims.setdefault(d, torch.export.Dim(d, min=2))
                    for a, d in s.dynamic[n].items()
                }
                if n in s.dynamic
                else None
            )
            for n in names
        }
        with registered():  # onnxscript looks the DOMAIN op's schema up
            prog = torch.onnx.export(
                s.module,
                args,
                dynamo=True,
                input_names=names,
                output_names=s.outputs,
                dynamic_shapes=shapes,
                verbose=False,
                custom_translation_table=_cumprod_translation() if s.cumprod else None,
                opset_version=s.opset,
            )
        model = prog.model_proto
    else:
        if s.cumprod:
            _register_torchscript_cumprod()
        buf = io.BytesIO()
        torch.onnx.export(
            s.module,
            args,
            buf,
            dynamo=False,
            input_names=names,
            output_names=s.outputs,
            dynamic_axes={n: dict(d) for n, d in s.dynamic.items()},
            custom_opsets={DOMAIN: DOMAIN_VERSION} if s.cumprod else None,
            **({"opset_version": s.opset} if s.opset else {}),
        )
        model = onnx.load_model_from_string(buf.getvalue())
    _drop_metadata(model)
    return model


def _drop_metadata(model: onnx.ModelProto) -> None:
    """Drop node/value metadata and doc strings: the exporter's stack traces hold file paths."""

    def graph(g):
        del g.metadata_props[:]
        g.doc_string = ""
        for v in list(g.input) + list(g.output) + list(g.value_info):
            del v.metadata_props[:]
            v.doc_string = ""
        for t in g.initializer:
            del t.metadata_props[:]
        for n in g.node:
            del n.metadata_props[:]
            n.doc_string = ""
            for a in n.attribute:
                if a.type == onnx.AttributeProto.GRAPH:
                    graph(a.g)
                for sub in a.graphs:
                    graph(sub)

    graph(model.graph)
    for f in model.functions:
        del f.metadata_props[:]
        for n in f.node:
            del n.metadata_props[:]
            n.doc_string = ""
    del model.metadata_props[:]
    model.doc_string = ""


def _torch_outputs(s: Spec) -> list[np.ndarray]:
    import torch

    # eval(): the TorchScript exporter restores the wrapper's training mode after export, and
    # module.train() is recursive, so dropout would be on again here without it
    s.module.eval()
    with torch.no_grad():
        got = s.module(*[t.clone() for t in s.inputs.values()])
    got = got if isinstance(got, (tuple, list)) else (got,)
    return [t.numpy() for t in got]


def _family_nodes(model: onnx.ModelProto) -> list[dict]:
    """Each CumSum/CumProd/Scatter* node with its inputs' inferred shapes (int, dim name, or
    null where shape inference cannot tell: a data-dependent size)."""
    with registered():
        inferred = onnx.shape_inference.infer_shapes(model, data_prop=True)
    shapes = {}
    for v in (
        list(inferred.graph.input)
        + list(inferred.graph.value_info)
        + list(inferred.graph.output)
    ):
        t = v.type.tensor_type
        if t.HasField("shape"):
            shapes[v.name] = [
                d.dim_value if d.HasField("dim_value") else (d.dim_param or None)
                for d in t.shape.dim
            ]
        else:
            shapes[v.name] = None
    for t in inferred.graph.initializer:
        shapes[t.name] = list(t.dims)
    found = []

    def walk(g, where):
        for n in g.node:
            if n.op_type in FAMILY_OPS:
                attrs = {
                    a.name: onnx.helper.get_attribute_value(a) for a in n.attribute
                }
                attrs = {
                    k: (v.decode() if isinstance(v, bytes) else v)
                    for k, v in attrs.items()
                }
                found.append(
                    {
                        "name": n.name,
                        "op_type": n.op_type,
                        "domain": n.domain,
                        "graph": where,
                        "attributes": attrs,
                        "input_shapes": [shapes.get(i) if i else None for i in n.input],
                    }
                )
            for a in n.attribute:
                if a.type == onnx.AttributeProto.GRAPH:
                    walk(a.g, f"{where}/{n.name}.{a.name}")

    walk(inferred.graph, "main")
    return found


def _static(shape) -> bool:
    return shape is not None and all(isinstance(d, int) for d in shape)


def _ort_outputs(model: onnx.ModelProto, feeds: dict) -> dict:
    from ort_dml_ops.session import InferenceSession

    sess = InferenceSession(
        model.SerializeToString(), providers=["CPUExecutionProvider"]
    )
    names = [o.name for o in sess.get_outputs()]
    return dict(zip(names, sess.run(None, feeds)))


def _reference_outputs(model: onnx.ModelProto, feeds: dict) -> dict:
    """onnx's ReferenceEvaluator: the check where ONNX Runtime's CPU EP has no kernel."""
    from onnx.reference import ReferenceEvaluator

    names = [o.name for o in model.graph.output]
    return dict(zip(names, ReferenceEvaluator(model).run(None, feeds)))


def _close(got, want, rtol, atol) -> bool:
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape or got.dtype != want.dtype:
        return False
    if rtol == 0 and atol == 0:
        return bool(np.array_equal(got, want, equal_nan=True))
    return bool(
        np.allclose(
            got.astype(np.float64),
            want.astype(np.float64),
            rtol=rtol,
            atol=atol,
            equal_nan=True,
        )
    )


def _versions(libs) -> dict:
    import importlib.metadata as md

    names = {
        "torch": "torch",
        "torch_geometric": "torch_geometric",
        "transformers": "transformers",
    }
    out = {lib: md.version(names[lib]) for lib in libs}
    out["onnxscript"] = md.version("onnxscript")
    out["onnx"] = md.version("onnx")
    return out


def build(s: Spec) -> tuple[dict, dict[str, bytes]]:
    """Export one spec; return its index entry and its files' bytes."""
    model = export(s)
    written_ir = model.ir_version
    model.ir_version = min(model.ir_version, MAX_IR_VERSION)
    with registered():
        onnx.checker.check_model(model, full_check=True)
    graph_inputs = [i.name for i in model.graph.input]
    feeds = {n: s.inputs[n].numpy() for n in graph_inputs}
    out_names = [o.name for o in model.graph.output]
    torch_out = _torch_outputs(s)
    if len(torch_out) != len(out_names):
        raise RuntimeError(
            f"{s.name}: torch returns {len(torch_out)} outputs, the model {len(out_names)}"
        )
    expected = dict(zip(out_names, torch_out))
    if s.ort_cpu_error is None:
        ort_out = _ort_outputs(model, feeds)
    else:
        try:
            _ort_outputs(model, feeds)
        except Exception as exc:  # any ORT failure: its text is checked
            if s.ort_cpu_error not in str(exc):
                raise
        else:
            raise RuntimeError(
                f"{s.name}: ONNX Runtime's CPU EP now runs it: drop ort_cpu_error="
            )
        ort_out = _reference_outputs(model, feeds)
    agree = all(_close(ort_out[k], expected[k], s.rtol, s.atol) for k in out_names)
    entry_wrong = None
    if s.wrong is None and not agree:
        bad = [
            k for k in out_names if not _close(ort_out[k], expected[k], s.rtol, s.atol)
        ]
        raise RuntimeError(
            f"{s.name}: ONNX Runtime's outputs {bad} differ from torch's and no wrong= explains it"
        )
    if s.wrong is not None:
        if agree:
            raise RuntimeError(
                f"{s.name}: marked wrong but ONNX Runtime reproduces torch: drop wrong="
            )
        computes = s.wrong(feeds)
        bad = [
            k for k in computes if not _close(ort_out[k], computes[k], s.rtol, s.atol)
        ]
        if bad:
            raise RuntimeError(
                f"{s.name}: the written model's {bad} differ from the wrong= computation too"
            )
        entry_wrong = {
            "note": s.wrong_note,
            "outputs": sorted(computes),
            "file": "exporter_output.npz",
        }
    opsets = {(o.domain or "ai.onnx"): o.version for o in model.opset_import}
    fam = _family_nodes(model)
    entry = {
        "name": s.name,
        "title": s.title,
        "source": s.source,
        "exporter": s.exporter,
        "opset": opsets.get("ai.onnx"),
        "opset_imports": opsets,
        "ir_version": model.ir_version,
        "ir_version_written": written_ir,
        "inputs": {
            n: {
                "dtype": str(feeds[n].dtype),
                "shape": list(feeds[n].shape),
                "dynamic_axes": {str(a): d for a, d in s.dynamic.get(n, {}).items()},
            }
            for n in graph_inputs
        },
        "outputs": {
            n: {"dtype": str(expected[n].dtype), "shape": list(expected[n].shape)}
            for n in out_names
        },
        "families": {
            op: sum(1 for f in fam if f["op_type"] == op)
            for op in FAMILY_OPS
            if any(f["op_type"] == op for f in fam)
        },
        "family_nodes": fam,
        "static_family_shapes": all(
            all(_static(sh) for sh in f["input_shapes"] if sh is not None)
            and None not in f["input_shapes"]
            for f in fam
        ),
        "data_dependent": s.data_dependent,
        "tolerance": {"rtol": s.rtol, "atol": s.atol, "why": s.why_tolerance},
        "exporter_wrong": entry_wrong,
        "ort_cpu_error": s.ort_cpu_error,
        "checked_with": "onnxruntime CPU EP"
        if s.ort_cpu_error is None
        else "onnx.reference.ReferenceEvaluator",
        "versions": _versions(s.libraries),
    }
    files = {
        "model.onnx": model.SerializeToString(deterministic=True),
        "inputs.npz": _npz(feeds),
        "expected.npz": _npz(expected),
    }
    if entry_wrong is not None:
        files["exporter_output.npz"] = _npz(computes)
    return entry, files


def _npz(arrays: dict) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for key, value in arrays.items():
            info = zipfile.ZipInfo(f"{key}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            arr = io.BytesIO()
            np.lib.format.write_array(
                arr, np.ascontiguousarray(value), allow_pickle=False
            )
            zf.writestr(info, arr.getvalue())
    return buf.getvalue()


def _quiet() -> None:
    warnings.filterwarnings("ignore")
    # onnx.reference (imported by onnxscript's optimizer) indexes every schema by name once at
    # import; import it before the DOMAIN schemas (a second CumProd) are ever registered
    import onnx.reference  # noqa: F401
    import torch.onnx._internal.exporter._core  # noqa: F401

    logging.getLogger("torch").setLevel(logging.ERROR)
    os.environ.setdefault("ORT_LOGGING_LEVEL", "3")
    import onnxruntime

    onnxruntime.set_default_logger_severity(3)


def _write_atomic(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--check",
        action="store_true",
        help="export in memory; fail if any stored byte differs",
    )
    ap.add_argument(
        "--only",
        action="append",
        default=[],
        help="export only this model (repeatable)",
    )
    args = ap.parse_args(argv)
    _quiet()
    specs = [fn() for fn in SPECS]
    known = {s.name for s in specs}
    unknown = [n for n in args.only if n not in known]
    if unknown:
        print(f"export_models: unknown model(s): {', '.join(unknown)}", file=sys.stderr)
        return 2
    index_path = OUT / "index.json"
    old = json.loads(index_path.read_text())["models"] if index_path.exists() else []
    entries = {m["name"]: m for m in old}
    differ = []
    for s in specs:
        if args.only and s.name not in args.only:
            continue
        entry, files = build(s)
        print(
            f"{s.name}: {s.exporter}, opset {entry['opset']}, IR {entry['ir_version']}, "
            f"families {entry['families']}, {len(files['model.onnx'])} bytes"
            + (" (exporter wrong)" if entry["exporter_wrong"] else "")
        )
        for fname, data in files.items():
            path = OUT / s.name / fname
            if args.check:
                if not path.exists() or path.read_bytes() != data:
                    differ.append(str(path.relative_to(ROOT)))
            else:
                _write_atomic(path, data)
        if args.check and entries.get(s.name) != json.loads(json.dumps(entry)):
            differ.append(f"index.json entry {s.name}")
        entries[s.name] = entry
    order = [s.name for s in specs]
    index = {
        "about": "real exports from public library code; see docs/real-models.md. "
        "Rebuild: .venv-export/bin/python tools/export_models.py",
        "models": [entries[n] for n in order if n in entries],
    }
    text = json.dumps(index, indent=1) + "\n"
    if args.check:
        if differ:
            print(
                "export_models --check: differs from the stored corpus: "
                + ", ".join(differ),
                file=sys.stderr,
            )
            return 1
        print("export_models --check: every stored byte reproduced")
        return 0
    _write_atomic(index_path, text.encode())
    return 0


if __name__ == "__main__":
    sys.exit(main())
