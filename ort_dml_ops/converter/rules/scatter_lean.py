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
* **float max / min**: ORT's CPU kernel folds sequentially from the data, keeping the current
  value only if it compares strictly greater (smaller) than the update (scatter.cc, `Max`/`Min`
  functors): a NaN is replaced by the next update, ties go to the later update (the sign of a
  zero survives). A stable sort by position lists each run in update order; the data folds into
  the run's first update by one strict compare (the kernel's first step). A NaN then behaves as
  a restart: whatever came before it is lost. So a run's result lies in its last group, the
  updates from its last NaN on (all of it where it has none): the greatest, the latest of
  equals, or that NaN itself if nothing follows it. Groups start at each run's first update
  and at each NaN and are numbered by one prefix count, which grows along the sorted items.
  NaNs are given the key −∞ (min: +∞), the others their value; sorting by that key, then
  stably by group, leaves each run's winner last: the NaN starting a group precedes the equal
  keys after it, so it wins only where nothing follows it. No NaN is ever a sort key, and
  values are copied, never recomputed (bit-exact: NaN payloads and signed zeros). Three sorts
  and one prefix count: 38 kernels on the DML EP where the sort-per-NaN construction took 53.
  The data folds in by a plain Where; an item that took the data is never written, so a run
  the data wins keeps the data bit for bit (ORT's CPU Where would give +0.0 for its −0.0).

Every write is a MaxUnpool at each run's position; other items go to a dummy position M that is
sliced off. It unpools slot numbers (float32, exact below 2^24: K is guarded; `unpool_slots`),
which the data then reads its run's result at — except float add, which unpools each run's
negated sum itself and subtracts it from the data (`unpool_values`, `_minus_unpooled_sums`).
"""

from __future__ import annotations

import numpy as np
import onnx_ir as ir

from . import blocksum, sizes
from .blockscan_symbolic import crops
from .emitter import Emitter
from .scatter_guard import MAX_SLOTS
from .segscan import shift
from .sizes import Size


def as_rows(e: Emitter, x: ir.Value, row: Size) -> ir.Value:
    """x as [-1, row]: x itself where it is that already (a static 2-D shape the emitter was
    told, `scatter_clean.rows_of`). A Reshape to its own shape right after a Transpose is one
    that ORT's transpose optimizer merges with it into a new, renamed Transpose (HandleReshape
    in onnx_transpose_optimization.cc), which `inspect` does not model."""
    shape = x.shape
    if (
        isinstance(row, int)
        and shape is not None
        and len(shape) == 2
        and isinstance(shape[0], int)
        and shape[1] == row
    ):
        return x
    return e.reshape(x, sizes.concat(e, [-1, row]))


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
    skeys, perm = e.op(
        "TopK",
        as_rows(e, keys, row),
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
    return e.reshape(e.op("GatherElements", as_rows(e, x, row), perm, axis=1), [-1])


def continues(
    e: Emitter, spos: ir.Value, K: Size, key_dtype: type = np.int32
) -> tuple[ir.Value, ir.Value]:
    """(not first, not last) of each sorted position's run: equal to the one before / after.

    Padded with −1 (below every position), so the flags are right for any K, 0 included, with
    no Concat of a constant flag: two cropping Pads where the target crops both ways (WebGPU:
    `segscan.shift`), else one Pad on both ends and a Slice for each neighbour. `key_dtype`:
    the sorted keys' type (float32 in the WebGPU-clean variant, scatter_clean.py)."""
    edge = e.const(np.asarray(-1, dtype=key_dtype))
    if crops(e) and crops(e, reverse=True):
        before, after = shift(e, spos, 1, K, edge), shift(e, spos, -1, K, edge)
        return e.op("Equal", spos, before), e.op("Equal", spos, after)
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
    """target and one more item aimed at the dummy M, in target's own type (int32 targets are
    padded before `_unpool`'s Cast to int64: a Pad of int32 writes half the bytes)."""
    wide = target.dtype == ir.DataType.INT64
    fill = sizes.scalar(e, M, np.int64 if wide else np.int32)
    # typed: `_unpool` then casts no int64 target to int64 (a node ORT's CastElimination drops)
    return e.op("Pad", target, e.i64([0, 1]), fill, mode="constant", dtype=target.dtype)


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


