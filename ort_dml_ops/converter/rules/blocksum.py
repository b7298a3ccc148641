"""Segmented sums of sorted runs in a handful of kernels: blocks of masked reductions, the float
scatter-add's fold (issue 28: a GPU pays every kernel as a dispatch, so count kernels too).

Input: keys (1-D, equal keys adjacent: the sorted scatter positions, int32 or float32) and their
float values. Output: item i holds the sum of its run's values from the run's first item up to
i, exact in the sense below at each run's last item — the only items the scatter reads.

Construction, for n items viewed as [n/B, B] blocks:

1. in-block sums: Equal of each block's keys against themselves ([n/B, B, B] flags), a Where
   that keeps the values of the same run (+0.0 elsewhere) and one ReduceSum — three kernels
   for the whole level, whatever B. At the top the full same-run mask gives each item its run's
   sum within the block, which is the run's prefix at the run's last item in the block. Below
   the top the mask is And-ed with the lower triangle (j ≤ i): a block end is read in the
   middle of its run where the run goes on past the block (step 3), so it needs its prefix;
2. the block ends (last key and last sum of each block) are n/B items of the same problem,
   solved the same way one level down: the sum of the run so far at each block end;
3. carry: an item whose key equals the previous block's last key adds that block end's sum.

A level of at most `LAST` items is one block, with no carry. Where n is known only at run time
the top is padded to whole blocks of every level, so the last level holds a run-time count of
at most `LAST` items: one block of exactly those, its masks cut from `LAST` × `LAST` constants
by one Slice (`_sliced_masks`; on WebGPU a sum's bool masks are padded to `LAST` instead).

A level whose blocks all end where runs end needs no carry either: where the items come in
rows that no run crosses (a scatter's rows along its axis: each row of indices writes its own
row of the data), an item of a level stands for W items of the top (the product of the widths
above), so blocks of f of them end on row ends wherever W · f is a whole number of rows
(`plan`'s `last`). At 300 × 300 updates in rows of 300: blocks of 6, then blocks of 50 ends
(one row each) — 14 kernels of sums where 8, 30 and one block of 375 took 25.

Each other level costs the block's
three or four kernels, two Slices for the ends, two Pads that shift them by one block, and
Equal, Where, Add for the carry. The widths (`plan`) trade kernels for bytes: the top level's
[n/B, B, B] mask is the largest tensor (B flags and B floats per item), and each level fewer is
ten dispatches fewer.

Values: a sum only ever adds values of its own run. The others are deselected by Where, never
multiplied by 0, so an inf or NaN of one run does not reach another; inf − inf and NaN give NaN
as ORT's sequential kernel does. The order is not ORT's (a block's ReduceSum, then the carries):
float sums may differ from ORT's CPU kernel in the last bits, as ORT's own GPU kernels do (the
CUDA EP reduces with atomics, in no fixed order: onnxruntime/core/providers/cuda/tensor/
scatter_elements_impl.cu). They are the same additions of the run's values (the deselected
+0.0 add nothing) in another tree, so the error bound is the sequential one: the tests check
(run length + 8) · ε · (|data| + Σ|updates|) against the exact sum, and ORT's CPU kernel
against the same bound.

Signed zeros: the deselected items are +0.0, and ORT's CPU Where turns a selected −0.0 into
+0.0 (measured, 1.31), so a run of −0.0 alone would sum to +0.0. The caller drops −0.0 values
first (`drop_negative_zeros`): x + −0.0 == x bit for bit, so no sum changes, and a run that held
only −0.0 leaves its data as ORT's kernel does.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable
from typing import NamedTuple

import numpy as np
import onnx_ir as ir

from . import cost, sizes
from .emitter import Emitter
from .sizes import Size

#: block width of the top level where n is only known at run time: its mask holds 8 flags and
#: 8 floats per item
FIRST = 8
#: block width below the top where n is only known at run time: 2^24 → 2^21 → 2^15 → 2^9
LEVEL_RUNTIME = 64
#: a level of at most this many items is one block ([1, LAST, LAST] flags: 256 Ki)
LAST = 512


class Aligned(NamedTuple):
    """A level's run-time n padded to whole blocks of it and of every level below it: n is
    `blocks` · `per` items, `blocks` the top's count of `per`-item units (`run_folds`)."""

    blocks: Size
    per: int


