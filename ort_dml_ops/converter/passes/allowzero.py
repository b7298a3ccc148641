"""DML: drop Reshape(allowzero=1) where it changes nothing (the DML EP fails kernel creation on
it); see rules/reshape_allowzero.py. Report: `normalized`."""

from __future__ import annotations

import onnx_ir as ir
import onnx_ir.passes

from .._common import walk_graphs
from ..rules.reshape_allowzero import drop_allowzero
from .state import ConvertState


class DropAllowzeroPass(onnx_ir.passes.InPlacePass):
    """DML only, strategies other than native; each fix is a line of `state.normalized`."""

    def __init__(self, state: ConvertState):
        super().__init__()
        self.state = state

    def call(self, model: ir.Model) -> onnx_ir.passes.PassResult:
        s = self.state
        if s.target != "dml" or s.strategy == "native":
            return onnx_ir.passes.PassResult(model, modified=False)
        fixed = drop_allowzero(
            walk_graphs(model, model.opset_imports.get("", 0)), s.names
        )
        s.normalized.extend(fixed)
        return onnx_ir.passes.PassResult(model, modified=bool(fixed))