def write_target(e: Emitter, spos: ir.Value, keep_dummy: ir.Value, M: Size) -> ir.Value:
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
    last = unpool_slots(e, write_target(e, spos, going_on, M), K, M)
    first = unpool_slots(e, write_target(e, spos, not_first, M), K, M)
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
    ascending: bool = True,
) -> ir.Value:
    """Float data + (·) the sum (product) of each run, and integer data · the product of each
    run, by blocks of masked reductions (`blocksum.py`): tens of kernels where the segmented
    scan took two hundred.

    Float add: −0.0 updates go to the dummy position M first (they change no sum; see
    `blocksum.drop_negative_zeros`). float16 folds in float32 (ORT's CPU EP has no float16
    ReduceSum or ReduceProd; the fold rounds once, where ORT's kernel rounds at every update).
    Integers multiply in their own type, by halving Muls (`blocksum.INTEGER_PRODUCT`): the
    product wraps as ORT's sequential one does, bit for bit. `row`, `ascending`: as
    `scatter_write.scatter_flat`'s."""
    integer = dt not in (ir.DataType.FLOAT, ir.DataType.FLOAT16)
    fold = blocksum.fold_of(red, ascending, integer, e.ctx.target)
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
        row=row,
    )
    target = write_target(e, spos, not_last(e, spos, K), M)
    if add:
        return _minus_unpooled_sums(e, flat, folded, target, K, M, dt, row)
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
    row: Size | None = None,
) -> ir.Value:
    """data − U, U the negated run sums unpooled at their positions (+0.0 where no update lands):
    x − (+0.0) == x for every x, −0.0 included, and x − (−T) == x + T bit for bit (IEEE 754
    defines x − y as x + (−y), and negation is exact). Five kernels from the run ends on — Neg,
    Cast, MaxUnpool, Slice, Sub — where a gather of the sums at unpooled slot numbers took seven
    (a lead item, two Casts, a Gather). `folded` (float32) has K items, more where the top
    level was padded; K + 1 at least where K is only known at run time (`run_folds`' spare);
    `row`: the rows `run_folds` was given."""
    n = K if isinstance(K, int) else sizes.add(e, K, 1)
    if not (isinstance(K, int) and blocksum.exact_length(K, row=row)):
        folded = e.op("Slice", folded, e.i64([0]), sizes.tensor(e, n), e.i64([0]))
    minus = unpool_values(e, e.op("Neg", folded), target, K, M)
    if dt != ir.DataType.FLOAT:
        minus = e.cast(minus, dt)  # float16: rounding commutes with negation
    return e.op("Sub", flat, minus)


def not_last(
    e: Emitter, spos: ir.Value, K: Size, key_dtype: type = np.int32
) -> ir.Value:
    """Whether each sorted position's run goes on after it: the positions moved back by one,
    −1 (below every position) after the last (`segscan.shift`), compared. `key_dtype`: the
    keys' type (float32 in the WebGPU-clean variant)."""
    edge = e.const(np.asarray(-1, dtype=key_dtype))
    return e.op("Equal", spos, shift(e, spos, -1, K, edge))


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
    going_on = not_last(e, spos, K)
    last = unpool_slots(e, write_target(e, spos, going_on, M), K, M)
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
    """ORT's sequential float max / min, bit-exact (see the module docstring): three sorts, one
    prefix count of NaNs, one write."""
    compare = "Greater" if red == "max" else "Less"
    # 1. runs in update order (a stable sort by position); the data folds into each run's first
    # update by one strict compare, as the sequential kernel starts from it
    spos, by_position = sort_by(e, pos, K, row)
    svals = take(e, vals, by_position, row)
    d = e.take(flat, spos)
    first = e.op("Greater", spos, previous(e, spos, K))  # the positions ascend
    take_data = e.op("And", first, e.op(compare, d, svals))
    # a plain Where, not `choose`'s bit-copying gather (three kernels, four passes): ORT's CPU
    # Where gives +0.0 for a −0.0 its true branch selects, which changes no step below (the
    # two zeros compare equal and neither is NaN); and an item that took the data is never
    # written (step 3), so a run the data wins keeps the data's own bits
    items = e.op("Where", take_data, d, svals)
    # 2. groups: a run's first update and each NaN start one, numbered by a prefix count, so
    # the number grows along the sorted items and is equal exactly within a group; a run's
    # winner is in its last group (a NaN is replaced by what follows it)
    nan = e.op("IsNaN", items)
    group = e.op("CumSum", e.cast(e.op("Or", first, nan), ir.DataType.INT32), e.i32(0))
    far = e.const(np.asarray(-np.inf if red == "max" else np.inf, dtype=dt.numpy()))
    key = e.op("Where", nan, far, items)  # never a NaN key; values are copied, not keys
    # 3. by key (min: descending), then stably by group: each run's winner comes last
    _, by_key = sort_by(e, key, K, row, largest=red == "min")
    _, by_group = sort_by(e, take(e, group, by_key, row), K, row)
    order = compose(e, by_key, by_group, row)
    wpos = take(e, spos, order, row)
    winners = take(e, items, order, row)
    data_won = take(e, take_data, order, row)
    target = write_target(e, wpos, e.op("Or", not_last(e, wpos, K), data_won), M)
    return select_write(e, flat, winners, target, K, M, dt)


