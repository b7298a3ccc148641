"""ScatterElements / ScatterND / Scatter (any reduction, any opset) -> ops the DML EP claims.

The DML EP rejects every reduction (`QueryScatter`) and, in models importing opset ≥ 18, has no
kernel for ScatterElements / ScatterND at all (registered at 11/13/16 without an end version).
This rule rewrites all three into TopK, Gather, Where, Pad, Slice, Equal, MaxUnpool and
elementwise ops, which the DML EP runs at every opset 13–21. Memory is O(K + M) for K updates
into M data elements — nothing is ever K × M (no one-hot).

1. flat positions: each update's position in the flattened data (indices normalised for
   negatives; the other coordinates are small broadcast constants, strides of the data);
2. reductions only: sort the positions (TopK, smallest first), gather the updates in that
   order, and run a segmented log-depth scan (Hillis–Steele, Pad → Slice shifts) whose
   segments are runs of equal positions: the last element of each run holds the reduction of
   all its duplicates (add / mul / max / min), exact for integers;
3. write: MaxUnpool puts (i + 1) — the run's last slot, as float32 — at each run's position
   (every other slot goes to a dummy position M, sliced off), so A[m] names the update that
   lands on m; Gather fetches it; `Where(A > 0, data ⊕ value, data)` combines with the data.

Needs static shapes for data and indices and K + 1 < 2^24 (slot numbers exact in float32).
"""

from __future__ import annotations

import math

import numpy as np
import onnx_ir as ir

from .._domain import DOMAIN
from ._base import Emitter, Rewrite, RewriteContext, Rule, attr_int, attr_str, static_shape

REDUCE_OPS = {"add": "Add", "mul": "Mul", "max": "Max", "min": "Min"}
MAX_SLOTS = 2**24 - 2


class ScatterLowering(Rule):
    name = "scatter-sort-scan-unpool"
    ops = (("", "ScatterElements"), ("", "ScatterND"), ("", "Scatter"), (DOMAIN, "ScatterElements"))
    summary = "TopK sort, segmented scan, MaxUnpool write, Where combine"

    def check(self, node: ir.Node, ctx: RewriteContext) -> str | None:
        if len(node.inputs) < 3 or any(v is None for v in node.inputs[:3]):
            return "missing inputs"
        data, indices, updates = node.inputs[:3]
        for what, v in (("data", data), ("indices", indices), ("updates", updates)):
            s = static_shape(v)
            if s is None or any(d is None for d in s):
                return f"the shape of {what} is not static (the positions are laid out at convert time)"
        red = attr_str(node, "reduction", "none")
        if red != "none" and red not in REDUCE_OPS:
            return f"unknown reduction {red!r}"
        K = int(np.prod(static_shape(updates)))
        if K > MAX_SLOTS:
            return f"{K} updates: slot numbers would not be exact in float32 (limit {MAX_SLOTS})"
        if ctx.opset < 11:
            return f"opset {ctx.opset} < 11"
        if data.dtype is None:
            return "the data element type is unknown"
        if red in ("max", "min") and data.dtype == ir.DataType.BOOL:
            return "max/min of bool"
        return None

    def rewrite(self, node: ir.Node, ctx: RewriteContext) -> Rewrite:
        data, indices, updates = node.inputs[:3]
        e = Emitter(ctx, node.name or node.op_type)
        dshape = static_shape(data)
        dt = data.dtype
        red = attr_str(node, "reduction", "none")
        if node.op_type == "ScatterND":
            pos = _positions_nd(e, indices, dshape, ctx.check_indices)
        else:
            axis = attr_int(node, "axis", 0) % max(len(dshape), 1)
            pos = _positions_elements(e, indices, dshape, axis, ctx.check_indices)
        K = int(np.prod(static_shape(updates)))
        M = int(np.prod(dshape))
        vals = e.reshape(updates, [K])
        flat = e.reshape(data, [M])
        out = scatter_flat(e, flat, pos, vals, K, M, red, dt)
        y = e.reshape(out, dshape)
        steps = math.ceil(math.log2(K)) if K > 1 and red != "none" else 0
        return e.done([y], f"{K} updates into {M} elements; reduction {red}" + (f"; {steps}-step segmented scan" if steps else ""))


def _check(e: Emitter, idx: ir.Value, dim: ir.Value, neg: ir.Value) -> ir.Value:
    """idx unchanged, but Gather fails at run time when any index is outside [-dim, dim).

    `dim` and `neg` (= -dim) are int64 constants. No Cast: the flag becomes 0 / 1 through a
    Where (64-bit Casts do not compile under the DML lane's emulator; see docs/convert.md).
    """
    ok = e.op("And", e.op("Not", e.op("Less", idx, neg)), e.op("Less", idx, dim))
    bad = e.op("Where", ok, e.i64(0), e.i64(1))
    zero = e.op("Gather", e.i64([0]), bad, axis=0)  # index 1 is out of bounds -> error
    return e.op("Add", idx, zero)


def _scaled(e: Emitter, idx: ir.Value, dim: int, stride: int) -> ir.Value:
    """idx · stride for idx in [0, dim), as a Gather from the table arange(dim) · stride.

    Not an int64 Mul: the DML EP claims int64 Mul, but its kernel does not compile under the
    DML lane's emulator (measured; int64 Add, Where, Equal, Gather do). The table has `dim`
    entries (one axis of the data), so memory stays O(M).
    """
    if stride == 1:
        return idx
    return e.op("Gather", e.i64(np.arange(dim, dtype=np.int64) * stride), idx, axis=0)


