"""The lowered scatter's core (scatter.py): fold each run of equal positions and write the
results into the data — steps 2 and 3 of scatter.py's docstring — plus the reduction's identity
and ORT's sequential float max / min rule.
"""

from __future__ import annotations

import numpy as np
import onnx_ir as ir

from . import sizes
from ._base import FLOATS
from .emitter import Emitter
from .scatter_guard import MAX_SLOTS
from .scatter_lean import (
    block_fold,
    choose,
    float_max_min,
    integer_add,
    integer_max_min,
    not_last,
    select_write,
    sort_by,
    take,
    unpool_slots,
    write_target,
)
from .segscan import (
    BLOCK,
    fold_step,
    keep_step,
    segmented_scan,
)
from .sizes import Size

REDUCE_OPS = {"add": "Add", "mul": "Mul", "max": "Max", "min": "Min"}


def identity_of(red: str, dt: ir.DataType) -> np.ndarray:
    np_dt = dt.numpy()
    if red == "add":
        v = -0.0 if dt in FLOATS else 0  # x + (-0.0) == x bit for bit, -0.0 included
    elif red == "mul":
        v = 1
    elif dt in FLOATS:
        v = -np.inf if red == "max" else np.inf
    else:
        info = np.iinfo(np_dt)
        v = info.min if red == "max" else info.max
    return np.asarray([v], dtype=np_dt)


def max_min_sequential(
    e: Emitter,
    flat: ir.Value,
    spos: ir.Value,
    svals: ir.Value,
    not_first: ir.Value,
    K: Size,
    red: str,
    dt: ir.DataType,
    block: int,
    lead: Size | None = None,
) -> ir.Value:
    """Per sorted update k: ONNX Runtime's sequential max/min of the data item and the updates
    of k's run up to k (exact at each run's last element, which is all the caller reads).

    The CPU kernel (onnxruntime/core/providers/cpu/tensor/scatter.cc, `Max`/`Min` functors)
    keeps the current value only if it compares strictly greater (max) / smaller (min) than the
    update, else takes the update: a NaN is replaced by the next item, ties go to the later item
    (the sign of a zero survives). That fold is not associative — (a ⊕ NaN) ⊕ b is b, a ⊕ (NaN ⊕
    b) is a ⊕ b — but it is wherever a NaN can only be the first item of what is folded: a NaN
    followed by b gives b either way, as if nothing came before the NaN. So:

    * the data item is folded into the first update of its run (one strict compare, a
      bit-copying pick), so the run is K items, not 2K;
    * segments start at the first of each run and at each NaN (a NaN is the only item of its
      segment that can be one), and the item after a NaN continues the NaN's segment: the step
      replaces the NaN by it. A run whose last update is NaN ends in a segment of that NaN
      alone, which gives that NaN;
    * one segmented scan with the sequential step over those segments (associative without NaN:
      the last of the items equal to the max / min).

    The scan reads the segments as flags (continues = not first, not NaN). `lead` (a length):
    the scan's input and result are in the layout of `with_lead`; None: K items. (float32 and
    float16 take the sorts of `scatter_lean.float_max_min` instead; this is float64's and
    bfloat16's rule.)
    """
    compare = "Greater" if red == "max" else "Less"
    neutral = e.const(
        np.asarray([-np.inf if red == "max" else np.inf], dtype=dt.numpy())
    )
    d = e.take(flat, spos)
    take_data = e.op("And", e.op("Not", not_first), e.op(compare, d, svals))
    items = choose(e, svals, d, take_data, K)
    bound = sizes.upper_bound(K, MAX_SLOTS)
    # continues = not first and not NaN: the flags the scan reads, no ids; laid out with the
    # lead item (`with_lead`) of `lead` items in all, where that is given
    cont = e.op("And", not_first, e.op("Not", e.op("IsNaN", svals)))
    if lead is None:
        return segmented_scan(
            e,
            items,
            K,
            bound,
            keep_step(compare),
            neutral,
            block=block,
            cont=cont,
        )
    cont = with_lead(e, cont, K, lead, e.const(np.zeros((), dtype=bool)))
    return segmented_scan(
        e,
        with_lead(e, items, K, lead, neutral),
        lead,
        sizes.upper_bound(lead, MAX_SLOTS + block),
        keep_step(compare),
        neutral,
        block=block,
        cont=cont,
        aligned=True,
    )


def lead_length(e: Emitter, K: Size, block: int) -> Size:
    """Length of the scan's input with the lead item: K + 1 rounded up to whole blocks."""
    return sizes.mul(e, sizes.ceil_div(e, sizes.add(e, K, 1), block), block)


