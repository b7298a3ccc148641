"""What every rewrite rule shares: the rule interface, its outcome, and readers of a node's
attributes and constant inputs.

A rule looks at one node (`match`), decides whether it can rewrite it here (`check`, which
returns a `Refusal` — code and message — when it cannot) and emits replacement nodes
(`rewrite`, with an `emitter.Emitter`).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import onnx_ir as ir

from ..._domain import DOMAIN

#: Oldest ai.onnx opset the rules emit for (CumSum and ScatterElements start at 11).
MIN_OPSET = 11

#: ops that only relabel a tensor's shape: on the CPU EP their output aliases the input and a
#: GPU EP's are metadata, so no kernel worth a dispatch or a pass (kernel and pass counts leave
#: them out); ONNX Runtime's ReshapeFusion merges chains of them (the index guard reads around)
VIEW_OPS = ("Reshape", "Squeeze", "Unsqueeze", "Flatten", "Identity")

#: the floating-point element types: their zero has a sign, and their sums' identity is −0.0
FLOATS = (
    ir.DataType.FLOAT,
    ir.DataType.DOUBLE,
    ir.DataType.FLOAT16,
    ir.DataType.BFLOAT16,
)


def constant_of_shape_fill(node: ir.Node) -> np.ndarray:
    """A ConstantOfShape's fill value, 0-d, of its own type (ONNX: float32 0 without `value`)."""
    attr = node.attributes.get("value")
    if attr is None:
        return np.zeros((), np.float32)
    return np.asarray(attr.as_tensor().numpy()).reshape(())


@dataclasses.dataclass(frozen=True)
class Refusal:
    """Why a rule does not rewrite a node: a stable `code` for programs (the report JSON
    carries it) and a `message` for people (the report's reason text)."""

    #: kebab-case, stable across releases: rank-unknown, axis-not-constant,
    #: axis-out-of-range, dtype-unknown, dtype-unsupported,
    #: opset-too-old, no-cast-needed, no-runtime-kernel, missing-inputs, ...
    code: str
    message: str

    def __str__(self) -> str:
        return self.message

    def to_dict(self) -> dict:
        return {"code": self.code, "message": self.message}


@dataclasses.dataclass
class RewriteContext:
    """Everything a rule may consult besides the node itself."""

    opset: int  # ai.onnx opset of the graph (or function) holding the node
    target: str = "dml"
    names: set[str] = dataclasses.field(
        default_factory=set
    )  # every node and value name in use
    #: lowered scatters fail at run time on an out-of-range index (as ORT's kernel does)
    check_indices: bool = True
    #: per (domain, op_type, version): does the target EP run it natively (set by conversion)
    options: dict[str, Any] = dataclasses.field(default_factory=dict)
    graph: Any = (
        None  # the ir.Graph / ir.Function the node lives in (initializers go there)
    )
    anchor: Any = (
        None  # the node being rewritten (its replacement is inserted before it)
    )
    #: each node of `graph` to its position when the rewrites of the graph began (graph.index()
    #: walks the linked list: asking it per rewrite made convert quadratic along a chain)
    positions: dict[Any, int] = dataclasses.field(default_factory=dict)

    def precedes(self, node: ir.Node, anchor: ir.Node) -> bool:
        """Does `node` (in `graph`) run before `anchor`? Rewrites go in graph order and insert
        their nodes before the node they replace, so a node without a position (emitted for an
        earlier node) precedes every node still to be rewritten."""
        if not self.positions and self.graph is not None:
            self.positions = {n: i for i, n in enumerate(self.graph)}
        at = self.positions.get(anchor)
        if at is None:  # pragma: no cover - an anchor is always an original node
            return False
        pos = self.positions.get(node)
        return pos is None or pos < at

    #: per hint, the suffix `unique` last gave it: `names` only grows, so every smaller suffix
    #: is still taken and the search resumes there (share it wherever `names` is shared)
    suffixes: dict[str, int] = dataclasses.field(default_factory=dict)

    def unique(self, hint: str) -> str:
        hint = hint or "n"
        k = self.suffixes.get(hint, 0)
        name = f"{hint}_{k}" if k else hint
        while name in self.names:
            k += 1
            name = f"{hint}_{k}"
        self.names.add(name)
        self.suffixes[hint] = k
        return name


