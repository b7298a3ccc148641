"""CumProd (the project's DOMAIN::CumProd and ONNX CumProd-26) -> Mul, Split, Concat, Reshape.

Static axis length n — a blocked scan, O(n) Mul nodes on slices, about four passes over the
tensor and 2·(b + B) nodes:

1. view x as [O, B, b, I] (B blocks of b elements along the axis, n = B·b; when n has no
   divisor near √n the axis is padded with ones to B·b and the pad sliced off at the end);
   when the inner size I is small the view is transposed to [b, O, B, I] so that each slice
   below is one contiguous chunk;
2. within-block scan: Split along the b axis, a chain of b−1 Muls, Concat — every block at
   once; the last link is each block's total;
3. exclusive scan of the block totals along B (1/b of the data, same chain);
4. multiply each block by its exclusive prefix (a broadcast Mul), transpose back, reshape.

Short axes (n ≤ 32) use one chain. `exclusive` and `reverse` only change which slice starts
the chain and where the ones go, so they cost nothing.

Dynamic axis length — Hillis–Steele: 31 doubling steps y *= shift(y, 2^k), each shift written
Pad(constant 1) → Slice, with the pad
width clipped to the axis length at run time: exact (same products, reassociated) for every
length < 2^31.

Never Exp/Log. Integers are exact (wrapping multiplication is associative); floats differ
from the sequential reference only by rounding: see docs/convert.md for the bound.
"""

from __future__ import annotations

import math

import numpy as np
import onnx_ir as ir

from .._domain import DOMAIN
from ._base import Emitter, Rewrite, RewriteContext, Rule, attr_int, const_array, static_shape

#: dtypes the Mul-based lowering supports (ONNX Mul-14 type set minus bool).
SUPPORTED = {
    ir.DataType.FLOAT, ir.DataType.FLOAT16, ir.DataType.DOUBLE, ir.DataType.BFLOAT16,
    ir.DataType.INT32, ir.DataType.INT64, ir.DataType.UINT32, ir.DataType.UINT64,
    ir.DataType.INT8, ir.DataType.INT16, ir.DataType.UINT8, ir.DataType.UINT16,
}
#: Axes this short are scanned with a single chain.
FLAT_MAX = 32
#: Inner chunk (elements) below which the view is transposed so slices are contiguous.
SMALL_INNER = 16
#: Doubling steps of the dynamic-length scan: exact for every axis length < 2**DYN_STEPS.
DYN_STEPS = 31


