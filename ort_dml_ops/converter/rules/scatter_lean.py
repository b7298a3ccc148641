"""Lean folds of the lowered scatter (scatter.py, step 2–3): sorts and one prefix sum instead of
the blocked segmented scan, for the reductions where they are exact (issue 28).

A GPU pays every kernel as a dispatch (about 5–20 µs whatever its size) and every node again
when the session is created; the segmented scan of `segscan.py` folds runs exactly but costs
180–300 kernels. These constructions reach the same values in tens:

* **integer add**: S = CumSum of the sorted updates; each run's sum is S at its last element
  minus S just before its first, S − v there (two's-complement arithmetic wraps, so every
  difference is exact, overflow included, as ORT's sequential sum wraps). One MaxUnpool writes
  each run's last slot at its position, another its first slot; the data gets
  S[last] − (S − v)[first], 0 where no update lands.
* **integer max / min**: sort the updates by value (TopK), then sort that by position (TopK
  keeps equal keys in index order, ONNX TopK): each run lists its updates by value, so its last
  element is the run's max (min: values sorted descending); one MaxUnpool writes its slot, and
  the data is Max / Min-ed with it (the identity where no update lands).
* **float max / min**: ORT's CPU kernel folds sequentially, keeping the current value only if it
  compares strictly greater (smaller) than the update (scatter.cc, `Max`/`Min` functors): a NaN
  is replaced by the next update, ties go to the later update (the sign of a zero survives). So
  the result at m is, over the updates after the last NaN of m's run, the greatest, the latest
  of equals; that NaN itself if nothing follows it; and the data takes part only where the run
  has no NaN (the data wins if strictly greater). First a stable sort on 2·position + isnan puts
  each run's NaNs last, so its last element names the run's last NaN (its update index, L);
  each update then knows whether it comes after L. Updates that do not are given the key −∞
  (min: +∞), the others their value; sorting by that key, then stably by position, leaves each
  run's winner last: the greatest key, the latest of equal keys — an update at or before L
  precedes every update after it with an equal key, and where nothing follows L the latest of
  the −∞ keys is L itself. No NaN is ever a sort key, and values are copied, never
  recomputed (bit-exact: NaN payloads and signed zeros).

Every write is a MaxUnpool at each run's position; other items go to a dummy position M that is
sliced off. It unpools slot numbers (float32, exact below 2^24: K is guarded; `unpool_slots`),
which the data then reads its run's result at — except float add, which unpools each run's
negated sum itself and subtracts it from the data (`unpool_values`, `_minus_unpooled_sums`).
"""

from __future__ import annotations

import numpy as np
import onnx_ir as ir

from . import blocksum, sizes
from .emitter import Emitter
from .scatter_guard import MAX_SLOTS
from .sizes import Size


def sort_by(
    e: Emitter, keys: ir.Value, K: Size, row: Size | None, largest: bool = False
) -> tuple[ir.Value, ir.Value]:
    """TopK of all K keys (ascending unless `largest`), or of each row of `row` keys: the sorted
    keys (1-D) and the permutation (int64, row-local where `row` is given: read it with `take`)."""
    if row is None:
        return e.op(
            "TopK",
            keys,
            sizes.tensor(e, K),
            outputs=2,
            largest=int(largest),
            sorted=1,
            axis=0,
        )
    rows = sizes.concat(e, [-1, row])
    skeys, perm = e.op(
        "TopK",
        e.reshape(keys, rows),
        sizes.tensor(e, row),
        outputs=2,
        largest=int(largest),
        sorted=1,
        axis=1,
    )
    return e.reshape(skeys, [-1]), perm


def take(e: Emitter, x: ir.Value, perm: ir.Value, row: Size | None) -> ir.Value:
    """x (1-D, K items) in the order of a `sort_by` permutation."""
    if row is None:
        return e.take(x, perm)
    rows = sizes.concat(e, [-1, row])
    return e.reshape(e.op("GatherElements", e.reshape(x, rows), perm, axis=1), [-1])


def continues(
    e: Emitter, spos: ir.Value, K: Size, key_dtype: type = np.int32
) -> tuple[ir.Value, ir.Value]:
    """(not first, not last) of each sorted position's run: equal to the one before / after.

    One Pad of −1 on both ends gives both neighbours (−1 is below every position), so the
    flags are right for any K, 0 included, with no Concat of a constant flag. `key_dtype`: the
    sorted keys' type (float32 in the WebGPU-clean variant, scatter_clean.py)."""
    edge = e.const(np.asarray(-1, dtype=key_dtype))
    padded = e.op("Pad", spos, e.i64([1, 1]), edge, mode="constant")
    before = e.op("Slice", padded, e.i64([0]), sizes.tensor(e, K), e.i64([0]))
    after = e.op("Slice", padded, e.i64([2]), e.i64([2**62]), e.i64([0]))
    return e.op("Equal", spos, before), e.op("Equal", spos, after)