@dataclasses.dataclass
class Rewrite:
    """A rule's result: nodes to insert, and for each output of the old node its new value."""

    nodes: list[ir.Node]
    outputs: list[ir.Value]
    note: str = ""  # precision consequence or other detail for the report


class Rule:
    """Base class: subclasses set `name`, `targets` (op types) and implement check / rewrite."""

    name: str = "rule"
    #: (domain, op_type) pairs the rule applies to; domain "" is ai.onnx.
    ops: tuple[tuple[str, str], ...] = ()
    action: str = (
        "lowered"  # what the report calls it: lowered / cast / fallback / native
    )
    targets: tuple[str, ...] = ("dml", "cuda", "webgpu", "cpu")
    summary: str = ""  # one line for the report

    def applies_to(self, target: str) -> bool:
        return target in self.targets

    def describe(self) -> str:
        return f"{self.action} by rule {self.name}" + (
            f" ({self.summary})" if self.summary else ""
        )

    def match(self, node: ir.Node) -> bool:
        return (onnx_domain(node.domain), node.op_type) in self.ops

    def check(self, node: ir.Node, ctx: RewriteContext) -> Refusal | None:
        """None when the rule can rewrite `node`, else why it cannot."""
        return None

    def rewrite(
        self, node: ir.Node, ctx: RewriteContext
    ) -> Rewrite:  # pragma: no cover
        raise NotImplementedError


def onnx_domain(domain: str) -> str:
    """The domain as the rules' tables spell it: "" for ai.onnx however it is written."""
    return "" if domain in ("", "ai.onnx") else domain


def is_domain_op(node: ir.Node, op_type: str) -> bool:
    return node.domain == DOMAIN and node.op_type == op_type


def attr_int(node: ir.Node, name: str, default: int = 0) -> int:
    a = node.attributes.get(name)
    return default if a is None else int(a.value)


def attr_str(node: ir.Node, name: str, default: str = "") -> str:
    a = node.attributes.get(name)
    if a is None:
        return default
    v = a.value
    return v.decode() if isinstance(v, bytes) else str(v)


def const_tensor(value: ir.Value | None):
    """The value's constant tensor (initializer or Constant node's `value`), else None; its
    bytes are not read."""
    if value is None:
        return None
    t = value.const_value
    producer = value.producer()
    if (
        t is None
        and producer is not None
        and producer.op_type == "Constant"
        and onnx_domain(producer.domain) == ""
    ):
        attr = producer.attributes.get("value")
        if attr is not None:
            t = attr.value
    return t


def const_array(value: ir.Value | None) -> np.ndarray | None:
    """The value's constant content (initializer or Constant node output), else None."""
    t = const_tensor(value)
    if t is None:
        return None
    try:
        return t.numpy()
    except Exception:  # noqa: BLE001  # pragma: no cover - external data not loaded, etc.
        return None


def static_shape(value: ir.Value) -> list[int | None] | None:
    """Dims as ints (None where symbolic); None when even the rank is unknown."""
    if value.shape is None:
        return None
    return [d if isinstance(d, int) else None for d in value.shape]


def scan_operands(node: ir.Node) -> tuple[ir.Value, list[int | None], int, bool, bool]:
    """(x, its shape, the axis in [0, rank), exclusive, reverse) of a CumSum / CumProd node whose
    rule's `check` passed (a constant axis, a known rank)."""
    x = node.inputs[0]
    shape = static_shape(x) if x is not None else None
    axis_value = const_array(node.inputs[1])
    assert x is not None and shape is not None and axis_value is not None  # check()
    return (
        x,
        shape,
        int(axis_value.reshape(-1)[0]) % len(shape),
        bool(attr_int(node, "exclusive")),
        bool(attr_int(node, "reverse")),
    )


def dtype_of(value: ir.Value) -> ir.DataType | None:
    return value.dtype if value.type is not None else None