def block_size(n: int) -> tuple[int, int]:
    """(B, b): B blocks of b elements, B·b ≥ n, b a divisor of n near √n when there is one."""
    r = math.isqrt(n)
    for d in range(r, max(1, r // 2) - 1, -1):
        if n % d == 0:
            b = n // d if n // d <= 2 * r else d
            return n // b, b
    b = r if r * r >= n else r + 1
    return -(-n // b), b


class CumProdLowering(Rule):
    name = "cumprod-scan"
    ops = ((DOMAIN, "CumProd"), ("", "CumProd"))

    def check(self, node: ir.Node, ctx: RewriteContext) -> str | None:
        x = node.inputs[0]
        if len(node.inputs) < 2 or node.inputs[1] is None:
            return "CumProd has no axis input"
        if const_array(node.inputs[1]) is None:
            return "the axis input is not a constant; the scan is laid out at convert time"
        shape = static_shape(x)
        if shape is None:
            return "the rank of the input is unknown (run shape inference or give input shapes)"
        if x.dtype not in SUPPORTED:
            return f"no Mul for element type {x.dtype.name if x.dtype else 'unknown'}"
        axis = int(const_array(node.inputs[1]).reshape(-1)[0])
        if not -len(shape) <= axis < len(shape):
            return f"axis {axis} is out of range for rank {len(shape)}"
        if ctx.opset < 11:
            return f"opset {ctx.opset} < 11"
        return None

    def rewrite(self, node: ir.Node, ctx: RewriteContext) -> Rewrite:
        x = node.inputs[0]
        shape = static_shape(x)
        rank = len(shape)
        axis = int(const_array(node.inputs[1]).reshape(-1)[0]) % rank
        exclusive = bool(attr_int(node, "exclusive"))
        reverse = bool(attr_int(node, "reverse"))
        e = Emitter(ctx, node.name or "CumProd")
        n = shape[axis]
        if n is None:
            y = scan_dynamic(e, x, axis, rank, "Mul", exclusive, reverse, x.dtype)
            note = f"dynamic axis length: {DYN_STEPS}-step doubling scan, exact for every length < 2^{DYN_STEPS}"
        else:
            y = scan_static(e, x, shape, axis, "Mul", exclusive, reverse, x.dtype)
            B, b = block_size(n) if n > FLAT_MAX else (1, n)
            note = f"axis length {n}: " + ("single chain" if B == 1 else f"blocked scan {B}x{b}")
        return e.done([y], note)


# --------------------------------------------------------------------------------------
# The scans, shared with the segmented scans of the scatter lowering.
# --------------------------------------------------------------------------------------
def _identity(op: str, dtype: ir.DataType):
    if op == "Mul":
        return 1
    if op == "Add":
        return 0
    raise ValueError(op)


def _ones_like_piece(e: Emitter, dtype: ir.DataType, piece_shape: list[int] | ir.Value, op: str) -> ir.Value:
    one = e.const(np.full([1] * (len(piece_shape) if isinstance(piece_shape, list) else 1), _identity(op, dtype), dtype=dtype.numpy()))
    if isinstance(piece_shape, list):
        return e.op("Expand", one, e.i64(piece_shape), dtype=dtype, shape=piece_shape)
    return e.op("Expand", one, piece_shape, dtype=dtype)


def chain(e: Emitter, x: ir.Value, n: int, ax: int, op: str, exclusive: bool, reverse: bool, dtype: ir.DataType, piece_shape: list[int] | None):
    """Sequential scan of n slices along `ax`: (scanned tensor, inclusive total slice)."""
    pieces = e.split(x, [1] * n, ax) if n > 1 else [x]
    order = list(range(n - 1, -1, -1)) if reverse else list(range(n))
    inc: dict[int, ir.Value] = {}
    prev = None
    for k in order:
        prev = pieces[k] if prev is None else e.op(op, prev, pieces[k], dtype=dtype)
        inc[k] = prev
    total = prev
    if exclusive:
        out = {order[0]: _ones_like_piece(e, dtype, piece_shape, op)}
        for i in range(1, n):
            out[order[i]] = inc[order[i - 1]]
    else:
        out = inc
    parts = [out[k] for k in range(n)]
    y = parts[0] if n == 1 else e.op("Concat", *parts, axis=ax, dtype=dtype)
    return y, total


def scan_static(e: Emitter, x: ir.Value, shape: list[int | None], axis: int, op: str, exclusive: bool, reverse: bool, dtype: ir.DataType) -> ir.Value:
    """Scan along `axis` whose length is known; other dims may be symbolic."""
    n = shape[axis]
    rank = len(shape)
    pre, post = shape[:axis], shape[axis + 1:]
    all_static = all(d is not None for d in shape)
    O = int(np.prod(pre)) if all(d is not None for d in pre) else None
    I = int(np.prod(post)) if all(d is not None for d in post) else None
    if n == 0 or (all_static and 0 in shape):
        return e.op("Identity", x, dtype=dtype)
    if n == 1:
        if exclusive:
            one = e.const(np.full([1] * rank, _identity(op, dtype), dtype=dtype.numpy()))
            return e.op("Expand", one, e.op("Shape", x), dtype=dtype)
        return e.op("Identity", x, dtype=dtype)

    B, b = block_size(n) if n > FLAT_MAX else (1, n)
    padded = B * b
    transpose = I is not None and I < SMALL_INNER and (O is None or O > 1 or B > 1)
    # view: [O, B, b, I] (O, I as -1/0 where symbolic)
    if all_static:
        view = [O, B, b, I]
    elif I is not None:
        view = [-1, B, b, I]
    elif O is not None:
        view = [O, B, b, -1]
    else:
        return scan_dynamic(e, x, axis, rank, op, exclusive, reverse, dtype)
    xin = x
    if padded != n:
        pads = [0] * (2 * rank)
        pads[axis + (0 if reverse else rank)] = padded - n
        xin = e.pad(x, pads, e.const(np.asarray(_identity(op, dtype), dtype=dtype.numpy())))
    xv = e.reshape(xin, view)
    if transpose:
        xv = e.op("Transpose", xv, perm=[2, 0, 1, 3], dtype=dtype)
        chain_ax, block_ax = 0, 2
        piece = [1, O, B, I] if all_static else None
        tot_piece = [1, O, 1, I] if all_static else None
    else:
        chain_ax, block_ax = 2, 1
        piece = [O, B, 1, I] if all_static else None
        tot_piece = [O, 1, 1, I] if all_static else None
    if not all_static and exclusive:
        # ones for the exclusive chain need the runtime shape of a slice
        piece = _dyn_piece_shape(e, xv, chain_ax)
    within, totals = chain(e, xv, b, chain_ax, op, exclusive, reverse, dtype, piece)
    if B > 1:
        if not all_static:
            tot_piece = _dyn_piece_shape(e, totals, block_ax)
        prefix, _ = chain(e, totals, B, block_ax, op, True, reverse, dtype, tot_piece)
        yv = e.op(op, within, prefix, dtype=dtype)
    else:
        yv = within
    if transpose:
        yv = e.op("Transpose", yv, perm=[1, 2, 0, 3], dtype=dtype)
    if padded != n:
        full = list(shape)
        full[axis] = padded
        yv = e.reshape(yv, [d if d is not None else 0 for d in full]) if _zero_ok(full) else e.reshape(yv, e.op("Shape", xin))
        start = padded - n if reverse else 0
        return e.slice(yv, [start], [start + n], [axis])
    if all_static:
        return e.reshape(yv, list(shape))
    return e.reshape(yv, e.op("Shape", x))


def _zero_ok(shape: list[int | None]) -> bool:
    # Reshape's 0 copies the input dim at the same position: only safe when every symbolic
    # dim keeps its position, which is never true after the view; use it only when static.
    return all(d is not None for d in shape)


def _dyn_piece_shape(e: Emitter, t: ir.Value, ax: int) -> ir.Value:
    s = e.op("Shape", t)
    # replace dim `ax` by 1: Concat(s[:ax], [1], s[ax+1:])
    parts = []
    if ax > 0:
        parts.append(e.slice(s, [0], [ax], [0]))
    parts.append(e.i64([1]))
    parts.append(e.slice(s, [ax + 1], [2**62], [0]))
    return e.op("Concat", *parts, axis=0)


def scan_dynamic(e: Emitter, x: ir.Value, axis: int, rank: int, op: str, exclusive: bool, reverse: bool, dtype: ir.DataType) -> ir.Value:
    """Hillis–Steele with pad widths clipped to the run-time axis length (31 steps)."""
    ident = e.const(np.asarray(_identity(op, dtype), dtype=dtype.numpy()))
    n = e.slice(e.op("Shape", x), [axis], [axis + 1], [0])  # [1] int64
    zeros_before = e.i64([0] * axis)
    zeros_mid = e.i64([0] * (rank - 1))
    zeros_after = e.i64([0] * (rank - axis - 1))

    def shift(t: ir.Value, s: int) -> ir.Value:
        w = e.op("Min", e.i64([s]), n)
        parts = [zeros_before, e.i64([0]), zeros_mid, w, zeros_after] if reverse else [zeros_before, w, zeros_mid, e.i64([0]), zeros_after]
        parts = [p for p in parts if not (p is zeros_before and axis == 0) and not (p is zeros_after and axis == rank - 1) and not (p is zeros_mid and rank == 1)]
        pads = e.op("Concat", *parts, axis=0)
        padded = e.pad(t, pads, ident)
        if reverse:
            return e.op("Slice", padded, w, e.op("Add", w, n), e.i64([axis]), dtype=dtype)
        return e.op("Slice", padded, e.i64([0]), n, e.i64([axis]), dtype=dtype)

    y = x
    for k in range(DYN_STEPS):
        y = e.op(op, y, shift(y, 2**k), dtype=dtype)
    if exclusive:
        y = shift(y, 1)
    return y
