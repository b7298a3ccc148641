"""ScatterElements / ScatterND / Scatter (any reduction, any opset) -> ops the DML EP claims.

The DML EP rejects every reduction (`QueryScatter`) and, in models importing opset ≥ 18, has no
kernel for ScatterElements / ScatterND at all (registered at 11/13/16 without an end version).
This rule rewrites all three into TopK, Gather, Where, Pad, Slice, Equal, MaxUnpool and
elementwise ops, which the DML EP runs at every opset 13–21. Memory is O(K + M) for K updates
into M data elements — nothing is ever K × M (no one-hot).

1. flat positions: each update's position in the flattened data (indices normalised for
   negatives; the other coordinates are small broadcast constants, strides of the data);
2. reductions only: sort the positions (TopK, smallest first; equal keys stay in index
   order), gather the updates in that order, and run a segmented log-depth scan
   (Hillis–Steele; the partner of each element is fetched by a Gather whose index points at
   an identity sentinel across run boundaries) whose segments are runs of equal positions:
   the last element of each run holds the reduction of all its duplicates, combined with the
   data element (add / mul; exact for integers). Float max / min follow ONNX Runtime's
   sequential rule exactly (a NaN is replaced by the next item; ties go to the later item):
   see `_max_min_sequential`;
3. write: MaxUnpool puts (i + 1) — the run's last slot, as float32 — at each run's position
   (every other slot goes to a dummy position M, sliced off), so A[m] names the update that
   lands on m; the output is a Gather from [data; results] at `Where(A > 0, M + A - 1, m)`.

No float Where touches a value anywhere: ONNX Runtime's CPU Where turns a selected -0.0 into
+0.0, a Gather copies bits. K = 0 (no updates) is an Identity.
Needs static shapes for data and indices, K + 1 < 2^24 (slot numbers exact in float32) and
M + 2K < 2^31 (int32 gather indices).
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
        M = int(np.prod(static_shape(data)))
        if M + 2 * K >= 2**31:
            return f"{M} data elements and {K} updates: int32 gather indices would overflow"
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
        K = int(np.prod(static_shape(updates)))
        if K == 0:  # no updates: the data unchanged (a 0-element Reshape would be ambiguous)
            return e.done([e.op("Identity", data)], f"no updates: the data unchanged; reduction {red}")
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
        n = 2 * K if red in ("max", "min") and dt in _FLOATS else K
        steps = math.ceil(math.log2(n)) if n > 1 and red != "none" else 0
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


def _i32(e: Emitter, v) -> ir.Value:
    return e.const(np.asarray(v, dtype=np.int32))


def _iota(e: Emitter, n: int) -> ir.Value:
    """int32 [0, 1, …, n-1] (a Range of constants: ONNX Runtime folds it into one initializer,
    so the DML EP never sees a Range with inputs it would want on the CPU)."""
    return e.op("Range", _i32(e, 0), _i32(e, n), _i32(e, 1))


def _run_time_zero(e: Emitter, pos: ir.Value) -> ir.Value:
    """An int32 scalar 0 that depends on the graph's data (pos[0] == pos[0] is always true).

    Added to the shift of every scan step (iota − s becomes iota − (s + 0)) so that ONNX
    Runtime's constant folding cannot turn each step's shifted indices into an initializer of
    its own: it did, and held ⌈log2 K⌉ K-element constants per scatter in memory (1 GB for a
    float max scatter of 1.6 M updates)."""
    p0 = e.reshape(e.slice(pos, [0], [1], [0]), [])
    return e.op("Where", e.op("Equal", p0, p0), _i32(e, 0), _i32(e, 1))


def _i32_run_time(e: Emitter, v: int, zero: ir.Value) -> ir.Value:
    return e.op("Add", _i32(e, v), zero)


def _pick(e: Emitter, t: ir.Value, other: ir.Value, take_other: ir.Value, iota: ir.Value, n: int) -> ir.Value:
    """Where(take_other, other, t) for a 1-D `t` of n elements and a 1-element `other`, as a
    Gather: ONNX Runtime's float Where turns a selected -0.0 into +0.0, a Gather copies bits."""
    idx = e.op("Where", take_other, _i32(e, n), iota)
    return e.op("Gather", e.op("Concat", t, other, axis=0), idx, axis=0)


