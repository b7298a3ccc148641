"""After the rewrites: every node routed to the Python fallback has types its kernels take
(runnable.check_fallback_types refuses the model, naming the node, otherwise)."""

from __future__ import annotations

import onnx_ir as ir
import onnx_ir.passes

from ...runnable import check_fallback_types
from .._common import walk_graphs
from .state import ConvertState


class CheckFallbackTypesPass(onnx_ir.passes.InPlacePass):
    """An analysis: raises UserError naming a node the fallback cannot run; changes nothing."""

    def __init__(self, state: ConvertState):
        super().__init__()
        self.state = state

    def call(self, model: ir.Model) -> onnx_ir.passes.PassResult:
        check_fallback_types(
            model, self.state.target, walk_graphs(model, model.opset_imports.get("", 0))
        )
        return onnx_ir.passes.PassResult(model, modified=False)