def _positions_elements(e: Emitter, indices: ir.Value, dshape: list[int], axis: int, check: bool) -> ir.Value:
    ishape = static_shape(indices)
    rank = len(ishape)
    strides = [int(np.prod(dshape[d + 1:])) for d in range(rank)]
    idx = e.cast(indices, ir.DataType.INT64) if indices.dtype != ir.DataType.INT64 else indices
    dim = e.i64(dshape[axis])
    if check:
        idx = _check(e, idx, dim, e.i64(-dshape[axis]))
    idx = e.op("Where", e.op("Less", idx, e.i64(0)), e.op("Add", idx, dim), idx)
    pos = _scaled(e, idx, dshape[axis], strides[axis])
    for d in range(rank):
        if d == axis or ishape[d] == 1:
            continue
        shape = [1] * rank
        shape[d] = ishape[d]
        pos = e.op("Add", pos, e.i64((np.arange(ishape[d], dtype=np.int64) * strides[d]).reshape(shape)))
    K = int(np.prod(ishape))
    return e.reshape(pos, [K])


def _positions_nd(e: Emitter, indices: ir.Value, dshape: list[int], check: bool) -> ir.Value:
    ishape = static_shape(indices)
    q = ishape[-1]
    T = int(np.prod(ishape[:-1]))
    R = int(np.prod(dshape[q:]))
    idx = e.cast(indices, ir.DataType.INT64) if indices.dtype != ir.DataType.INT64 else indices
    idx = e.reshape(idx, [T, q])
    dims = e.i64(np.asarray(dshape[:q], np.int64).reshape(1, q))
    if check:
        idx = _check(e, idx, dims, e.i64(-np.asarray(dshape[:q], np.int64).reshape(1, q)))
    idx = e.op("Where", e.op("Less", idx, e.i64(0)), e.op("Add", idx, dims), idx)
    strides = [int(np.prod(dshape[j + 1:q])) * R for j in range(q)]
    tup = None
    for j in range(q):
        comp = _scaled(e, e.slice(idx, [j], [j + 1], [1]), dshape[j], strides[j])  # [T, 1]
        tup = comp if tup is None else e.op("Add", tup, comp)
    if tup is None:
        tup = e.i64(np.zeros((T, 1), np.int64))
    pos = e.op("Add", tup, e.i64(np.arange(R, dtype=np.int64).reshape(1, R)))  # [T, R]
    return e.reshape(pos, [T * R])


def _shift(e: Emitter, t: ir.Value, s: int, K: int, fill: ir.Value, forward: bool = True) -> ir.Value:
    """t shifted by s along its only axis (Pad → Slice): out[i] = t[i-s] (forward) or t[i+s]."""
    if forward:
        return e.slice(e.pad(t, [s, 0], fill), [0], [K], [0])
    return e.slice(e.pad(t, [0, s], fill), [s], [K + s], [0])


def scatter_flat(e: Emitter, flat: ir.Value, pos: ir.Value, vals: ir.Value, K: int, M: int, red: str, dt: ir.DataType) -> ir.Value:
    """Scatter K values at flat positions into the M-element 1-D `flat`."""
    slots = e.const(np.arange(1, K + 1, dtype=np.float32).reshape(1, 1, K))
    if red == "none":
        target = pos
        scanned = vals
    else:
        # sort the int64 positions themselves: exact for any M, and no int64 -> float Cast
        _, perm = e.op("TopK", pos, e.i64([K]), outputs=2, largest=0, sorted=1, axis=0)
        spos = e.op("Gather", pos, perm, axis=0)
        scanned = e.op("Gather", vals, perm, axis=0)
        op = REDUCE_OPS[red]
        minus1 = e.i64(-1)
        fill = e.scalar(0, dt)
        s = 1
        while s < K:
            prev_p = _shift(e, spos, s, K, minus1)
            prev_v = _shift(e, scanned, s, K, fill)
            scanned = e.op("Where", e.op("Equal", spos, prev_p), e.op(op, scanned, prev_v), scanned)
            s *= 2
        next_p = _shift(e, spos, 1, K, minus1, forward=False)
        is_last = e.op("Not", e.op("Equal", spos, next_p))
        target = e.op("Where", is_last, spos, e.i64(M))
    L = max(M + 1, K)  # MaxUnpool's output may not be shorter than its input
    unpooled = e.op("MaxUnpool", slots, e.reshape(target, [1, 1, K]), e.i64([1, 1, L]), kernel_shape=[1], strides=[1])
    A = e.slice(e.reshape(unpooled, [L]), [0], [M], [0])
    mark = e.op("Greater", A, e.const(np.float32(0)))
    gi = e.op("Relu", e.op("Sub", A, e.const(np.float32(1))))
    # int32 indices (K < 2^24): a float -> int32 Cast, never a 64-bit one
    value = e.op("Gather", scanned, e.cast(gi, ir.DataType.INT32), axis=0)
    if red == "none":
        combined = value
    else:
        combined = e.op(REDUCE_OPS[red], flat, value)
    return e.op("Where", mark, combined, flat)
