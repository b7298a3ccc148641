"""ort-dml-ops inside the graph tools users already chain: an onnx-ir pass and an onnxscript
rewrite-rule view.

    import onnx_ir as ir
    from ort_dml_ops.passes import ConvertPass
    pm = ir.passes.PassManager([ConvertPass(target="dml", strategy="auto"), ...])
    result = pm(model)                      # an ir.Model, converted in place

    from onnxscript import rewriter
    model = rewriter.rewrite(model, pattern_rewrite_rules=rewrite_rules(target="cpu"))

`ConvertPass` is `ort_dml_ops.convert` as an `onnx_ir.passes.InPlacePass` (onnx_ir/passes/
_pass_infra.py): the whole conversion (opset, shapes, every rule, validation). The onnxscript
view holds only the rules that are a local pattern rewrite in onnxscript's sense
(onnxscript/rewriter/_rewrite_rule.py: a matched subgraph replaced by another, no whole-model
step): the CumSum dtype cast (float64 / bfloat16 through float32, for EPs without those
kernels) and DOMAIN::CumProd -> ONNX CumProd-26 (same semantics; only in models importing
ai.onnx >= 26, where the CPU EP has the kernel). The lowerings (scans, scatters) need shape
planning, run-time index checks and the opset step, and stay in `convert` / `ConvertPass`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import onnx_ir as ir
from onnx_ir.passes import InPlacePass, PassResult

from .errors import UserError

if TYPE_CHECKING:
    from .converter.report import ConvertReport

__all__ = ["ConvertPass", "rewrite_rules"]


class ConvertPass(InPlacePass):
    """`ort_dml_ops.convert(model, target, strategy=...)` as an onnx-ir pass, in place.

    `self.report` holds the last run's ConvertReport (what was done to each node and why);
    `modified` is `report.changed`. Options are convert's (`check_indices`, `validate`,
    `with_inspect`, default False here: call `ort_dml_ops.inspect` on the result instead).
    """

    def __init__(self, target: str = "dml", strategy: str = "auto", **options) -> None:
        from .converter.pipeline import STRATEGIES, TARGETS

        if (
            target not in TARGETS or strategy not in STRATEGIES
        ):  # at construction, not mid-pipeline
            bad, choices = (
                (f"target {target!r}", TARGETS)
                if target not in TARGETS
                else (f"strategy {strategy!r}", STRATEGIES)
            )
            raise UserError(f"unknown {bad}; choose one of: {', '.join(choices)}")
        super().__init__()
        self.target, self.strategy = target, strategy
        self.options = {"with_inspect": False, **options}
        self.report: ConvertReport | None = None

    def call(self, model: ir.Model) -> PassResult:
        from .converter import convert_model

        report = convert_model(
            model, self.target, strategy=self.strategy, **self.options
        )
        self.report = report
        return PassResult(model, modified=report.changed)


def rewrite_rules(target: str = "dml"):
    """An onnxscript `RewriteRuleSet` of the rules that fit its pattern model, for `target`."""
    from ._rewrite_rules import rule_set

    return rule_set(target)