@dataclasses.dataclass(frozen=True)
class Fold:
    """How a level folds: `op` (Add or Mul), its reduction, its identity, and whether a
    selection must keep the values in Where's false branch (`flip`): ORT's CPU Where turns a
    selected −0.0 of its true branch into +0.0 (measured, 1.31), which a product would keep as
    a sign. A sum's −0.0 values are dropped before (`drop_negative_zeros`), and integers have
    no −0."""

    op: str
    reduce: str
    identity: float
    flip: bool
    ascending: bool = (
        True  # the keys are sorted (the flipped masks use it: `_other_or_after`)
    )
    #: the flipped masks are bools Or-ed: the target's EP runs Or (`fold_of`; the WebGPU
    #: plugin has none)
    or_masks: bool = True

    def mask_cost(self) -> tuple[int, int]:
        """(kernels, bytes per flag) of a flipped block's mask, as `_other_or_after` spells it:
        Less, Or; Equal, Not, Or for grouped keys; on WebGPU Add, Less (float32 keys); Sub,
        Abs, Max, Greater for grouped ones."""
        if self.or_masks:
            return (2, 2) if self.ascending else (3, 3)
        return (2, 5) if self.ascending else (4, 13)


SUM = Fold("Add", "ReduceSum", 0, False)
FLOAT_PRODUCT = Fold("Mul", "ReduceProd", 1, True)
#: integers multiply by halving Muls, not ReduceProd: ORT's CPU ReduceProd saturates an int32 or
#: int64 product (measured, 1.31) where the scatter's product wraps; two's-complement Mul wraps
#: on both EPs, and a product modulo 2^bits is the same in any order (bit-exact)
INTEGER_PRODUCT = Fold("Mul", "halving Mul", 1, False)


def fold_of(
    red: str, ascending: bool = True, integer: bool = False, target: str = "dml"
) -> Fold:
    """The fold of a scatter reduction (float add, float or `integer` mul); `ascending`: the
    sorted keys are in order, not only grouped in runs (a cheaper mask where the fold flips);
    `target`: which spelling of the flipped masks its kernels allow (`Fold.or_masks`: whether
    its kernel table has Or; ORT's CPU EP, which has no table here, has it)."""
    from ...targets import get_target

    if red == "add":
        return SUM
    if integer:
        return INTEGER_PRODUCT
    table = get_target(target).table
    has_or = table is None or bool(table.kernels("Or", ""))
    return dataclasses.replace(FLOAT_PRODUCT, ascending=ascending, or_masks=has_or)


def run_folds(
    e: Emitter,
    keys: ir.Value,
    vals: ir.Value,
    n: Size,
    bound: int,
    fold: Fold = SUM,
    key_dtype: type = np.int32,
    dtype: np.dtype | type = np.float32,
    spare: bool = False,
    row: Size | None = None,
) -> ir.Value:
    """Item i: the fold of its run's values up to i (read it at each run's last item). `bound`:
    a convert-time upper bound of n (n itself where static); `key_dtype`, `dtype`: the keys' and
    the values' types. The result has at least n items; with `spare`, at least n + 1 where n
    is only known at run time (an item for a caller's dummy, n = 0 included). `row`: the items
    are rows of this many that no run crosses (their keys differ), which a static plan may end
    on (`plan`)."""
    key_fill = e.const(np.asarray(-1, dtype=key_dtype))
    identity = e.const(np.asarray(fold.identity, dtype=dtype))
    widths, last = plan(n, fold, row)
    aligned = None
    if not isinstance(n, int):
        # a run-time n is padded once to whole blocks of every level (8 · 64 · 64 items): no
        # level below pads, and no size is computed per level (a Pad pair and five CPU nodes
        # each, against at most 32,767 items of +0.0 / 1 more to fold)
        unit = math.prod(widths)
        blocks = (
            e.op("Div", sizes.tensor(e, sizes.add(e, n, unit)), e.i64([unit]))
            if spare
            else sizes.ceil_div(e, n, unit)
        )
        padded = sizes.mul(e, blocks, unit)
        keys, vals = _pad(e, keys, vals, n, padded, key_fill, identity)
        n, aligned = padded, Aligned(blocks, unit)
    out, _ = _level(
        e,
        keys,
        vals,
        n,
        bound,
        widths,
        key_fill,
        identity,
        fold,
        aligned=aligned,
        last=last,
    )
    return out