def _segmented_scan(e: Emitter, spos: ir.Value, v: ir.Value, n: int, op: str, identity: ir.Value,
                    iota: ir.Value, zero: ir.Value, reverse: bool = False) -> ir.Value:
    """Log-depth (Hillis–Steele) inclusive scan of `v` with `op` within runs of equal `spos`.

    Forward: the last element of a run holds op(v[first], …, v[last]) folded left to right
    (`op(earlier, later)`); reverse: the first element holds the fold of the run. The partner of
    each element is fetched by a Gather whose index points at the `identity` sentinel (index n)
    across a run boundary, so no float Where touches the values (signs of zero survive).
    """
    minus1 = e.i64(-1)
    ext_at = _i32(e, n)
    s = 1
    while s < n:
        other_p = _shift(e, spos, s, n, minus1, forward=not reverse)
        same = e.op("Equal", spos, other_p)
        shift = _i32_run_time(e, s, zero)
        j = e.op("Add", iota, shift) if reverse else e.op("Sub", iota, shift)
        idx = e.op("Where", same, j, ext_at)
        other = e.op("Gather", e.op("Concat", v, identity, axis=0), idx, axis=0)
        earlier, later = (v, other) if reverse else (other, v)
        if op in _KEEP:  # the earlier value only if strictly greater / smaller, else the later
            v = _select(e, e.op(_KEEP[op], earlier, later), earlier, later, iota, n, zero)
        else:
            v = e.op(op, earlier, later)
        s *= 2
    return v


#: ONNX Runtime's max/min step (keep the current value only if strictly greater / smaller).
#: Not Max/Min: which operand they return on a tie (+0 vs -0) depends on the CPU kernel's
#: vectorisation (measured: the second one in a 4-wide packet, the first in the scalar tail).
_KEEP = {"keep-greater": "Greater", "keep-less": "Less"}


def _select(e: Emitter, cond: ir.Value, a: ir.Value, b: ir.Value, iota: ir.Value, n: int, zero: ir.Value) -> ir.Value:
    """Where(cond, a, b) for 1-D a, b of n elements, as a Gather (copies bits, -0.0 included)."""
    idx = e.op("Where", cond, e.op("Add", iota, _i32_run_time(e, n, zero)), iota)
    return e.op("Gather", e.op("Concat", b, a, axis=0), idx, axis=0)


def _max_min_sequential(e: Emitter, flat: ir.Value, spos: ir.Value, svals: ir.Value, K: int, red: str,
                        dt: ir.DataType, zero: ir.Value) -> ir.Value:
    """Per sorted update k: ONNX Runtime's sequential max/min of the data item and the updates
    of k's run up to k (exact at each run's last element, which is all the caller reads).

    The CPU kernel keeps the current value only if it compares strictly greater (max) /
    smaller (min) than the update, else takes the update: a NaN is replaced by the next item,
    ties go to the later item (the sign of a zero survives). That fold is not associative, so:
    the run's items (data, then updates in index order) are laid out as a sequence, every item
    with a NaN at or after it in its run is masked to the neutral ±inf (a reverse segmented Or
    scan), the kept items are reduced with that same step (associative without NaN: the last of
    the items equal to the max / min), and a run whose last update is NaN gives NaN.
    """
    neutral_val = -np.inf if red == "max" else np.inf
    neutral = e.const(np.asarray([neutral_val], dtype=dt.numpy()))
    iota_k = _iota(e, K)
    # the data item goes in front of the first update of its run; a neutral item elsewhere
    prev_p = _shift(e, spos, 1, K, e.i64(-1))
    first = e.op("Equal", spos, prev_p)  # True: not the first of its run
    dk = e.op("Gather", flat, spos, axis=0)
    item = _pick(e, dk, neutral, first, iota_k, K)
    n = 2 * K
    seq = e.reshape(e.op("Concat", e.reshape(item, [K, 1]), e.reshape(svals, [K, 1]), axis=1), [n])
    seq_p = e.reshape(e.op("Concat", e.reshape(spos, [K, 1]), e.reshape(spos, [K, 1]), axis=1), [n])
    iota_n = _iota(e, n)
    nan_after = _segmented_scan(e, seq_p, e.op("IsNaN", seq), n, "Or", e.const(np.zeros(1, dtype=bool)),
                                iota_n, zero, reverse=True)
    kept = _pick(e, seq, neutral, nan_after, iota_n, n)
    best = _segmented_scan(e, seq_p, kept, n, "keep-greater" if red == "max" else "keep-less", neutral, iota_n, zero)
    at_update = e.reshape(e.slice(e.reshape(best, [K, 2]), [1], [2], [1]), [K])
    nan = e.const(np.asarray([np.nan], dtype=dt.numpy()))
    return _pick(e, at_update, nan, e.op("IsNaN", svals), iota_k, K)


