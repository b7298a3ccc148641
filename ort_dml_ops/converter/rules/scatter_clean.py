"""The scatter lowering for a target that lacks the DML-shaped graph's int32 / bool kernels.

ONNX Runtime's WebGPU plugin (onnxruntime-ep-webgpu 0.4.0, recorded in
`targets/data/webgpu_0.4.0.json`) sorts float / float16 keys only (TopK), and has no MaxUnpool,
no Slice of int32 or bool, no Concat / Pad / Split of bool, no IsNaN and no Or: each of those
in a lowered scatter is a CPU node with host↔device copies around it (55–59 per run, measured).
This variant is built from kernels the plugin has, for float32 / float16 data:

1. the int32 flat positions (`scatter.py`) become float32 sort keys — exact while every
   position is below 2^24 (M ≤ 2^24: checked, at run time where M is symbolic);
2. ScatterElements are sorted row by row: the scatter axis is moved last (a Transpose of the
   positions and the updates unless it is last already) and TopK sorts each row. Rows write
   disjoint position sets, so equal positions end up adjacent, each run in update order:
   ORT's WebGPU TopK breaks ties by the lower index (a (value, index) key in its bitonic sort,
   onnxruntime/core/providers/webgpu/math/top_k.cc; verified on lavapipe for rows of 1000 and
   for 2^20 keys in one row). A row of ≤ 2048 keys is one shared-memory dispatch there, where
   one row of K = 1e6 keys would take ~210 global-memory steps. ScatterND sorts all K keys;
3. run flags from the float keys (Pad and Slice of float32, Equal); add and mul fold each run
   by blocks of masked reductions (`blocksum.py`, float keys); max and min follow ORT's
   sequential rule by sorts (`sorted_max_min`, with `x == x` for IsNaN);
4. write: one ScatterElements (reduction none, a kernel the plugin has) of each run's last
   result into the data padded by one dummy element; every other sorted update writes to that
   dummy (position M), which a negative Pad crops off (the plugin's Slice takes float types
   only). Only run ends land inside the data, so no two writes race where it matters.

Without a reduction nothing is sorted from opset 18 (`last_writes`): a ScatterElements with
reduction max of the update numbers finds each position's last writer, and every update writes
its position's winner's value. Before 18 the positions are sorted, but not the values: each
sorted update's target (its position, or the dummy) goes back to the update's own place by one
ScatterElements along the sort's permutation (`_unsorted`), and the updates are written as
they are. Neither moves a value through a float-only kernel, so int32 and uint32 data take
both: the DML-shaped graph of int32 data puts MaxUnpool, int Slices and bool And on the CPU EP
there, 6 copies a run at run-time sizes where this has the one of the indices' upload
(tools/lowering_budget.py).

The values follow the same rules as the DML-shaped graph's: float max / min and none bit-exact
against ORT's sequential kernel, float add / mul within the block folds' stated bound
(`blocksum.py`).
"""

from __future__ import annotations

import numpy as np
import onnx_ir as ir

from . import blocksum, sizes
from .emitter import Emitter
from .scatter_lean import as_rows, choose, not_last, previous, take
from .segscan import prefix_count
from .sizes import Size

#: targets that take this variant
CLEAN_TARGETS = frozenset({"webgpu"})
#: float32 holds every integer up to 2^24 exactly: the largest data size whose positions sort as
#: float32 keys
MAX_FLOAT_KEY = 2**24
_DATA_TYPES = (ir.DataType.FLOAT, ir.DataType.FLOAT16)
#: data types of a write without reduction, which folds nothing and moves values only through
#: the plugin's ScatterElements, Gather and Pad (targets/data/webgpu_0.4.0.json)
_WRITE_TYPES = (*_DATA_TYPES, ir.DataType.INT32, ir.DataType.UINT32)