def compose(e: Emitter, first: ir.Value, then: ir.Value, row: Size | None) -> ir.Value:
    """The permutation of sorting by `first`, then by `then` (both `sort_by` permutations): one
    gather, read like either (row-local, [rows, row], where `row` is given)."""
    order = take(e, first, then, row)
    return order if row is None else e.reshape(order, sizes.concat(e, [-1, row]))


def previous(
    e: Emitter, spos: ir.Value, K: Size, key_dtype: type = np.int32
) -> ir.Value:
    """Each sorted position's predecessor, −1 (below every position) before the first
    (`segscan.shift`). `key_dtype`: the positions' type (float32 in the WebGPU-clean
    variant)."""
    return shift(e, spos, 1, K, e.const(np.asarray(-1, dtype=key_dtype)))


def choose(e: Emitter, a: ir.Value, b: ir.Value, take_b: ir.Value, n: Size) -> ir.Value:
    """Where(take_b, b, a) for 1-D a, b of n elements, copying bits: ONNX Runtime's CPU float
    Where turns a selected −0.0 in its true branch into +0.0 (measured, 1.31), a gather copies
    bits. One GatherElements from the [n, 2] pairs (a, b) at column Cast(take_b): four passes
    (the pairs are two), where a Gather from [a; b] at Where(take_b, n + i, i) took five."""
    pairs = e.op("Concat", e.reshape(a, [-1, 1]), e.reshape(b, [-1, 1]), axis=1)
    column = e.reshape(e.cast(take_b, ir.DataType.INT32), [-1, 1])
    return e.reshape(e.op("GatherElements", pairs, column, axis=1), [-1])


def select_write(
    e: Emitter,
    flat: ir.Value,
    result: ir.Value,
    target: ir.Value,
    K: Size,
    M: Size,
    dt: ir.DataType,
    lead: int = 0,
    result_length: Size | None = None,
    dummy: bool = True,
) -> ir.Value:
    """The data with `result`'s item at each position `target` names (M: the dummy, nothing
    written), bits copied; `dt`: the data's type. `lead`: 1 where `result` starts with the
    scan's lead item (`scatter_write.with_lead`), its length then `result_length`; `dummy`:
    whether any target is the dummy M."""
    if result_length is None:
        result_length = K
    # float max / min and none: a Gather from [data; results] (no float Where: it would turn
    # -0.0 into +0.0) at M + (result index) where an update lands, at m where none does
    if isinstance(M, int) and isinstance(K, int) and M + K + 1 < 2**24:
        # the slots numbered from M on are their own Gather index (sorted update i at M + i,
        # M + 1 + i with the lead item): 0 where no update lands, and Max with m, which is
        # below M, picks m there and the slot elsewhere — exact in float32 below 2^24
        B = unpool_slots(e, target, K, M, start=M + lead, dummy=dummy)
        idx = e.op("Max", B, sizes.iota(e, M, np.float32))
        source = e.op("Concat", flat, result, axis=0)
        return e.take(source, e.cast(idx, ir.DataType.INT32))
    # sizes known at run time (or past float32's integers): slot A >= 1 is result A − 1, or
    # result A where the results have the lead item. So the results come first, behind one
    # dummy item where they have no lead, and A itself is the index; the data follows, at
    # m + R (R = the items before it, a size on the CPU): Where(A > 0, A, m + R), int32 indices
    # (K < 2^24 and M + K + WRITE_SLACK < 2^31 guarded: a float -> int32 Cast, never a 64-bit
    # one). No device-side offset to add to A (a Range and an Add where the data came first).
    A = unpool_slots(e, target, K, M)
    mark = e.op("Greater", A, e.const(np.float32(0)))
    head = [result] if lead else [e.const(np.zeros(1, dtype=dt.numpy())), result]
    R = sizes.add(e, result_length, 1 - lead)
    idx = e.op(
        "Where",
        mark,
        e.cast(A, ir.DataType.INT32),
        sizes.iota(e, M, np.int32, start=R),
    )
    return e.take(e.op("Concat", *head, flat, axis=0), idx)