def unpool_slots(
    e: Emitter,
    target: ir.Value,
    K: Size,
    M: Size,
    start: int = 1,
    dummy: bool = True,
) -> ir.Value:
    """A[m] = s where slot s (sorted update s − 1) targets m, 0 where none does ([M] float32).

    `target` (int32 or int64, K items) holds a position or M (the dummy, sliced off). Where K is only
    known at run time it may be 0, and MaxUnpool refuses an empty input: one more slot, aimed at
    the dummy like every slot that is not written. `start`: the number of the first slot (the
    write of `scatter_write.scatter_flat` numbers them from M on). `dummy=False`: no slot aims at
    M; where K <= M is known, the unpooled output is then M long and needs no Slice."""
    n_slots = K
    if not isinstance(K, int):
        target = _one_more(e, target, M)
        n_slots = sizes.add(e, K, 1)
    slots = sizes.iota(e, n_slots, np.float32, start=start)
    exact = not dummy and isinstance(K, int) and isinstance(M, int) and K <= M
    return _unpool(e, slots, target, n_slots, M, exact)


def unpool_values(
    e: Emitter, x: ir.Value, target: ir.Value, K: Size, M: Size
) -> ir.Value:
    """U[m] = x[i] where item i targets m, +0.0 where none does ([M], x's float type).

    `target` as for `unpool_slots` (no two items but the dummy's share a position); `x` has K
    items, or K + 1 where K is only known at run time (its last item goes to the dummy)."""
    if not isinstance(K, int):
        target = _one_more(e, target, M)
        K = sizes.add(e, K, 1)
    return _unpool(e, x, target, K, M, exact=False)


def _one_more(e: Emitter, target: ir.Value, M: Size) -> ir.Value:
    """target and one more item aimed at the dummy M (padded before the Cast to int64: a Pad of
    int32 writes half the bytes)."""
    wide = target.dtype == ir.DataType.INT64
    fill = sizes.scalar(e, M, np.int64 if wide else np.int32)
    return e.op("Pad", target, e.i64([0, 1]), fill, mode="constant")


def _unpool(
    e: Emitter, x: ir.Value, target: ir.Value, n: Size, M: Size, exact: bool
) -> ir.Value:
    """MaxUnpool of the n items of x at `target`, as [M] (`exact`: no item aims at the dummy
    and n <= M, so the output is M long and needs no Slice)."""
    target = _int64(e, target)
    x = e.reshape(x, [1, 1, -1])
    # MaxUnpool's output may not be shorter than its input
    L = M if exact else sizes.maximum(e, sizes.add(e, M, 1), n)
    unpooled = e.op(
        "MaxUnpool",
        x,
        e.reshape(target, [1, 1, -1]),
        sizes.concat(e, [1, 1, L]),
        kernel_shape=[1],
        strides=[1],
    )
    if exact:
        return e.reshape(unpooled, [-1])
    return e.op(
        "Slice", e.reshape(unpooled, [-1]), e.i64([0]), sizes.tensor(e, M), e.i64([0])
    )


def _int64(e: Emitter, x: ir.Value) -> ir.Value:
    """x as int64 (MaxUnpool's indices): a Cast unless it is int64 already."""
    return x if x.dtype == ir.DataType.INT64 else e.cast(x, ir.DataType.INT64)


def at_slots(e: Emitter, x: ir.Value, A: ir.Value, lead: ir.Value) -> ir.Value:
    """x[A − 1] for every slot A ≥ 1, `lead` where A = 0 (no update): a Gather from x with one
    lead item, at the slot number itself (int32)."""
    if lead.shape is None or len(lead.shape) != 0:
        lead = e.reshape(lead, [])
    with_lead = e.op("Pad", x, e.i64([1, 0]), lead, mode="constant")
    return e.take(with_lead, e.cast(A, ir.DataType.INT32))


def _write_target(
    e: Emitter, spos: ir.Value, keep_dummy: ir.Value, M: Size
) -> ir.Value:
    """spos where the slot is written, M (the dummy) where `keep_dummy`."""
    return e.op("Where", keep_dummy, sizes.on_device(e, M, np.int32), spos)