def takes(dtype: ir.DataType | None, red: str) -> bool:
    """Does the clean variant compute `dtype` data with reduction `red`? The float types with
    any reduction; without one int32 and uint32 too (the module docstring). Other types have
    no kernel here: the rule refuses them on a clean target (code `host-type`), where the
    DML-shaped graph of int64 or float64 data copied 2 to 49 times a run and ORT's CPU kernel
    none (the inputs are on the host already)."""
    return dtype in (_WRITE_TYPES if red == "none" else _DATA_TYPES)


def applies(
    target: str,
    dtype: ir.DataType | None,
    M: Size | None,
    red: str,
) -> bool:
    """Does the clean variant replace the DML-shaped graph? (A static M above 2^24 keeps the
    old graph, whose int32 keys are exact to 2^31.) `M`: the data's element count, a run-time
    value or None where it is not static. `red`: the scatter's reduction (`takes`)."""
    return (
        target in CLEAN_TARGETS
        and takes(dtype, red)
        and (not isinstance(M, int) or M <= MAX_FLOAT_KEY)
    )


def size_guard(e: Emitter, M: Size) -> ir.Value | None:
    """M ≤ 2^24 where M is only known at run time (float32 keys exact)."""
    if isinstance(M, int):
        return None
    return e.op("Less", M, e.i64([MAX_FLOAT_KEY + 1]))


def rows_of(
    e: Emitter,
    pos: ir.Value,
    updates: ir.Value,
    idims: list[Size],
    axis: int,
) -> tuple[ir.Value, ir.Value, Size]:
    """ScatterElements' positions (in the indices' shape) and updates as rows along the scatter
    axis ([rows, dim]): a Transpose moves the axis last where it is not last already. A
    zero-length axis is read as rows of 1 (no element either way; Reshape cannot infer the row
    count of [-1, 0])."""
    rank = len(idims)
    row = sizes.maximum(e, idims[axis], 1)
    if axis != rank - 1:
        perm = [d for d in range(rank) if d != axis] + [axis]
        # the shape where static and the axis not empty: `as_rows` then adds no Reshape to a
        # 2-D one (a Reshape to its own shape after a Transpose: see there)
        moved = [d for d in (idims[p] for p in perm) if isinstance(d, int)]
        shape = moved if len(moved) == rank and row == idims[axis] else None
        pos = e.op("Transpose", pos, perm=perm, shape=shape)
        updates = e.op("Transpose", updates, perm=perm, shape=shape)
    return as_rows(e, pos, row), as_rows(e, updates, row), row


#: the first opset whose ScatterElements takes reduction max (`last_writes`)
SCATTER_MAX_OPSET = 18


def writes_last(red: str, opset: int) -> bool:
    """Does the clean variant scatter `red` by `last_writes` (no sort) at this opset? The
    rule (scatter.py) and the cost model (cost.py) both ask."""
    return red == "none" and opset >= SCATTER_MAX_OPSET


def last_writes(
    e: Emitter, flat: ir.Value, pos: ir.Value, vals: ir.Value, K: Size, M: Size
) -> ir.Value:
    """Reduction none, as ORT's CPU kernel does it: where several updates share a position, the
    last in the indices' row-major order lands (onnxruntime/core/providers/cpu/tensor/
    scatter.cc writes them in that order). No sort: each position's last writer is the largest
    update number aimed at it, which one ScatterElements with reduction max finds (int32
    atomics in the plugin's shader, exact whatever order they run in); then every update
    writes that winner's value, so updates racing for one position write the same bits.
    Kernels: the winners (an Expand of −1, which ORT folds where M is static, and the max
    scatter), two Gathers, the write: 5 with static sizes, against the sort's 13 (TopK, its run
    flags and the dummy slot). Positions are < M
    (the graph's guard fails the run otherwise); `pos` and `vals` are 1-D, K items."""
    numbers = sizes.iota(e, K, np.int32)
    won = largest_at_position(e, pos, numbers, M)
    return e.op("ScatterElements", flat, pos, e.take(vals, won), axis=0)