_FLOATS = (ir.DataType.FLOAT, ir.DataType.DOUBLE, ir.DataType.FLOAT16, ir.DataType.BFLOAT16)


def _identity(red: str, dt: ir.DataType) -> np.ndarray:
    np_dt = dt.numpy()
    if red == "add":
        v = -0.0 if dt in _FLOATS else 0  # x + (-0.0) == x bit for bit, -0.0 included
    elif red == "mul":
        v = 1
    elif dt in _FLOATS:
        v = -np.inf if red == "max" else np.inf
    else:
        info = np.iinfo(np_dt)
        v = info.min if red == "max" else info.max
    return np.asarray([v], dtype=np_dt)


def scatter_flat(e: Emitter, flat: ir.Value, pos: ir.Value, vals: ir.Value, K: int, M: int, red: str, dt: ir.DataType) -> ir.Value:
    """Scatter K ≥ 1 values at flat positions into the M-element 1-D `flat`."""
    slots = e.const(np.arange(1, K + 1, dtype=np.float32).reshape(1, 1, K))
    if red == "none":
        target = pos
        result = vals
    else:
        # sort the int64 positions themselves: exact for any M, and no int64 -> float Cast.
        # TopK keeps equal keys in index order, so each run lists its updates in index order.
        _, perm = e.op("TopK", pos, e.i64([K]), outputs=2, largest=0, sorted=1, axis=0)
        spos = e.op("Gather", pos, perm, axis=0)
        svals = e.op("Gather", vals, perm, axis=0)
        op = REDUCE_OPS[red]
        zero = _run_time_zero(e, pos)
        if red in ("max", "min") and dt in _FLOATS:
            result = _max_min_sequential(e, flat, spos, svals, K, red, dt, zero)
        else:
            scanned = _segmented_scan(e, spos, svals, K, op, e.const(_identity(red, dt)), _iota(e, K), zero)
            result = e.op(op, e.op("Gather", flat, spos, axis=0), scanned)
        next_p = _shift(e, spos, 1, K, e.i64(-1), forward=False)
        is_last = e.op("Not", e.op("Equal", spos, next_p))
        target = e.op("Where", is_last, spos, e.i64(M))
    L = max(M + 1, K)  # MaxUnpool's output may not be shorter than its input
    unpooled = e.op("MaxUnpool", slots, e.reshape(target, [1, 1, K]), e.i64([1, 1, L]), kernel_shape=[1], strides=[1])
    A = e.slice(e.reshape(unpooled, [L]), [0], [M], [0])
    mark = e.op("Greater", A, e.const(np.float32(0)))
    gi = e.op("Relu", e.op("Sub", A, e.const(np.float32(1))))
    # int32 indices (K < 2^24): a float -> int32 Cast, never a 64-bit one. The write is a Gather
    # from [data; results] (no float Where: it would turn -0.0 into +0.0).
    src = e.op("Add", e.cast(gi, ir.DataType.INT32), _i32(e, M))
    idx = e.op("Where", mark, src, _iota(e, M))
    return e.op("Gather", e.op("Concat", flat, result, axis=0), idx, axis=0)