def exact_length(n: int, fold: Fold = SUM, row: Size | None = None) -> bool:
    """Whether `run_folds` of a static n items returns exactly n (no padding at the top)."""
    widths, last = plan(n, fold, row)
    top = widths[0] if widths else last
    return top is None or n % top == 0


def drop_negative_zeros(
    e: Emitter, pos: ir.Value, vals: ir.Value, dummy: ir.Value, dtype: type = np.float32
) -> ir.Value:
    """The positions with every −0.0 value's sent to `dummy` (a position never written back).

    x + (−0.0) == x for every x, so a −0.0 update changes no sum; dropped, it cannot make a run
    of −0.0 sum to +0.0 (the module docstring). A value is −0.0 where t / x is −inf, t the
    smallest normal of the type: no finite non-zero x reaches it (|t / x| ≤ t / min subnormal,
    2^23 in float32), and NaN gives NaN."""
    tiny = e.const(np.asarray(np.finfo(dtype).tiny, dtype=dtype))
    ratio = e.op("Div", tiny, vals)
    minus_inf = e.const(np.asarray(-np.inf, dtype=dtype))
    return e.op("Where", e.op("Equal", ratio, minus_inf), dummy, pos)


def plan(
    n: Size, fold: Fold = SUM, row: Size | None = None
) -> tuple[tuple[int, ...], int | None]:
    """(widths, last): the block widths of the levels with a level below them, top level first,
    and the last level's block width — None where it is one block of at most `LAST` items; f
    where the items are rows of `row` (static) that no run crosses and the widths above make f
    of the last level's items whole rows (see the module docstring): its blocks end on row ends.

    Where n is static the widths are chosen by `cost.DEVICE`, which weighs each level's
    dispatches against the bytes its masks write: wide blocks mean fewer levels (fewer kernels),
    narrow ones smaller masks (fewer passes). At 300 × 300 updates that is 8 then 30 (30 divides
    the 11,250 block ends: no Pad pair); at 1000 × 1000, 5, 20 and 20 (56 kernels in all for a
    float add on the DML EP, where 8, 16 and 16 took 60). In rows of 300, blocks of 6 and a
    last level of blocks of 50 ends: 34 kernels for the float add where 8, 30 took 45; in rows
    of 1000, 5 and 8, then blocks of 25 ends (45 kernels). Where n is known only at run time:
    8, then 64 twice, which reaches 2^24 (the scatter's guarded limit)."""
    if not isinstance(n, int):
        return (FIRST, LEVEL_RUNTIME, LEVEL_RUNTIME), None
    return _static_plan(n, fold, row if isinstance(row, int) and row > 0 else None)


