"""Collect every node and value name in use, so that the rules' new names avoid them."""

from __future__ import annotations

import onnx_ir as ir
import onnx_ir.passes

from .._common import all_names
from .state import ConvertState


class CollectNamesPass(onnx_ir.passes.InPlacePass):
    """An analysis: `state.names` (after the If folding, before the rewrites); changes nothing."""

    def __init__(self, state: ConvertState):
        super().__init__()
        self.state = state

    def call(self, model: ir.Model) -> onnx_ir.passes.PassResult:
        self.state.names = all_names(model)
        self.state.names_before = frozenset(self.state.names)
        return onnx_ir.passes.PassResult(model, modified=False)
