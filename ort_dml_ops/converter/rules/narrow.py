"""Exact dtype rules for the WebGPU plugin: a family node whose element type the plugin has no
kernel for runs as the plugin's int32 kernel between Casts, where int32 provably holds every
value the node reads and writes.

The plugin registers CumSum, ScatterElements and ScatterND for float, float16, int32 and uint32
only (targets/data/webgpu_0.4.0.json); real exports feed them bool masks (top-p / top-k
filtering), int64 position ids (`cumsum(mask)` in every transformers export) and int64 counts
(MoE routers). ORT's CPU EP then runs them, between copies. Exact spellings on int32:

- **bool, int8, uint8, int16, uint16 data, reduction none / max / min** (bool: none, the only
  one ORT's CPU kernel runs): every value is an int32 value, and so is the result (an element
  of the data or the updates); Cast both to int32, Cast the result back.
- **int64 data**: int64 tensors reach the family node through widening Casts (from bool or
  int32), constants, ConstantOfShape, and views and selections of those (Expand, Reshape,
  Slice, Gather, ...). `narrow` follows that chain to an int32 spelling of the same values and
  their range [lo, hi]. None / max / min are then exact. A sum is exact while its bound fits:
  for a scatter-add, max(|data|) + count(updates) * max(|updates|) <= 2^31 - 1; for a CumSum,
  length(axis) * max(|x|) <= 2^31 - 1. Where the sizes are static the bound is checked at
  convert time; otherwise it is a CPU-side flag computed from shapes, which joins the graph's
  run-time guard (scatter_guard.register: a failed run, never a wrapped sum). The WebGPU plugin
  casts int32 to int64 on the device, not int64 to int32, hence the chain is followed upward
  instead of casting the int64 input down.

Multiplication is left alone: a product's bound grows as a power of the count.
"""

from __future__ import annotations

import numpy as np
import onnx_ir as ir

from ._base import (
    Refusal,
    Rewrite,
    RewriteContext,
    Rule,
    attr_str,
    const_array,
    constant_of_shape_fill,
    static_shape,
)
from .emitter import Emitter
from .scatter_guard import register

INT32_MAX = 2**31 - 1
INT32_MIN = -(2**31)
SMALL = {
    ir.DataType.BOOL: (0, 1),
    ir.DataType.INT8: (-(2**7), 2**7 - 1),
    ir.DataType.UINT8: (0, 2**8 - 1),
    ir.DataType.INT16: (-(2**15), 2**15 - 1),
    ir.DataType.UINT16: (0, 2**16 - 1),
}
#: ops that move or select their input 0's elements without changing them
_SAME_VALUES = {
    "Identity",
    "Reshape",
    "Expand",
    "Squeeze",
    "Unsqueeze",
    "Flatten",
    "Transpose",
    "Slice",
    "Gather",
    "GatherElements",
    "Tile",
}
_DEPTH = 12


def value_range(v: ir.Value | None, depth: int = 0) -> tuple[int, int] | None:
    """Bounds every element of `v` provably lies in, or None."""
    if v is None or depth > _DEPTH or v.type is None:
        return None
    if v.dtype in SMALL:
        return SMALL[v.dtype]
    if v.dtype == ir.DataType.INT32:
        src = _source_range(v, depth)
        return src if src is not None else (INT32_MIN, INT32_MAX)
    if v.dtype == ir.DataType.INT64:
        return _source_range(v, depth)
    return None


def _source_range(v: ir.Value, depth: int) -> tuple[int, int] | None:
    arr = const_array(v)
    if arr is not None:
        if arr.size == 0 or arr.dtype.kind not in "iub":
            return None
        return int(arr.min()), int(arr.max())
    node = v.producer()
    if node is None or node.domain not in ("", "ai.onnx"):
        return None
    op = node.op_type
    if op == "Cast":
        return value_range(node.inputs[0], depth + 1)
    if op == "ConstantOfShape":
        value = _fill_value(node)
        return value, value
    if op in _SAME_VALUES:
        return value_range(node.inputs[0], depth + 1)
    if op in ("Where", "Concat"):
        parts = node.inputs[1:] if op == "Where" else node.inputs
        ranges = [value_range(p, depth + 1) for p in parts]
        if not ranges or any(r is None for r in ranges):
            return None
        return min(r[0] for r in ranges if r), max(r[1] for r in ranges if r)
    return None