def with_lead(e: Emitter, x: ir.Value, K: Size, Kp: Size, fill: ir.Value) -> ir.Value:
    """x (K items) as the scan's input: one `fill` item first, `fill` after to length Kp
    (`fill`: one element; the values, or their run flags with a False fill).

    The lead item is why: its index in the scanned result is the slot number MaxUnpool writes
    (slot s ≥ 1 is sorted update s − 1, at index s; 0, where no update lands, reads the lead
    item), so the write gathers from the scan's own output at the slot — no Slice of the padding
    and no Concat of a first item, two full-size passes a padded scan used to take."""
    pads = sizes.concat(e, [1, sizes.sub(e, Kp, sizes.add(e, K, 1))])
    if fill.shape is None or len(fill.shape) != 0:
        fill = e.reshape(fill, [])  # Pad's value is a scalar
    return e.op("Pad", x, pads, fill, mode="constant")


def scatter_flat(
    e: Emitter,
    flat: ir.Value,
    pos: ir.Value,
    vals: ir.Value,
    K: Size,
    M: Size,
    red: str,
    dt: ir.DataType,
    block: int = BLOCK,
    row: Size | None = None,
    ascending: bool = True,
    unique: bool = False,
) -> ir.Value:
    """Scatter K values at flat positions into the M-element 1-D `flat`.

    `row`: the positions come in rows of this length whose ranges are disjoint and increasing
    (a ScatterElements along the last axis: each row of indices writes one row of the data, rows
    in row-major order), so sorting each row sorts them all — a TopK along the rows instead of
    over all K (measured on ORT's CPU EP at [1000, 1000]: 58 ms instead of 70 single-threaded,
    and the rows are spread over the intra-op threads). Not `ascending`: the rows' ranges are
    disjoint only (the scatter axis moved last, `scatter_clean.rows_of`: the block folds alone,
    `folds_by_blocks`). `unique`: no position repeats (`scatter.distinct_positions`), or the
    MaxUnpool that writes runs on ORT's CPU kernel, in order (WebGPU), so a write without a
    reduction needs no sort."""
    lean = _lean(e, flat, pos, vals, K, M, red, dt, row, ascending)
    if lean is not None:
        return lean
    fold = None  # (op, run folds with the lead item): the data is combined at the write
    lead = 0  # 1 where `result` has the lead item
    result_length: Size = K  # its items
    if red == "none" and unique:
        target, result = pos, vals
    elif red == "none":
        # ONNX leaves repeated indices undefined without a reduction; ORT's CPU kernel keeps the
        # last update in row-major order (scatter.cc). The DML EP's MaxUnpool, like its own
        # scatter ("no guarantee of which last write wins": DML_SCATTER_OPERATOR_DESC), orders
        # no writes to one position — on the lane thousands of 180,000 repeated positions came
        # out wrong, differently each run (docs/dml-lane.md) — so the write must not see a
        # position twice: a stable sort by position (TopK keeps equal keys in index order)
        # lists each run in update order, and all but its last update write the dummy
        spos, perm = sort_by(e, pos, K, row)
        result = take(e, vals, perm, row)
        target = write_target(e, spos, not_last(e, spos, K), M)
    else:
        # sort the int32 positions themselves (exact: M + K < 2^31 is checked), no float Cast.
        # TopK keeps equal keys in index order (ONNX spec), so each run lists its updates in order.
        spos, perm = sort_by(e, pos, K, row)
        svals = take(e, vals, perm, row)
        # same[i]: element i + 1 continues element i's run (K − 1 flags, from two views of spos)
        same = e.op(
            "Equal",
            e.op("Slice", spos, e.i64([1]), e.i64([2**62]), e.i64([0])),
            e.op("Slice", spos, e.i64([0]), e.i64([-1]), e.i64([0])),
        )
        no = e.const(np.zeros(1, dtype=bool))
        is_last = e.op("Not", e.op("Concat", same, no, axis=0))
        Kp = lead_length(e, K, block)
        if red in ("max", "min") and dt in FLOATS:
            not_first = e.op("Concat", no, same, axis=0)
            if not isinstance(K, int):
                # K = 0 at run time: one flag too many (same has 0, not −1)
                not_first = e.op(
                    "Slice", not_first, e.i64([0]), sizes.tensor(e, K), e.i64([0])
                )
            # the lead layout saves the scan's Slice where it pads; where K is whole blocks
            # it would add a Pad (the select write reads the results at any offset)
            aligned = isinstance(K, int) and K % block == 0
            result = max_min_sequential(
                e,
                flat,
                spos,
                svals,
                not_first,
                K,
                red,
                dt,
                block,
                lead=None if aligned else Kp,
            )
            lead = 0 if aligned else 1
            result_length = K if aligned else Kp
        else:
            op = REDUCE_OPS[red]
            identity = e.const(identity_of(red, dt))
            # the lead item and the first update start runs; same[i] says whether update i + 1
            # continues update i's (max(K − 1, 0) flags, for K = 0 too)
            tail = sizes.sub(e, Kp, sizes.add(e, sizes.maximum(e, K, 1), 1))
            cont = e.op(
                "Pad",
                same,
                sizes.concat(e, [2, tail]),
                e.const(np.zeros((), dtype=bool)),
                mode="constant",
            )
            scanned = segmented_scan(
                e,
                with_lead(e, svals, K, Kp, identity),
                Kp,
                sizes.upper_bound(Kp, MAX_SLOTS + block),
                fold_step(op, dt in FLOATS),
                identity,
                block=block,
                cont=cont,
                aligned=True,
            )
            fold = (op, scanned)
        target = e.op("Where", is_last, spos, sizes.on_device(e, M, np.int32))
    if fold is not None:
        # add, mul and integer max / min: data op (its run's fold, or the op's identity where no
        # update lands — x op identity == x bit for bit), one Gather at the slot number itself
        op, scanned = fold
        A = unpool_slots(e, target, K, M)
        contrib = e.take(scanned, e.cast(A, ir.DataType.INT32))
        return e.op(op, flat, contrib)
    # float max / min and none: the results, or the data where no update lands
    return select_write(
        e, flat, result, target, K, M, dt, lead, result_length, dummy=not unique
    )