def integer_add(
    e: Emitter,
    flat: ir.Value,
    pos: ir.Value,
    vals: ir.Value,
    K: Size,
    M: Size,
    dt: ir.DataType,
    row: Size | None,
) -> ir.Value:
    """data + the sum of each run, exact in two's complement (see the module docstring)."""
    spos, perm = sort_by(e, pos, K, row)
    svals = take(e, vals, perm, row)
    S = e.op("CumSum", svals, e.i32(0))
    before_first = e.op("Sub", S, svals)  # S just before each element: exact (wraps)
    not_first, going_on = continues(e, spos, K)
    last = unpool_slots(e, _write_target(e, spos, going_on, M), K, M)
    first = unpool_slots(e, _write_target(e, spos, not_first, M), K, M)
    zero = e.const(np.zeros((), dtype=dt.numpy()))
    total = e.op(
        "Sub", at_slots(e, S, last, zero), at_slots(e, before_first, first, zero)
    )
    return e.op("Add", flat, total)


def block_fold(
    e: Emitter,
    flat: ir.Value,
    pos: ir.Value,
    vals: ir.Value,
    K: Size,
    M: Size,
    red: str,
    dt: ir.DataType,
    row: Size | None,
) -> ir.Value:
    """Float data + (·) the sum (product) of each run, and integer data · the product of each
    run, by blocks of masked reductions (`blocksum.py`): tens of kernels where the segmented
    scan took two hundred.

    Float add: −0.0 updates go to the dummy position M first (they change no sum; see
    `blocksum.drop_negative_zeros`). float16 folds in float32 (ORT's CPU EP has no float16
    ReduceSum or ReduceProd; the fold rounds once, where ORT's kernel rounds at every update).
    Integers multiply in their own type, by halving Muls (`blocksum.INTEGER_PRODUCT`): the
    product wraps as ORT's sequential one does, bit for bit."""
    integer = dt not in (ir.DataType.FLOAT, ir.DataType.FLOAT16)
    fold = blocksum.fold_of(red, integer=integer)
    # float32 data, float16 folded in float32 (`_lean`), integers in their own type
    work = dt if integer else ir.DataType.FLOAT
    if work != dt:
        vals = e.cast(vals, work)
    add = red == "add"
    if add:
        pos = blocksum.drop_negative_zeros(
            e, pos, vals, sizes.on_device(e, M, np.int32)
        )
    spos, perm = sort_by(e, pos, K, row)
    svals = take(e, vals, perm, row)
    folded = blocksum.run_folds(
        e,
        spos,
        svals,
        K,
        sizes.upper_bound(K, MAX_SLOTS),
        fold,
        dtype=work.numpy(),
        spare=add,
    )
    target = _write_target(e, spos, not_last(e, spos), M)
    if add:
        return _minus_unpooled_sums(e, flat, folded, target, K, M, dt)
    last = unpool_slots(e, target, K, M)
    # the product: 1 where no update lands (x · 1 == x bit for bit)
    total = at_slots(e, folded, last, e.const(np.asarray(fold.identity, work.numpy())))
    if work != dt:
        total = e.cast(total, dt)  # 1 stays 1
    return e.op(fold.op, flat, total)


def _minus_unpooled_sums(
    e: Emitter,
    flat: ir.Value,
    folded: ir.Value,
    target: ir.Value,
    K: Size,
    M: Size,
    dt: ir.DataType,
) -> ir.Value:
    """data − U, U the negated run sums unpooled at their positions (+0.0 where no update lands):
    x − (+0.0) == x for every x, −0.0 included, and x − (−T) == x + T bit for bit (IEEE 754
    defines x − y as x + (−y), and negation is exact). Five kernels from the run ends on — Neg,
    Cast, MaxUnpool, Slice, Sub — where a gather of the sums at unpooled slot numbers took seven
    (a lead item, two Casts, a Gather). `folded` (float32) has K items, more where the top
    level was padded; K + 1 at least where K is only known at run time (`run_folds`' spare)."""
    n = K if isinstance(K, int) else sizes.add(e, K, 1)
    if not (isinstance(K, int) and blocksum.exact_length(K)):
        folded = e.op("Slice", folded, e.i64([0]), sizes.tensor(e, n), e.i64([0]))
    minus = unpool_values(e, e.op("Neg", folded), target, K, M)
    if dt != ir.DataType.FLOAT:
        minus = e.cast(minus, dt)  # float16: rounding commutes with negation
    return e.op("Sub", flat, minus)