@functools.lru_cache(maxsize=256)
def _static_plan(
    n: int, fold: Fold, row: int | None
) -> tuple[tuple[int, ...], int | None]:
    """`plan` for a static n: some 300 candidate widths weighed (about 1 ms), so computed once
    per (n, fold, row) — `run_folds` and `exact_length` ask it for the same node."""
    best: tuple[float, tuple[tuple[int, ...], int | None]] | None = None
    # any width, not only powers of two (4 to 8 at the top, 8 to 64 below): one that divides a
    # level's count spares that level its Pad pair (`_plan_cost` weighs the padding) — except
    # for the halving products, which pad every block to a power of two themselves
    halving = fold is INTEGER_PRODUCT
    tops = (4, 8) if halving else range(4, 9)
    belows = (8, 16, 32, 64) if halving else range(8, 65)
    for top in tops:
        for below in belows:
            widths: list[int] = []
            m, span = n, 1  # this level's items, and the top's items each stands for
            while True:
                # blocks that end on row ends: the smallest f with span · f whole rows
                f = row // math.gcd(row, span) if row else None
                lasts: list[int | None] = []
                if f is not None and f <= min(m - 1, LAST):
                    lasts.append(f)
                if m <= LAST:
                    lasts.append(None)
                for last in lasts:
                    us = _plan_us(n, widths, last, fold)
                    if best is None or us < best[0]:
                        best = (us, (tuple(widths), last))
                if m <= LAST:
                    break
                widths.append(top if not widths else below)
                m, span = -(-m // widths[-1]), span * widths[-1]
    assert best is not None
    return best[1]


def _plan_us(n: int, widths: list[int], last: int | None, fold: Fold) -> float:
    """What `cost.DEVICE` puts on the folds of n items with these widths (`_plan_cost`)."""
    kernels, written = _plan_cost(
        n,
        widths,
        fold.mask_cost() if fold.flip else None,
        fold.flip and not fold.ascending,
        fold is INTEGER_PRODUCT,
        last,
    )
    return cost.DEVICE.device_us(kernels, written / (4 * max(n, 1)), 4 * max(n, 1), 0)


def _plan_cost(
    n: int,
    widths: list[int],
    flip: tuple[int, int] | None = None,
    grouped: bool = False,
    halving: bool = False,
    last: int | None = None,
) -> tuple[int, int]:
    """(kernels, bytes written) of the folds for n items with these widths, as `_level` emits
    them: a level's block (its mask — Equal, And below the top; with `flip`, the flipped mask's
    (kernels, bytes per flag), `Fold.mask_cost` — then Where and the reduction), its ends (two
    Slices), the shifted ends (two Pads), the carry (a compare, Where, the op), a Pad of keys
    and values where n is not whole blocks; then the last level, one block or blocks of `last`
    items (`plan`). `grouped`: keys not sorted (two more kernels in the flipped carry).
    `halving`: the integer product, whose reduction is log2(width) Split + Mul pairs
    (`_halving_product`)."""

    def block(items: int, width: int, top: bool) -> tuple[int, int]:
        if flip:
            mask_kernels, mask_bytes = flip
            return mask_kernels + 2, (mask_bytes + 4) * items * width + 4 * items
        kernels, written = (
            (3, 5 * items * width + 4 * items)
            if top
            else (4, 6 * items * width + 4 * items)
        )
        if halving:
            # the reduction is a Split and a Mul per halving (a Pad first to a power of two):
            # each halving writes its input once (Split) and half of it (Mul)
            steps = max(1, (width - 1).bit_length())
            kernels += 2 * steps - 1 + (width != 1 << steps)
            written += 6 * items * (1 << steps)
        return kernels, written

    kernels = written = 0
    for depth, width in enumerate(widths):
        padded = -(-n // width) * width
        if padded != n:
            kernels, written = kernels + 2, written + 8 * padded
        k, w = block(padded, width, depth == 0)
        ends = padded // width
        carry = 2 * grouped
        kernels, written = kernels + k + 7 + carry, written + w + 16 * ends + 9 * padded
        n = ends
    if last is None:
        k, w = block(n, n, not widths)
        return kernels + k, written + w
    padded = -(-n // last) * last
    if padded != n:
        kernels, written = kernels + 2, written + 8 * padded
    k, w = block(padded, last, not widths)
    return kernels + k, written + w


def _level(
    e: Emitter,
    keys: ir.Value,
    vals: ir.Value,
    n: Size,
    bound: int,
    widths: tuple[int, ...],
    key_fill: ir.Value,
    identity: ir.Value,
    fold: Fold,
    top: bool = True,
    aligned: Aligned | None = None,
    last: int | None = None,
) -> tuple[ir.Value, Size]:
    """(folds, their length ≥ n) for one level and everything below it. `widths`: this level's
    block width and those below (`plan`); `key_fill`: −1 in the keys' type (below every real
    key); `identity`: the fold's, in the values' type; `aligned`: n is whole blocks of this
    level and every level below (`run_folds` padded it), and how many; `last`: the last
    level's block width (`plan`; None: one block)."""
    if last is not None and not widths and isinstance(n, int):
        # blocks that end on row ends: no run goes on past one, so no level below
        whole = -(-n // last) * last
        if whole != n:
            keys, vals = _pad(e, keys, vals, n, whole, key_fill, identity, not top)
        block = _block_folds(e, keys, vals, last, not top, identity, fold, key_fill)
        return e.reshape(block, [-1]), whole
    if not widths or bound <= LAST:
        if (
            not isinstance(n, int)
            and aligned
            and not top
            and _sliced_masks(e, fold, key_fill)
        ):
            # n ≤ LAST items known at run time (`run_folds` padded the top to whole blocks of
            # every level above): one block of n, its masks cut to n × n by one Slice
            block = _block_folds(e, keys, vals, n, True, identity, fold, key_fill)
            return e.reshape(block, [-1]), n
        width = n if isinstance(n, int) else LAST
        if not isinstance(n, int):
            keys, vals = _pad(e, keys, vals, n, LAST, key_fill, identity, not top)
        block = _block_folds(e, keys, vals, width, not top, identity, fold, key_fill)
        return e.reshape(block, [-1]), width
    width = widths[0]
    if aligned:
        # the count below from the top's, not a chain of Divs: the last level's is the top's
        # own, and the others are read only where their differences fold (`sizes.sub`)
        aligned = Aligned(aligned.blocks, aligned.per // width)
        blocks: Size = (
            n // width
            if isinstance(n, int)
            else sizes.mul(e, aligned.blocks, aligned.per)
        )
        padded: Size = n
    else:
        blocks = sizes.ceil_div(e, n, width)
        padded = sizes.mul(e, blocks, width)
    if not aligned and not (isinstance(n, int) and n == padded):
        keys, vals = _pad(e, keys, vals, n, padded, key_fill, identity, not top)
    P = e.reshape(keys, [-1, width])
    folds = _block_folds(e, keys, vals, width, not top, identity, fold, key_fill)
    # the ends stay [blocks, 1]: the level below reshapes them once (a chain of reshapes is
    # what ORT's ReshapeFusion may or may not fuse, and `inspect` would have to follow it)
    end_keys = e.slice(P, [width - 1], [width], [1])
    end_folds = e.slice(folds, [width - 1], [width], [1])
    below, below_len = _level(
        e,
        end_keys,
        end_folds,
        blocks,
        -(-bound // width),
        widths[1:],
        key_fill,
        identity,
        fold,
        False,
        aligned,
        last,
    )
    # the previous block's end, for every block (the first block has none: a key no item holds)
    prev_key = e.pad(end_keys, [1, 0, -1, 0], key_fill)  # [blocks, 1], shifted by one
    prev_fold = e.pad(
        below,
        sizes.concat(e, [1, sizes.sub(e, blocks, sizes.add(e, below_len, 1))]),
        identity,
    )
    prev = prev_key
    if (
        fold.flip
    ):  # another key than the previous block end's (greater, where keys are sorted)
        if fold.ascending:
            other = e.op("Greater", P, prev)
        else:
            zero = e.const(np.asarray(0, dtype=key_fill.dtype.numpy()))  # type: ignore[union-attr]
            other = e.op("Greater", e.op("Abs", e.op("Sub", P, prev)), zero)
        carries = e.op("Where", other, identity, e.reshape(prev_fold, [-1, 1]))
    else:
        carries = e.op(
            "Where", e.op("Equal", P, prev), e.reshape(prev_fold, [-1, 1]), identity
        )
    return e.reshape(e.op(fold.op, folds, carries), [-1]), padded


def _block_folds(
    e: Emitter,
    P: ir.Value,
    V: ir.Value,
    width: Size,
    prefix: bool,
    identity: ir.Value,
    fold: Fold,
    key_fill: ir.Value,
) -> ir.Value:
    """[blocks, width]: each item's fold over the items of its block with its key (`prefix`:
    only those at or before it). `P`, `V`: the keys and values, whole blocks in any shape (each
    is reshaped once here); `key_fill`: a constant of the keys' type. A `width` known only at
    run time (at most `LAST`) is one block of all the items (`_sliced_masks`)."""
    if fold.flip:
        floats = key_fill.dtype == ir.DataType.FLOAT
        dtype = np.float32 if floats else np.int32
        other = _other_or_after(e, P, width, dtype, fold)
        picked = e.op("Where", other, identity, _across(e, V, width))
    else:
        same = e.op("Equal", _down(e, P, width), _across(e, P, width))
        if prefix:
            tril = _mask(e, lambda k: np.tril(np.ones((k, k), dtype=bool)), width)
            same = e.op("And", same, tril)
        picked = e.op("Where", same, _across(e, V, width), identity)
    if fold is INTEGER_PRODUCT:
        assert isinstance(width, int)  # `_sliced_masks`: the halving needs its steps
        return _halving_product(e, picked, width, identity)
    # the axes became an input at opset 13 for ReduceSum, at 18 for ReduceProd
    if e.opset >= (13 if fold.reduce == "ReduceSum" else 18):
        return e.op(fold.reduce, picked, e.i64([2]), keepdims=0)
    return e.op(fold.reduce, picked, axes=[2], keepdims=0)


def _halving_product(
    e: Emitter, picked: ir.Value, width: int, identity: ir.Value
) -> ir.Value:
    """[blocks, width]: the product of `picked` ([blocks, width, width]) along its last axis, by
    halving it: Split in two, Mul the halves, log2(width) times (a width that is no power of
    two is padded with the identity first). Integer Mul wraps, so any order is exact."""
    items = width  # the block's items: the result's second dim
    steps = max(1, (width - 1).bit_length())
    if width != 1 << steps:
        more = (1 << steps) - width
        picked = e.pad(picked, [0, 0, 0, 0, 0, more], e.reshape(identity, []))
        width = 1 << steps
    while width > 1:
        width //= 2
        low, high = e.split(picked, [width, width], axis=2)
        picked = e.op("Mul", low, high)
    # [-1, items], not [0, -1]: a run-time count of 0 blocks has no -1 to infer
    return e.reshape(picked, [-1, items])


def _other_or_after(
    e: Emitter, P: ir.Value, width: Size, dtype: type, fold: Fold
) -> ir.Value:
    """[blocks, width, width] flags: item j is not in item i's run up to i — another key, or
    after i. The selection that keeps the values in Where's false branch (`Fold.flip`) needs
    these flags from no Not that feeds the Where: ORT's NotWhereFusion (onnxruntime/core/
    optimizer/not_where_fusion.cc, level 1) rewrites Where(Not(c), x, y) to Where(c, y, x) and
    puts the values back in the true branch.

    Sorted keys (pads, −1, only after every real item: a pad's own flags are wrong, and never
    read) have P[j] ≤ P[i] for j ≤ i, so another key is P[j] < P[i]: one Less of the keys, Or-ed
    with the constant [j > i] — two kernels writing a byte per flag, where max(P[i] − P[j],
    [j > i]) > 0 took three writing nine. Keys only grouped (equal ones adjacent, in no order):
    Not(Equal) Or-ed the same way (the Not feeds the Or, not a Where). The WebGPU plugin has no
    Or (its kernel table; `Fold.or_masks`): there float keys compare P[j] < P[i] + 2^25 ·
    [j > i] (the keys are integers below 2^24, the scatter's guarded limit, so the sum is
    exact or above every key), and grouped or integer keys keep max(|P[i] − P[j]|, [j > i])
    > 0."""
    ascending = fold.ascending
    down, across = _down(e, P, width), _across(e, P, width)
    if fold.or_masks:
        other = (
            e.op("Less", across, down)
            if ascending
            else e.op("Not", e.op("Equal", across, down))
        )
        after = _mask(e, lambda k: np.triu(np.ones((k, k), dtype=bool), k=1), width)
        return e.op("Or", other, after)
    if ascending and dtype == np.float32:
        beyond = _mask(
            e, lambda k: np.triu(np.full((k, k), 2.0**25, dtype=np.float32), k=1), width
        )
        return e.op("Less", across, e.op("Add", down, beyond))
    diff = e.op("Sub", down, across)
    if not ascending:
        diff = e.op("Abs", diff)
    zero = e.const(np.asarray(0, dtype=dtype))
    if dtype == np.float32 or e.opset >= 12:  # integer Max from opset 12 (Max-12)
        after = _mask(e, lambda k: np.triu(np.ones((k, k), dtype=dtype), k=1), width)
        return e.op("Greater", e.op("Max", diff, after), zero)
    after = _mask(e, lambda k: np.triu(np.ones((k, k), dtype=bool), k=1), width)
    return e.op("Or", e.op("Greater", diff, zero), after)


def _sliced_masks(e: Emitter, fold: Fold, key_fill: ir.Value) -> bool:
    """Can the last level take a width known only at run time, its masks cut from constants of
    `LAST` × `LAST` by a Slice (one kernel where a Pad of the keys and one of the values took
    two, and masks of n × n where they were 512 × 512 at any n)? Not for the halving products,
    whose steps need a static width; on WebGPU, whose Slice takes float types only (the
    plugin's kernel table), only the float mask of a product with float keys (the sums' mask
    is bool: it would go to the CPU and back)."""
    if fold is INTEGER_PRODUCT:
        return False
    return e.ctx.target != "webgpu" or (
        fold.flip and key_fill.dtype == ir.DataType.FLOAT
    )


def _down(e: Emitter, x: ir.Value, width: Size) -> ir.Value:
    """x as [blocks, width, 1] (one block where `width` is known only at run time)."""
    return e.reshape(x, [-1, width, 1] if isinstance(width, int) else [1, -1, 1])


def _across(e: Emitter, x: ir.Value, width: Size) -> ir.Value:
    """x as [blocks, 1, width] (one block where `width` is known only at run time)."""
    return e.reshape(x, [-1, 1, width] if isinstance(width, int) else [1, 1, -1])


def _mask(e: Emitter, square: Callable[[int], np.ndarray], width: Size) -> ir.Value:
    """A [width, width] mask, `square(k)` being the k × k one: a constant where `width` is
    static, else the corner of the `LAST` × `LAST` one that a Slice cuts at run time."""
    if isinstance(width, int):
        return e.const(square(width))
    ends = sizes.concat(e, [width, width])
    return e.op("Slice", e.const(square(LAST)), e.i64([0, 0]), ends, e.i64([0, 1]))


def _pad(
    e: Emitter,
    keys: ir.Value,
    vals: ir.Value,
    n: Size,
    to: Size,
    key_fill: ir.Value,
    identity: ir.Value,
    column: bool = False,
) -> tuple[ir.Value, ir.Value]:
    """keys and values padded at the end from n to `to` items (keys −1: a run of their own,
    after every real item, never read). `column`: they are [n, 1] (a level's block ends)."""
    more = sizes.sub(e, to, n)
    pads = sizes.concat(e, [0, 0, more, 0] if column else [0, more])
    return e.pad(keys, pads, key_fill), e.pad(vals, pads, identity)