#: integer types the DML EP's CumSum takes (dml kernel table): the prefix-sum add
_CUMSUM_INTS = (
    ir.DataType.INT32,
    ir.DataType.INT64,
    ir.DataType.UINT32,
    ir.DataType.UINT64,
)
#: float types of the sort-based max / min (IsNaN on the DML EP: float and float16) and of the
#: block sums (float16 summed in float32)
_SORTED_FLOATS = (ir.DataType.FLOAT, ir.DataType.FLOAT16)
#: types of the block products: float16 in float32 by ReduceProd; the integers by halving Muls,
#: not ReduceProd, which on ORT's CPU EP saturates an int32 product at INT32_MAX (measured, 1.31)
#: where the scatter's product wraps (blocksum.INTEGER_PRODUCT)
_INTEGER_PRODUCTS = (
    ir.DataType.INT32,
    ir.DataType.INT64,
    ir.DataType.UINT32,
    ir.DataType.UINT64,
)
_PRODUCTS = (ir.DataType.FLOAT, ir.DataType.FLOAT16, *_INTEGER_PRODUCTS)
#: static updates above which an integer product takes the segmented scan again: the halving
#: blocks dispatch 97 kernels fewer (78 against 175) and write 18.6 full-size passes more (45.1
#: against 26.5: cost.SCATTER_KERNELS, cost.SCATTER_PASSES), and cost.DEVICE (10 µs a dispatch,
#: 200 GB/s) puts the crossover at about 2.6 million int32 updates; 2^21 stays below it
INTEGER_PRODUCT_LIMIT = 2**21


def folds_by_blocks(red: str, dt: ir.DataType, K: Size) -> bool:
    """Does `scatter_flat` fold this reduction by blocks (`scatter_lean.block_fold`)? Its last
    level can end on row ends (`blocksum.plan`), so scatter.py hands it rows along any axis."""
    if red == "add":
        return dt in _SORTED_FLOATS
    long_product = isinstance(K, int) and K > INTEGER_PRODUCT_LIMIT
    return (
        red == "mul"
        and dt in _PRODUCTS
        and not (dt in _INTEGER_PRODUCTS and long_product)
    )


def _lean(
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
) -> ir.Value | None:
    """The sort / prefix-sum fold of `scatter_lean.py` where it is exact for this reduction and
    type, else None (the segmented scan below)."""
    if red == "add" and dt in _CUMSUM_INTS:
        return integer_add(e, flat, pos, vals, K, M, dt, row)
    if folds_by_blocks(red, dt, K):
        return block_fold(e, flat, pos, vals, K, M, red, dt, row, ascending)
    if red in ("max", "min") and dt not in FLOATS:
        identity = e.const(identity_of(red, dt))
        return integer_max_min(e, flat, pos, vals, K, M, red, identity, row)
    if red in ("max", "min") and dt in _SORTED_FLOATS:
        return float_max_min(e, flat, pos, vals, K, M, red, dt, row)
    return None