def largest_at_position(
    e: Emitter, pos: ir.Value, numbers: ir.Value, M: Size
) -> ir.Value:
    """For each of the K items, the largest of `numbers` (int32, ≥ −1) among the items at its
    position: one ScatterElements with reduction max into an Expand of −1 (the plugin's int32
    atomics, exact in any order; opset 18), read back by a Gather (the plugin's GatherElements
    takes float data only). `pos`: int32 positions < M, 1-D."""
    nobody = e.op("Expand", e.const(np.asarray([-1], np.int32)), sizes.concat(e, [M]))
    largest = e.op("ScatterElements", nobody, pos, numbers, axis=0, reduction="max")
    return e.op("Gather", largest, pos, axis=0)


def scatter_clean(
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
    """Scatter K values at int32 positions into the M-element 1-D `flat` (see the module
    docstring). `row`: `pos` and `vals` are [rows, row] (from `rows_of`), sorted row by row;
    None: 1-D, sorted whole. `ascending`: the rows sorted one after another are sorted whole
    (false where `rows_of` moved the axis: equal keys are adjacent, no more)."""
    keys = e.cast(pos, ir.DataType.FLOAT)  # exact: positions < M ≤ 2^24
    if red in ("max", "min"):
        return sorted_max_min(e, flat, keys, vals, K, M, red, dt, row)
    if red != "none" and dt == ir.DataType.FLOAT16:  # add, mul: folded in float32
        vals = e.cast(vals, ir.DataType.FLOAT)
    if red == "add":  # −0.0 updates change no sum: to the dummy position (blocksum.py)
        keys = blocksum.drop_negative_zeros(
            e, keys, vals, sizes.on_device(e, M, np.float32)
        )
    if row is None:
        # 1-D, said so: `Emitter.take` then reads the order as it is, where a Reshape of the
        # int64 order would run on the CPU (the plugin's Reshape takes no int64): two copies
        length = K if isinstance(K, int) else None
        sk, perm = e.op(
            "TopK",
            keys,
            sizes.tensor(e, K),
            outputs=2,
            largest=0,
            sorted=1,
            axis=0,
            shape=[length],
        )
    else:
        sk, perm = e.op(
            "TopK", keys, sizes.tensor(e, row), outputs=2, largest=0, sorted=1, axis=1
        )
        sk = e.reshape(sk, [-1])
    spos = e.cast(sk, ir.DataType.INT32)
    # a run's earlier updates go to the dummy (the Where's branches swapped: no Not)
    going_on = not_last(e, sk, K, np.float32)
    target = e.op("Where", going_on, sizes.on_device(e, M, np.int32), spos)
    if red == "none":
        # the targets back in the updates' order, which are written as they are
        target, result = _unsorted(e, target, perm, row), e.reshape(vals, [-1])
    else:  # add, mul (max and min returned above)
        svals = (
            e.take(vals, perm)
            if row is None
            else e.reshape(e.op("GatherElements", vals, perm, axis=1), [-1])
        )
        bound = sizes.upper_bound(K, MAX_FLOAT_KEY)
        fold = blocksum.fold_of(red, ascending, target=e.ctx.target)
        folded = blocksum.run_folds(
            e, sk, svals, K, bound, fold, key_dtype=np.float32, row=row
        )
        if not (isinstance(K, int) and blocksum.exact_length(K, fold, row)):
            folded = e.op("Slice", folded, e.i64([0]), sizes.tensor(e, K), e.i64([0]))
        if dt == ir.DataType.FLOAT16:
            folded = e.cast(folded, dt)
        # the dummy's updates read the padding's 0 (position M): never written back
        result = e.op(fold.op, e.take(_padded(e, flat, dt), spos), folded)
    written = e.op("ScatterElements", _padded(e, flat, dt), target, result, axis=0)
    return _without_dummy(e, written, dt)


def _unsorted(
    e: Emitter, target: ir.Value, perm: ir.Value, row: Size | None
) -> ir.Value:
    """`target` (1-D, in the sort's order) in the order before the sort: item perm[s] gets
    target[s], by one ScatterElements along the permutation (every item written once; into
    `target` itself, any tensor of its shape would do). For a write without reduction, whose
    values then need no gather: the plugin's GatherElements takes float types only."""
    if row is None:
        return e.op("ScatterElements", target, perm, target, axis=0)
    rows = e.reshape(target, sizes.concat(e, [-1, row]))
    return e.reshape(e.op("ScatterElements", rows, perm, rows, axis=1), [-1])


def sorted_max_min(
    e: Emitter,
    flat: ir.Value,
    keys: ir.Value,
    vals: ir.Value,
    K: Size,
    M: Size,
    red: str,
    dt: ir.DataType,
    row: Size | None,
) -> ir.Value:
    """ORT's sequential float max / min by sorts, bit for bit, in the plugin's kernels: the
    construction of `scatter_lean.float_max_min` (its docstring gives the rule) with float32
    keys, `x == x` for IsNaN and ScatterElements for MaxUnpool.

    1. a stable sort by position lists each run in update order; the data folds into each run's
       first update (one strict compare, a bit-copying pick);
    2. groups start at each run's first update and at each NaN; the run's winner is in its
       last group, whose start one ScatterElements max finds per position (before opset 18,
       which has no reduction max, the groups are numbered by a prefix count instead);
    3. NaNs and the updates before the last group get the key ∓∞, the others their value; a
       sort by that key, then a stable one by position, ends each run with its winner, which
       is written at the run's position."""

    def sort(
        k: ir.Value, largest: bool = False, any_value: bool = False
    ) -> tuple[ir.Value, ir.Value]:
        axis, count = (0, K) if row is None else (1, row)
        if any_value:  # keys that may reach ∓max: padded by us, after every real key
            k = _padded_to_power_of_two(e, k, count, axis, largest, dt)
        return e.op(
            "TopK",
            k,
            sizes.tensor(e, count),
            outputs=2,
            largest=int(largest),
            sorted=1,
            axis=axis,
        )

    def flat1(x: ir.Value) -> ir.Value:
        return x if row is None else e.reshape(x, [-1])

    # 1. runs in update order; the data folds into each run's first update
    sk, by_pos = sort(keys)
    spos = flat1(sk)
    svals = take(e, vals, by_pos, row)  # as rows already: `as_rows`
    at = e.cast(spos, ir.DataType.INT32)
    d = e.take(flat, at)
    # a run starts where the position changes (rows moved by `rows_of` need not ascend from
    # one row to the next, but their positions are disjoint)
    same_run = e.op("Equal", spos, previous(e, spos, K, np.float32))
    first = e.op("Not", same_run)
    compare = "Greater" if red == "max" else "Less"
    items = choose(e, svals, d, e.op("And", first, e.op(compare, d, svals)), K)
    # 2. the run's last group: from its last NaN on, or the whole run. Groups start at each
    # run's first update and at each NaN (the plugin has no IsNaN and no Or: a group goes on
    # where the update is not first and equals itself); the last start of each position is
    # the largest start number aimed at it (`largest_at_position`) — where a prefix count of
    # the starts would be a CumSum, whose WebGPU kernel reads the whole prefix for every item
    # (5 s at 90,000 items)
    number = e.op("Equal", items, items)
    goes_on = e.op("And", same_run, number)
    if e.opset >= 18:
        numbers = sizes.iota(e, K, np.int32)
        start_numbers = e.op("Where", goes_on, e.i32(-1), numbers)
        last_start = largest_at_position(e, at, start_numbers, M)
        in_last = e.op("GreaterOrEqual", numbers, last_start)
        keyed = e.op("And", in_last, number)
        then = sk  # the groups left are the runs: positions
    else:  # no reduction max before opset 18 (a DOMAIN scatter): groups numbered by a count
        keyed = number
        starts = e.cast(e.op("Not", goes_on), ir.DataType.FLOAT)
        then = prefix_count(e, starts, K, ir.DataType.FLOAT)
        if row is not None:
            then = e.reshape(then, sizes.concat(e, [-1, row]))
    # 3. by key (min: descending), then stably by group: each run's winner comes last. NaNs
    # (and from opset 18 the updates before the last group) get the key ∓∞: the stable sorts
    # keep them in update order, before the group's own ∓∞ start, which so wins only where
    # nothing follows it
    far = e.const(np.asarray(-np.inf if red == "max" else np.inf, dtype=dt.numpy()))
    by_key_keys = e.op("Where", keyed, items, far)
    if row is not None:
        by_key_keys = e.reshape(by_key_keys, sizes.concat(e, [-1, row]))
    _, by_key = sort(by_key_keys, largest=red == "min", any_value=True)
    group_keys = e.op("GatherElements", then, by_key, axis=0 if row is None else 1)
    _, by_group = sort(group_keys)
    # (two gathers each: the plugin's GatherElements takes no int64 data to compose the orders)
    wpos = take(e, take(e, spos, by_key, row), by_group, row)
    winners = take(e, take(e, items, by_key, row), by_group, row)
    m = sizes.on_device(e, M, np.float32)
    target = e.cast(
        e.op("Where", not_last(e, wpos, K, np.float32), m, wpos), ir.DataType.INT32
    )
    written = e.op("ScatterElements", _padded(e, flat, dt), target, winners, axis=0)
    return _without_dummy(e, written, dt)


def _padded(e: Emitter, flat: ir.Value, dt: ir.DataType) -> ir.Value:
    """The data with one dummy element after it (position M: written, then sliced off)."""
    zero = e.const(np.zeros((), dtype=dt.numpy()))
    return e.op("Pad", flat, e.i64([0, 1]), zero, mode="constant")


def _without_dummy(e: Emitter, written: ir.Value, dt: ir.DataType) -> ir.Value:
    """The written data without its dummy element (`_padded`): a negative Pad, which the
    plugin crops by (blockscan_symbolic.crops) for every type its Pad takes, where its Slice
    takes float types only."""
    zero = e.const(np.zeros((), dtype=dt.numpy()))
    return e.op("Pad", written, e.i64([0, -1]), zero, mode="constant")


def _padded_to_power_of_two(
    e: Emitter,
    keys: ir.Value,
    count: Size,
    axis: int,
    largest: bool,
    dt: ir.DataType,
) -> ir.Value:
    """`keys` (count along `axis`, the last axis) padded to a power of two with ∓inf, the end
    a TopK of `largest` sorts last, so that ORT's WebGPU TopK adds no padding of its own.

    That kernel sorts rows of a power-of-two length: it pads each row with −max (largest) or
    +max (smallest) at index −1, and its (value, index) key puts that padding first among equal
    values (onnxruntime/core/providers/webgpu/math/top_k.cc, TopKProgram / TopKInitProgram). A
    real key equal to the padding's value, or beyond it (∓inf), then sorts after the padding,
    and a TopK of all `count` keys returns index −1 in its place (measured on the plugin,
    onnxruntime-ep-webgpu 0.4.0). Our padding comes after every real key, equal ones included,
    and the TopK keeps only the first `count`: the order of the real keys is ONNX's."""
    extra = sizes.sub(e, sizes.power_of_two_at_least(e, count), count)
    if isinstance(extra, int) and extra == 0:
        return keys
    before_end: list[Size] = [0] * (2 * (axis + 1) - 1)
    pads = sizes.concat(e, [*before_end, extra])
    end = e.const(np.asarray(-np.inf if largest else np.inf, dtype=dt.numpy()))
    return e.op("Pad", keys, pads, end, mode="constant")
