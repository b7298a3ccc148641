"""Bring the model's ai.onnx opset to one the target serves (rules/opset.py), or say why not."""

from __future__ import annotations

import onnx_ir as ir
import onnx_ir.passes

from ..rules import opset as opset_rule
from .state import ConvertState


class OpsetPass(onnx_ir.passes.InPlacePass):
    """DML: ai.onnx 22–26 -> 21, or (auto) 18–26 -> 17 for a scatter without a reduction, when
    every node means the same there; report: `state.opset`."""

    def __init__(self, state: ConvertState):
        super().__init__()
        self.state = state

    def call(self, model: ir.Model) -> onnx_ir.passes.PassResult:
        s = self.state
        s.opset = opset_rule.plan(model, s.target, s.strategy, s.light)
        if s.opset["changed"]:
            s.light = None
        return onnx_ir.passes.PassResult(model, modified=bool(s.opset["changed"]))
