"""A float32 product scan along an axis whose length (and any other dim) is known only at run
time, in 30 kernels: blocks of masked products (issue 28; the rule is `cumprod_masked.py`). The
same blocks with ReduceSum, Add and +0.0 (`SUM`) scan sums (`cumsum_masked.py`, WebGPU); what
follows is written for the product, the sum's differences are at `SUM`.

The doubling scan (`blockscan_symbolic.scan_doubling`) takes 31 steps, each a Pad and a Mul
over the whole tensor (62 kernels, 62 passes), because a fixed graph must cover every length
below 2^31 and each step only doubles the reach. Here each level reaches a whole block at once,
as the scatter's block folds do (`blocksum.py`):

1. pad the axis with the identity 1.0, at its start (a forward scan) or end (a reverse one), to
   a whole number of blocks of width B with at least one pad item, and view it as
   [P, blocks, B, I];
2. in-block prefix products: a Where keeps, for each target i, the items j ≤ i (j ≥ i reversed)
   and puts 1.0 elsewhere ([P, blocks, B, B, I]), and one ReduceProd folds them;
3. the block totals (the last item's, the first one's reversed) are the next level's items; its
   scan, read one item towards the pad (a Slice: the pad item there is 1.0), gives each block
   the product of the blocks before it, which one Mul applies.

Widths 8, 64, 64, 64 reach 2^21 items; the last level, one block of the rest (at most 2^10 of
a length below 2^31), builds its mask from a Range at run time. Kernels: six a level (Pad,
Where, ReduceProd, two Slices, Mul), five for the last (Pad, Range, Greater, Where,
ReduceProd) and the final Slice; `exclusive` moves that Slice one item towards the pad, where
the product is the identity, so it costs nothing. Written bytes: the top two levels' masks
(8 items an element each) and the pads to whole blocks, 21–30 passes at 1e6 elements
(bench/passes.py) against the doubling scan's 62 and the radix scan's 8. Reads are the masks
again: on lavapipe, whose reductions are slow, both scans run faster at that size
(docs/performance.md); the rule (`cumprod_masked.py`) leaves the choice to `tune`.

Exact as the other scans: each output is the product of its prefix in some association, whose
relative error is at most γ_k (docs/convert.md); NaN, ±inf and zeros propagate as products do,
because the masked-off items are 1.0, never a multiplication by 0. The values sit in Where's
false branch, which keeps the sign of a −0.0 (ORT's CPU Where drops it from its true branch:
blocksum.py). Empty tensors: every dim is padded to at least 1 first, so every view is of
positive sizes (a 0 in a Reshape target needs allowzero, which the DML EP refuses), and the
final Slice cuts the original shape back out. Float32 only: ORT's CPU EP has no float16
ReduceProd, and it saturates integer products where the scan wraps.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import onnx_ir as ir

from . import sizes
from ._base import Refusal
from .emitter import Emitter
from .sizes import Size

#: block widths of the levels, top first (8 · 64³ = 2^21 items): the top level's mask holds 8
#: items for each element of x, the next 64 for each of x / 8
WIDTHS = (8, 64, 64, 64)


class Fold(NamedTuple):
    """What the blocks fold with: the reduction of a block, the op that applies the carry, and
    its identity, which the pads and the masked-off items hold."""

    reduce: str
    combine: str
    identity: float


#: CumProd: 1.0 (x · 1.0 == x bit for bit, the sign of a zero included)
PRODUCT = Fold("ReduceProd", "Mul", 1.0)
#: CumSum: +0.0. The identity of IEEE addition is −0.0, but the masked-off items come from
#: Where's true branch, which ORT's CPU EP gives as +0.0 for a −0.0 (measured, 1.31), so
#: +0.0 it is, on every EP alike. Every output then sums at least one +0.0 pad item (the top
#: level's pad is in the first block, whose total every later block's carry holds), so no
#: output is −0.0: the signed zeros of the WebGPU plugin's own CumSum, which sums from +0.0
#: (measured, tests/webgpu/test_lowering_width.py), where ORT's CPU kernel keeps −0.0 for a
#: prefix of −0.0 alone.
SUM = Fold("ReduceSum", "Add", 0.0)


def refusal(
    x: ir.Value, axis_length: int | None, not_float32: str, static_axis: str
) -> Refusal | None:
    """Why the masked blocks do not take a scan that their rule's base accepted, or None: they
    are laid out for float32 (`not_float32` says why the rule's op keeps to it) along a
    run-time axis (`static_axis` names what weighs a static one)."""
    if x.dtype != ir.DataType.FLOAT:
        return Refusal("not-float32", not_float32)
    if axis_length is not None:
        return Refusal("static-axis", f"the axis length is static: {static_axis}")
    return None


def scan_masked_product(
    e: Emitter, x: ir.Value, axis: int, rank: int, exclusive: bool, reverse: bool
) -> ir.Value:
    """CumProd of the float32 x along `axis`, any dim known only at run time (0 included)."""
    return scan_masked(e, x, axis, rank, exclusive, reverse, PRODUCT)


def scan_masked(
    e: Emitter,
    x: ir.Value,
    axis: int,
    rank: int,
    exclusive: bool,
    reverse: bool,
    fold: Fold,
) -> ir.Value:
    """The scan of the float32 x along `axis` by `fold` (PRODUCT: CumProd; SUM: CumSum), any dim
    known only at run time (0 included)."""
    dims = sizes.dims(e, x)
    safe = [sizes.maximum(e, d, 1) for d in dims]
    n = dims[axis]
    # the top level's pads: the axis to whole blocks towards its carry side, the others to 1
    blocks, length = _blocks(e, safe[axis], WIDTHS[0])
    before: list[Size] = [0] * rank
    after = [sizes.sub(e, s, d) for s, d in zip(safe, dims)]
    after[axis] = sizes.sub(e, length, n)
    if not reverse:
        before[axis], after[axis] = after[axis], 0
    padded = e.op(
        "Pad",
        x,
        sizes.concat(e, before + after),
        _scalar(e, fold.identity),
        mode="constant",
    )
    inner = sizes.product(e, safe[axis + 1 :])
    # one view each way, the block count / length inferred (-1), a lone dim before the axis
    # copied (0: it is dim 0 of both tensors): a constant target where the other dims allow,
    # and never a Reshape of a Reshape
    before_axis: list[Size] = [0] if axis == 1 else list(safe[:axis])
    top = _view(e, padded, [sizes.product(e, before_axis), -1, WIDTHS[0], inner])
    y = _level(e, top, blocks, reverse, WIDTHS, fold)
    whole = _view(e, y, [*before_axis, -1, *safe[axis + 1 :]])
    # the scan of item i sits at i + the front pad; one item towards the pad for `exclusive`
    start: Size = sizes.sub(e, length, n) if not reverse else 0
    if exclusive:
        start = sizes.add(e, start, 1 if reverse else -1)
    starts: list[Size] = [0] * rank
    starts[axis] = start
    ends = list(dims)
    ends[axis] = sizes.add(e, start, n)
    return e.op(
        "Slice",
        whole,
        sizes.concat(e, starts),
        sizes.concat(e, ends),
        e.i64(list(range(rank))),
        dtype=ir.DataType.FLOAT,
    )


def _blocks(e: Emitter, m: Size, width: int) -> tuple[Size, Size]:
    """(blocks, their length in items): ⌊m / width⌋ + 1 blocks, whose pad (1 to width items
    past m) is never empty, so the scan holds the identity one item before its first real item
    (after its last, reversed)."""
    blocks = sizes.add(e, _floor_div(e, m, width), 1)
    return blocks, sizes.mul(e, blocks, width)


def _floor_div(e: Emitter, a: Size, b: int) -> Size:
    if isinstance(a, int):
        return a // b
    return e.op("Div", sizes.tensor(e, a), e.i64([b]))


def _level(
    e: Emitter,
    v: ir.Value,
    blocks: Size,
    reverse: bool,
    widths: tuple[int, ...],
    fold: Fold,
) -> ir.Value:
    """The inclusive scan of v ([P, blocks, width, I]: whole blocks of widths[0], the pad on
    the carry side), in that shape. Every view below keeps P and I by Reshape's 0 (copy that
    dim) and infers the block count: constant targets, no shape computed at run time."""
    width = widths[0]
    after = e.const(_after(width, reverse)[:, :, None])  # [target, source, 1]
    picked = e.op("Where", after, _scalar(e, fold.identity), e.unsqueeze(v, [2]))
    within = _reduce(e, fold, picked, axis=3, keep=False)  # [P, blocks, width, I]
    edge = 0 if reverse else width - 1
    totals = e.slice(within, [edge], [edge + 1], [2])  # [P, blocks, 1, I]
    carry = _carry(e, totals, blocks, reverse, widths[1:], fold)  # [P, blocks, 1, I]
    return e.op(fold.combine, within, carry)


def _carry(
    e: Emitter,
    totals: ir.Value,
    count: Size,
    reverse: bool,
    widths: tuple[int, ...],
    fold: Fold,
) -> ir.Value:
    """For each of the `count` block totals ([P, count, 1, I]), the fold of those before
    it (after it, reversed): their scan, padded with the identity, read one item towards the
    pad."""
    if widths:
        blocks, length = _blocks(e, count, widths[0])
        padded = _pad_axis1(
            e, totals, sizes.sub(e, length, count), reverse, fold
        )  # [P, L, 1, I]
        blocked = e.reshape(padded, [0, -1, widths[0], 0])
        scan = _level(e, blocked, blocks, reverse, widths, fold)
        scan = e.reshape(scan, [0, -1, 1, 0])
    else:  # the last level: one block of count + 1 items, its mask built at run time
        scan = _last_level(
            e, _pad_axis1(e, totals, 1, reverse, fold), count, reverse, fold
        )
    # forward: the count items before the last (the scan's pad is at its start, so the item
    # before the first real one is the identity), counted from the end: one size, not two
    start, end = (
        (1, sizes.add(e, count, 1)) if reverse else (sizes.sub(e, -1, count), -1)
    )
    return e.op(
        "Slice",
        scan,
        sizes.tensor(e, start),
        sizes.tensor(e, end),
        e.i64([1]),
        dtype=ir.DataType.FLOAT,
    )


def _last_level(
    e: Emitter, v: ir.Value, count: Size, reverse: bool, fold: Fold
) -> ir.Value:
    """The inclusive scan of v ([P, count + 1, 1, I]) as one block, as [P, count + 1, 1, I]:
    the mask from a float32 Range (exact: count + 1 ≤ 2^10 + 1), True where source j comes
    after target i (before it, reversed)."""
    r = e.op(
        "Range",
        e.const(np.asarray(0, np.float32)),
        sizes.scalar(e, sizes.add(e, count, 1), np.float32),
        e.const(np.asarray(1, np.float32)),
    )
    source = e.reshape(r, [1, -1, 1])
    target = e.reshape(r, [-1, 1, 1])
    after = e.op("Less" if reverse else "Greater", source, target)
    picked = e.op(
        "Where", after, _scalar(e, fold.identity), e.reshape(v, [0, 1, -1, 0])
    )
    return _reduce(e, fold, picked, axis=2, keep=True)


def _pad_axis1(
    e: Emitter, v: ir.Value, pad: Size, reverse: bool, fold: Fold
) -> ir.Value:
    """v ([P, count, 1, I]) with `pad` identity items at the start of axis 1 (the end,
    reversed)."""
    pads = [0, 0, 0, 0, 0, pad, 0, 0] if reverse else [0, pad, 0, 0, 0, 0, 0, 0]
    return e.op(
        "Pad", v, sizes.concat(e, pads), _scalar(e, fold.identity), mode="constant"
    )


def _after(width: int, reverse: bool) -> np.ndarray:
    """[target i, source j]: True where j is not in i's prefix (j > i; j < i reversed)."""
    j = np.arange(width)
    return (j[None, :] < j[:, None]) if reverse else (j[None, :] > j[:, None])


def _reduce(e: Emitter, fold: Fold, x: ir.Value, axis: int, keep: bool) -> ir.Value:
    # the axes became an input at opset 18 (ReduceSum at 13)
    if e.opset >= (13 if fold.reduce == "ReduceSum" else 18):
        return e.op(fold.reduce, x, e.i64([axis]), keepdims=int(keep))
    return e.op(fold.reduce, x, axes=[axis], keepdims=int(keep))


def _scalar(e: Emitter, value: float) -> ir.Value:
    return e.const(np.asarray(value, np.float32))


def _view(e: Emitter, v: ir.Value, parts: list[Size]) -> ir.Value:
    """v viewed as `parts`: positive sizes, one -1, and 0 only where v's own dim at that index
    is meant (Reshape copies it). A constant target where every part is an int."""
    if all(isinstance(p, int) for p in parts):
        return e.reshape(v, [int(p) for p in parts])  # type: ignore[arg-type]
    return e.reshape(v, sizes.concat(e, parts), zeros_mapped=True)
