"""The convert report: one `NodeReport` per CumSum / CumProd / scatter node, and the whole."""

from __future__ import annotations

import dataclasses
from typing import Any


@dataclasses.dataclass
class NodeReport:
    name: str
    op_type: str
    domain: str
    graph: str
    action: str  # native / lowered / cast / cpu (ORT's CPU kernel, node untouched) / fallback / refused
    reason: str
    emitted: list[str] = dataclasses.field(default_factory=list)
    note: str = ""
    #: why the node was refused (action "refused"), as a stable code; "" otherwise
    code: str = ""
    #: each rule that matched but did not rewrite the node: {"rule", "code", "message"}
    refusals: list[dict] = dataclasses.field(default_factory=list)
    #: per option (native / lowered / cpu): passes, copies, bytes_moved (rules/cost.py)
    cost: dict = dataclasses.field(default_factory=dict)

    @property
    def rewritten(self) -> bool:
        """Was the node replaced? A node kept `native` may still have been (cumprod-onnx26:
        DOMAIN::CumProd -> ONNX CumProd), hence `emitted`."""
        return self.action not in ("native", "cpu") or bool(self.emitted)

    def to_dict(self) -> dict:
        # written out, not dataclasses.asdict (its recursion and deepcopy were 0.5 s of a
        # 10k-node convert); the nested lists and dicts are copies, as asdict made them
        return {
            "name": self.name,
            "op_type": self.op_type,
            "domain": self.domain,
            "graph": self.graph,
            "action": self.action,
            "reason": self.reason,
            "emitted": list(self.emitted),
            "note": self.note,
            "code": self.code,
            "refusals": [dict(r) for r in self.refusals],
            "cost": {k: dict(v) for k, v in self.cost.items()},
        }


@dataclasses.dataclass
class ConvertReport:
    target: str
    strategy: str
    nodes: list[NodeReport]
    opset: dict
    inspect: Any = None  # the inspect report of the converted model (has .to_dict())
    #: whole-graph fixes made before the rules (e.g. Reshape allowzero=1 for DML), one line each
    normalized: list[str] = dataclasses.field(default_factory=list)

    @property
    def changed(self) -> bool:
        """Did the conversion change the model (a node rewritten, a whole-graph fix, the opset)?"""
        return (
            bool(self.normalized)
            or any(n.rewritten for n in self.nodes)
            or self.opset.get("from") != self.opset.get("to")
        )

    def summary(self) -> dict:
        out: dict[str, int] = {}
        for n in self.nodes:
            out[n.action] = out.get(n.action, 0) + 1
        return out

    def to_dict(self) -> dict:
        d = {
            "target": self.target,
            "strategy": self.strategy,
            "opset": self.opset,
            "normalized": self.normalized,
            "summary": self.summary(),
            "nodes": [n.to_dict() for n in self.nodes],
        }
        if self.inspect is not None:
            d["inspect"] = (
                self.inspect.to_dict()
                if hasattr(self.inspect, "to_dict")
                else self.inspect
            )
        return d