def _fill_value(node: ir.Node) -> int:
    """A ConstantOfShape's fill value, as an int (the caller checked its type is an integer)."""
    return int(constant_of_shape_fill(node))


def narrow(e: Emitter, v: ir.Value, depth: int = 0) -> ir.Value | None:
    """An int32 value with `v`'s elements (its range fits int32: the caller checked
    `value_range`), spelled on narrow sources, or None."""
    if depth > _DEPTH or v.type is None:
        return None
    if v.dtype == ir.DataType.INT32:
        return v
    if v.dtype in SMALL:
        return e.cast(v, ir.DataType.INT32)
    if v.dtype != ir.DataType.INT64:
        return None
    arr = const_array(v)
    if arr is not None:
        return e.const(arr.astype(np.int32))
    node = v.producer()
    if node is None or node.domain not in ("", "ai.onnx"):
        return None
    op = node.op_type
    if op == "Cast":
        source = node.inputs[0]
        return None if source is None else narrow(e, source, depth + 1)
    if op == "ConstantOfShape":
        value = _fill_value(node)
        return e.op(
            "ConstantOfShape",
            node.inputs[0],
            value=ir.tensor(np.array([value], np.int32)),
            dtype=ir.DataType.INT32,
        )
    if op in _SAME_VALUES or op in ("Where", "Concat"):
        data = list(node.inputs)
        # the inputs holding the values: Where's two branches, each of Concat's, else input 0
        which = {"Where": [1, 2], "Concat": range(len(data))}.get(op, [0])
        for k in which:
            d = data[k]
            n = None if d is None else narrow(e, d, depth + 1)
            if n is None:
                return None
            data[k] = n
        attrs = {k: a.value for k, a in node.attributes.items()}
        return e.op(op, *data, dtype=ir.DataType.INT32, **attrs)
    return None


class NarrowToInt32(Rule):
    """Cast -> the plugin's int32 kernel -> Cast, where int32 holds every value (module docstring)."""

    name = "int32-narrow"
    ops = (("", "CumSum"), ("", "ScatterElements"), ("", "ScatterND"), ("", "Scatter"))
    action = "cast"
    targets = ("webgpu",)
    summary = "the plugin's int32 kernel between Casts, exact"

    def check(self, node: ir.Node, ctx: RewriteContext) -> Refusal | None:
        data = node.inputs[0]
        if data is None or data.type is None:
            return Refusal("dtype-unknown", "the data element type is unknown")
        reduction = attr_str(node, "reduction", "none")
        scatter = node.op_type != "CumSum"
        if data.dtype == ir.DataType.BOOL and reduction != "none":
            # ORT's CPU kernel refuses bool max / min / add / mul (scatter_elements.cc): no
            # reference to be exact against
            return Refusal("dtype-unsupported", f"bool {reduction}: ORT runs none only")
        if data.dtype in SMALL and scatter and reduction in ("none", "max", "min"):
            return None
        if data.dtype in SMALL:
            return Refusal(
                "dtype-unsupported",
                f"{data.dtype.name} {reduction} may wrap in {data.dtype.name}: no exact int32 spelling",
            )
        if data.dtype != ir.DataType.INT64:
            name = data.dtype.name if data.dtype is not None else "unknown"
            return Refusal("no-cast-needed", f"{name} data is not narrowed")
        if scatter and reduction == "mul":
            return Refusal("dtype-unsupported", "an int64 product has no int32 bound")
        values = [data] if not scatter else [data, node.inputs[2]]
        ranges = [value_range(v) for v in values]
        if any(r is None for r in ranges):
            return Refusal(
                "range-unknown",
                "int64 input not provably within int32 (no widening Cast, constant or "
                "ConstantOfShape behind it)",
            )
        if any(r[0] < INT32_MIN or r[1] > INT32_MAX for r in ranges if r):
            return Refusal("range-too-wide", "int64 values outside int32")
        if _sums(node) and _per_element(node, ranges) > INT32_MAX - _base(node, ranges):
            return Refusal(
                "range-too-wide", "one element's values already reach int32's bound"
            )
        if _static_overflow(node, ranges):
            return Refusal(
                "sum-may-overflow", "the sum's bound exceeds int32 at the static sizes"
            )
        return None

    def rewrite(self, node: ir.Node, ctx: RewriteContext) -> Rewrite:
        e = Emitter(ctx, node.name or node.op_type)
        data = node.inputs[0]
        assert data is not None and data.dtype is not None  # check() passed
        source = data.dtype
        attrs = {k: a.value for k, a in node.attributes.items()}
        inputs = list(node.inputs)
        slots = [0] if node.op_type == "CumSum" else [0, 2]
        for k in slots:
            v = inputs[k]
            assert v is not None
            narrowed = (
                narrow(e, v)
                if source == ir.DataType.INT64
                else e.cast(v, ir.DataType.INT32)
            )
            assert narrowed is not None  # check() found the chain
            inputs[k] = narrowed
        y = e.op(node.op_type, *inputs, dtype=ir.DataType.INT32, **attrs)
        flag = None
        if source == ir.DataType.INT64 and _sums(node):
            ranges = [value_range(node.inputs[k]) for k in slots]
            flag = _bound_flag(e, node, ranges, inputs)
            register(e, host=flag)
        note = (
            "int64 computed in int32: exact, a sum's bound checked"
            + (
                " at run time (the graph's guard)"
                if flag is not None
                else " at convert time"
            )
            if source == ir.DataType.INT64
            else f"{source.name} computed in int32: exact"
        )
        return e.done([e.cast(y, source)], note, keep=[flag])


