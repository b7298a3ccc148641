"""Fold the main-graph If nodes the declared shapes decide (rules/fold_if.py); report:
`state.normalized` (through `state.folds.notes`). Not for strategy native."""

from __future__ import annotations

import onnx_ir as ir
import onnx_ir.passes

from ..rules.fold_if import fold_static_ifs
from .shapes import infer_shapes
from .state import ConvertState


class FoldStaticIfsPass(onnx_ir.passes.InPlacePass):
    """Inline the taken branch of each If whose condition is a constant of the declared shapes."""

    def __init__(self, state: ConvertState):
        super().__init__()
        self.state = state

    def call(self, model: ir.Model) -> onnx_ir.passes.PassResult:
        if self.state.strategy == "native":
            return onnx_ir.passes.PassResult(model, modified=False)
        self.state.folds = fold_static_ifs(model, infer_shapes)
        return onnx_ir.passes.PassResult(model, modified=bool(self.state.folds.notes))