def not_last(e: Emitter, spos: ir.Value, key_dtype: type = np.int32) -> ir.Value:
    """Whether each sorted position's run goes on after it: one Pad of −1 at the end (below
    every position), one Slice, one Equal. `key_dtype`: the keys' type (float32 in the
    WebGPU-clean variant)."""
    edge = e.const(np.asarray(-1, dtype=key_dtype))
    after = e.op(
        "Slice", e.pad(spos, [0, 1], edge), e.i64([1]), e.i64([2**62]), e.i64([0])
    )
    return e.op("Equal", spos, after)


def integer_max_min(
    e: Emitter,
    flat: ir.Value,
    pos: ir.Value,
    vals: ir.Value,
    K: Size,
    M: Size,
    red: str,
    identity: ir.Value,
    row: Size | None,
) -> ir.Value:
    """data Max / Min each run's extreme: a sort by value, then a stable sort by position."""
    by_value, perm1 = sort_by(e, vals, K, row, largest=red == "min")
    spos, perm2 = sort_by(e, take(e, pos, perm1, row), K, row)
    svals = take(e, by_value, perm2, row)
    going_on = not_last(e, spos)
    last = unpool_slots(e, _write_target(e, spos, going_on, M), K, M)
    return e.op(
        "Max" if red == "max" else "Min", flat, at_slots(e, svals, last, identity)
    )


def float_max_min(
    e: Emitter,
    flat: ir.Value,
    pos: ir.Value,
    vals: ir.Value,
    K: Size,
    M: Size,
    red: str,
    dt: ir.DataType,
    row: Size | None,
) -> ir.Value:
    """ORT's sequential float max / min, bit-exact (see the module docstring)."""
    nan = e.op("IsNaN", vals)
    # 1. each run's last NaN: a stable sort on 2·position + isnan lists a run's NaNs last
    key = e.op("Add", e.op("Add", pos, pos), e.cast(nan, ir.DataType.INT32))
    skey, perm1 = sort_by(e, key, K, row)
    two = e.const(np.asarray(2, dtype=np.int32))
    run_of = e.op(
        "Div", skey, two
    )  # the position (keys are ≥ 0: Div truncates = floors)
    last = unpool_slots(e, _write_target(e, run_of, not_last(e, run_of), M), K, M)
    # the update index of that last element where it is a NaN, else −1, per position
    is_nan_key = e.op("Equal", e.op("Sub", skey, e.op("Add", run_of, run_of)), e.i32(1))
    order = sizes.iota(e, K, np.int32)  # each update's index
    index1 = (
        take(e, order, perm1, row)
        if row is not None
        else e.cast(perm1, ir.DataType.INT32)
    )
    last_nan_sorted = e.op("Where", is_nan_key, index1, e.i32(-1))
    last_nan = at_slots(
        e, last_nan_sorted, last, e.const(np.asarray(-1, dtype=np.int32))
    )
    # 2. updates after their run's last NaN keep their value as the key, the others ∓∞
    after = e.op("Greater", order, e.take(last_nan, pos))
    far = -np.inf if red == "max" else np.inf
    keyed = e.op("Where", after, vals, e.const(np.asarray(far, dtype=dt.numpy())))
    _, permf = sort_by(e, keyed, K, row, largest=red == "min")
    spos, perm2 = sort_by(e, take(e, pos, permf, row), K, row)
    svals = take(e, take(e, vals, permf, row), perm2, row)
    slot = unpool_slots(e, _write_target(e, spos, not_last(e, spos), M), K, M)
    winner = at_slots(e, svals, slot, e.const(np.zeros((), dtype=dt.numpy())))
    # 3. the data: kept where no update lands, or where the run has no NaN and it compares
    # strictly greater (smaller) than the winner
    # (data and winner as the [M, 1] columns the select reads: data that comes from the CPU —
    # an exporter's ConstantOfShape — is then copied to the device once, not once per view)
    compare = "Greater" if red == "max" else "Less"
    data, won = e.reshape(flat, [-1, 1]), e.reshape(winner, [-1, 1])
    no_nan = e.reshape(e.op("Less", last_nan, e.i32(0)), [-1, 1])
    untouched = e.reshape(e.op("Equal", slot, e.const(np.float32(0))), [-1, 1])
    keep = e.op("Or", untouched, e.op("And", no_nan, e.op(compare, data, won)))
    pairs = e.op("Concat", won, data, axis=1)
    column = e.cast(
        keep, ir.DataType.INT32
    )  # 1: the data (bits copied, NaN payloads kept)
    return e.reshape(e.op("GatherElements", pairs, column, axis=1), [-1])