def _sums(node: ir.Node) -> bool:
    return node.op_type == "CumSum" or attr_str(node, "reduction", "none") == "add"


def _magnitude(r: tuple[int, int] | None) -> int:
    assert r is not None
    return max(abs(r[0]), abs(r[1]))


def _static_overflow(node: ir.Node, ranges) -> bool:
    """Whether the sum's bound is known to exceed int32 from static sizes (then no guard can
    save the rule: it would always fail)."""
    if not _sums(node):
        return False
    count = _count(node)
    if count is None:
        return False
    return _bound(node, ranges, count) > INT32_MAX


def _base(node: ir.Node, ranges) -> int:
    """The magnitude a sum starts from: a scatter-add's data; 0 for a CumSum."""
    return 0 if node.op_type == "CumSum" else _magnitude(ranges[0])


def _per_element(node: ir.Node, ranges) -> int:
    """The magnitude each summed element adds."""
    return _magnitude(ranges[0] if node.op_type == "CumSum" else ranges[1])


def _bound(node: ir.Node, ranges, count: int) -> int:
    return _base(node, ranges) + count * _per_element(node, ranges)


def _count(node: ir.Node) -> int | None:
    """CumSum: the axis length; scatter-add: the updates' element count; None when symbolic."""
    if node.op_type == "CumSum":
        dims = static_shape(node.inputs[0]) if node.inputs[0] is not None else None
        axis = const_array(node.inputs[1])
        if dims is None or axis is None:
            return None
        length = dims[int(axis.reshape(-1)[0]) % len(dims)] if dims else 1
        return length
    dims = static_shape(node.inputs[2]) if node.inputs[2] is not None else None
    if dims is None or any(d is None for d in dims):
        return None
    return int(np.prod([d for d in dims if d is not None], dtype=np.int64))


def _bound_flag(
    e: Emitter, node: ir.Node, ranges, narrowed: list[ir.Value | None]
) -> ir.Value | None:
    """None where the static sizes already bound the sum; else a CPU bool from shapes: the
    count times the magnitude (plus the data's) is at most int32's maximum. The shapes are
    read off the int32 spellings (`narrowed`), which live where the kernel does."""
    if _count(node) is not None:
        return None
    per = _per_element(node, ranges)
    if per == 0:
        return None
    if node.op_type == "CumSum":
        x = narrowed[0]
        assert x is not None
        count = e.op(
            "Gather",
            e.op("Shape", x),
            e.op("Reshape", node.inputs[1], e.i64([1])),
            axis=0,
        )
    else:
        u = narrowed[2]
        assert u is not None
        count = e.op("Reshape", e.op("Size", u), e.i64([1]))
    limit = e.i64([(INT32_MAX - _base(node, ranges)) // per])
    if e.opset >= 12:
        return e.op("LessOrEqual", count, limit)
    return e.op("Not", e.op("Greater", count, limit))
