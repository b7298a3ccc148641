"""Import the project's domain exactly where a node of it remains (and drop it elsewhere)."""

from __future__ import annotations

import onnx_ir as ir
import onnx_ir.passes

from ..._domain import DOMAIN, DOMAIN_VERSION
from .._common import walk_graphs


class FixDomainImportPass(onnx_ir.passes.InPlacePass):
    """The model (and each function) imports the project's domain iff a node uses it."""

    def call(self, model: ir.Model) -> onnx_ir.passes.PassResult:
        before = dict(model.opset_imports)
        _fix_domain_import(model)
        return onnx_ir.passes.PassResult(
            model, modified=dict(model.opset_imports) != before
        )


def _fix_domain_import(model: ir.Model) -> None:
    used = any(n.domain == DOMAIN for g, _, _ in walk_graphs(model, 0) for n in g)
    if used:
        model.opset_imports.setdefault(DOMAIN, DOMAIN_VERSION)
    else:
        model.opset_imports.pop(DOMAIN, None)
    for func in model.functions.values():
        if any(n.domain == DOMAIN for n in func):
            func.opset_imports.setdefault(DOMAIN, DOMAIN_VERSION)
