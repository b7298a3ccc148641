#!/usr/bin/env python3
"""Export the placement fixtures of tests/data/placement: a tiny random-weight XLM-R (transformers'
XLMRobertaModel, 2 layers, hidden 8) by torch.onnx, TorchScript (opset 17) and dynamo (opset 18).

    pip install torch transformers onnxscript    # a separate venv: never a dependency of the package
    python tools/export_placement_fixtures.py tests/data/placement

Only the dynamo model's per-node metadata (source stack traces, ~200 KB) is dropped; the graph is
torch's. Then record the truth on the DML lane (tools/record_placement.py; see
tests/test_placement_recorded.py).
"""

import sys

import numpy as np
import onnx
import torch
from transformers import XLMRobertaConfig, XLMRobertaModel


class LastHiddenState(torch.nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids, attention_mask):
        return self.model(
            input_ids=input_ids, attention_mask=attention_mask, use_cache=False
        ).last_hidden_state


def main(out: str) -> None:
    torch.manual_seed(0)
    cfg = XLMRobertaConfig(
        vocab_size=64,
        hidden_size=8,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=16,
        max_position_embeddings=32,
        attn_implementation="eager",
    )
    m = LastHiddenState(XLMRobertaModel(cfg).eval()).eval()
    ids = torch.randint(3, 64, (2, 7))
    mask = torch.ones(2, 7, dtype=torch.int64)
    mask[1, 5:] = 0
    names = {
        "input_names": ["input_ids", "attention_mask"],
        "output_names": ["last_hidden_state"],
    }
    torch.onnx.export(
        m,
        (ids, mask),
        f"{out}/xlmr_torchscript.onnx",
        dynamo=False,
        opset_version=17,
        dynamic_axes={
            "input_ids": {0: "batch", 1: "seq"},
            "attention_mask": {0: "batch", 1: "seq"},
        },
        **names,
    )
    dim = {0: torch.export.Dim("batch"), 1: torch.export.Dim("seq")}
    prog = torch.onnx.export(
        m,
        (ids, mask),
        dynamo=True,
        opset_version=18,
        dynamic_shapes=(dim, dim),
        **names,
    )
    prog.save(f"{out}/xlmr_dynamo.onnx", external_data=False)
    model = onnx.load(f"{out}/xlmr_dynamo.onnx")
    for n in model.graph.node:
        del n.metadata_props[:]
    for v in list(model.graph.value_info) + list(model.graph.initializer):
        del v.metadata_props[:]
    onnx.save(model, f"{out}/xlmr_dynamo.onnx")
    for f in ("xlmr_torchscript", "xlmr_dynamo"):
        onnx.checker.check_model(onnx.load(f"{out}/{f}.onnx"), full_check=True)
    np.savez(
        f"{out}/xlmr_inputs.npz", input_ids=ids.numpy(), attention_mask=mask.numpy()
    )


if __name__ == "__main__":
    main(sys.argv[1])
