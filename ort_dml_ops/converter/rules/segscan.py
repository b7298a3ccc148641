"""Segmented inclusive scan of a 1-D tensor in few full-size passes, for any run-time length.

Input: the runs, as `cont` flags (element i continues element i − 1's run: the sorted scatter
positions compared with their neighbours by the caller), and `vals`; output: for every
element, the fold of its run's values from the run's first element up to itself, folded left
to right (`combine(earlier, later)`). The scatter rule reads it at each run's last element.

Construction (radix-B, B = 16), so the node count is fixed at convert time and does not grow
with the length, and the work is about one chain's worth of passes:

1. level 0: view the (padded) values as [n/B, B] and run a sequential chain over the B
   columns — y_j = same_run(j, j−1) ? combine(y_{j−1}, x_j) : x_j. One Split, B−1 small
   steps over n/B elements each, one Concat: a handful of full-size passes in all;
2. the last column holds each block's partial run value; the same scan over those n/B block
   ends (recursively: chain again, then a short Hillis–Steele on what is left) gives each
   block end the value of its run so far;
3. fix-up: an element still in the run that was open at its block's start (its block's flags
   up to it all say "continues") combines the
   previous block's carry with its own value.

Rounding: each output is a fold of its own run's values only (no prefix difference, so no
cancellation against other runs): at most B − 1 + (B − 1) + ⌈log2(n / B²)⌉ + 2 roundings.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import onnx_ir as ir

from . import sizes
from .blockscan import scan_static
from .blockscan_symbolic import crops, scan_symbolic
from .emitter import Emitter
from .sizes import Size

BLOCK = 16
#: levels of chains before the rest is finished by Hillis–Steele steps (on n / BLOCK² items)
CHAIN_LEVELS = 2

#: step(e, same, earlier, later) -> same ? combine(earlier, later) : later
Step = Callable[[Emitter, ir.Value, ir.Value, ir.Value, int], ir.Value]


def fold_step(op: str, floating: bool) -> Step:
    """`op` (Add, Mul, Max, Min) folded where the run continues (`earlier` may be one column
    that broadcasts over `later`).

    Integers: a Where. Floats: a bit-copying select (`select_bits`), because ONNX Runtime's CPU
    Where returns +0.0 where its true branch holds −0.0 (measured, 1.31), which would give a
    run of −0.0 summands a +0.0 total (ORT's sequential sum keeps −0.0)."""

    def step(
        e: Emitter, same: ir.Value, earlier: ir.Value, later: ir.Value, width: int
    ) -> ir.Value:
        folded = e.op(op, earlier, later)
        if floating:
            return select_bits(e, same, folded, later, width)
        return e.op("Where", same, folded, later)

    step.fold_op = op  # type: ignore[attr-defined]  # read by _chain and the block fix-up (_fix_up)
    step.floating = floating  # type: ignore[attr-defined]
    return step


def or_step(
    e: Emitter, same: ir.Value, earlier: ir.Value, later: ir.Value, width: int
) -> ir.Value:
    return e.op("Or", e.op("And", same, earlier), later)


def keep_step(compare: str) -> Step:
    """ONNX Runtime's sequential max (`Greater`) / min (`Less`) step: keep the earlier value only
    if it compares strictly greater / smaller, else take the later one (ties go to the later
    item, so the sign of a zero survives). The select copies bits (GatherElements), never a
    float Where (see `where_step`)."""

    def step(
        e: Emitter, same: ir.Value, earlier: ir.Value, later: ir.Value, width: int
    ) -> ir.Value:
        keep = e.op("And", same, e.op(compare, earlier, later))
        if width > 1:  # earlier is one column broadcast over the block (the fix-up)
            earlier = e.op("Expand", earlier, e.i64([1, width]))
        return select_bits(e, keep, earlier, later, width)

    step.compare = compare  # type: ignore[attr-defined]  # read by the block fix-up (_fix_up)
    return step


def select_bits(
    e: Emitter, cond: ir.Value, a: ir.Value, b: ir.Value, width: int = 1
) -> ir.Value:
    """cond ? a : b for 2-D a, b, cond of one shape [rows, width], copying bits (−0.0, NaN
    payloads): one GatherElements from [b | a] along axis 1 at j + width · cond."""
    j = np.arange(width).reshape(1, width)
    pick = e.op("Where", cond, e.i32(j + width), e.i32(j))  # an int Where: exact
    return e.op("GatherElements", e.op("Concat", b, a, axis=1), pick, axis=1)


def shift(e: Emitter, x: ir.Value, s: int, n: Size, fill: ir.Value) -> ir.Value:
    """out[i] = x[i − s] for a 1-D x of n elements, `fill` where i − s is outside it (s < 0:
    the elements after i).

    ONE Pad where the target's Pad takes the negative pad that drops the |s| elements pushed
    out (`blockscan_symbolic.crops`: DML for a forward shift only, WebGPU both ways) — a
    kernel and a full-size pass fewer (issue 28); else a Pad and a Slice back to n."""
    forward = s >= 0
    w = abs(s)
    if crops(e, reverse=not forward):
        pads = [w, -w] if forward else [-w, w]
        return e.op("Pad", x, e.i64(pads), fill, mode="constant")
    padded = e.op("Pad", x, e.i64([w, 0] if forward else [0, w]), fill, mode="constant")
    if forward:
        return e.op("Slice", padded, e.i64([0]), sizes.tensor(e, n), e.i64([0]))
    return e.op("Slice", padded, e.i64([w]), e.i64([2**62]), e.i64([0]))


def prefix_count(
    e: Emitter, flags: ir.Value, n: Size, dtype: ir.DataType = ir.DataType.INT32
) -> ir.Value:
    """Inclusive prefix sum of a 1-D int32 tensor of n elements (exact: n < 2^31), or of a float32
    one (exact: n < 2^24).

    ONNX's CumSum, except where the target's own CumSum is known to be slow for this length
    (``cost_facts["cumsum_native_max_axis"]``: WebGPU's kernel reads the whole prefix for every
    element, onnxruntime/core/providers/webgpu/math/cumsum.cc, so 90,000 items took 5 s on
    lavapipe); there the blocked Add scan of blockscan.py, no wider than the target binds, and
    where n is known only at run time its run-time-length form (blockscan_symbolic), since n
    may be anything up to the scatter's 2^24."""
    from ...targets import get_target

    target = get_target(e.ctx.target)
    limit = target.cost_facts.get("cumsum_native_max_axis")
    if limit is None or (isinstance(n, int) and n <= limit):
        return e.op("CumSum", flags, e.i32(0))
    width = e.ctx.options.get("max_io_width")
    if isinstance(n, int):
        return scan_static(e, flags, [n], 0, "Add", False, False, dtype, width)
    if flags.shape is None or len(flags.shape) != 1:
        flags = e.op("Reshape", flags, e.i64([-1]), shape=[None])
    return scan_symbolic(e, flags, [None], 0, "Add", False, False, dtype, width)[0]


def segmented_scan(
    e: Emitter,
    vals: ir.Value,
    n: Size,
    bound: int,
    step: Step,
    identity: ir.Value,
    *,
    cont: ir.Value,
    level: int = 0,
    block: int = BLOCK,
    aligned: bool = False,
) -> ir.Value:
    """Inclusive scan of the 1-D `vals` (n elements, n ≤ bound) within runs, where `cont` (bool,
    n) says element i continues element i − 1's run.

    `identity` is a 1-element tensor of vals' type (the pad value; padded elements start no run
    and continue none that matters: they come after every real element). `block` is the chain's
    width: the Split and Concat bind that many tensors, so a target that binds few (WebGPU: 8
    storage buffers per shader) passes its limit. The chain splits the flags (a quarter pass of
    int32 keys), and whether an element continues the run open at its block's start is the
    running And of its block's flags. `aligned`: n is a whole number of blocks (the caller
    padded), so no Pad and no Slice here even where n is only known at run time."""
    if bound <= 1:
        return vals
    B = block
    if level >= CHAIN_LEVELS or bound <= B:
        # the rest is short (n / B² elements, or n ≤ B): run ids from the flags
        keys = prefix_count(e, e.cast(e.op("Not", cont), ir.DataType.INT32), n)
        return _hillis_steele(
            e, keys, vals, n, math.ceil(math.log2(bound)), step, identity
        )
    nb = sizes.ceil_div(e, n, B)
    pad = 0 if aligned else sizes.sub(e, sizes.mul(e, nb, B), n)
    fill = e.reshape(identity, [])
    if not (isinstance(pad, int) and pad == 0):
        pads = sizes.concat(e, [0, pad])
        vals = e.op("Pad", vals, pads, fill, mode="constant")
        cont = e.op(
            "Pad", cont, pads, e.const(np.zeros((), dtype=bool)), mode="constant"
        )
    V = e.reshape(vals, [-1, B])
    vcols = e.split(V, [1] * B, axis=1)
    sames = e.split(e.reshape(cont, [-1, B]), [1] * B, axis=1)
    assert identity.dtype is not None  # a constant made by the caller
    news = None
    if _fast(step):
        # the float chain reads "a new run starts" per column: one Not of the whole flags tensor
        # and one Split, where a Not per column took B − 1 kernels
        news = e.split(e.op("Not", e.reshape(cont, [-1, B])), [1] * B, axis=1)
    outs = _chain(e, step, sames, vcols, identity.dtype.numpy(), news)
    S = e.op("Concat", *outs, axis=1)
    nb_bound = math.ceil(bound / B)
    if nb_bound > 1:
        # the block ends' own scan reads flags as this one does: open[:, j] says columns 0..j
        # all continue, so column j is in the run that was open at the block's start; the last
        # column says the whole block continues it, which is what consecutive ends ask of each
        # other. It is "no run starts in columns 0..j": a count of the starts along the block
        # (an int32 CumSum) equal to 0 — four kernels where a running And took one per column
        ends_v = e.reshape(outs[-1], [-1])
        starts = e.cast(e.op("Not", e.reshape(cont, [-1, B])), ir.DataType.INT32)
        started = e.op("CumSum", starts, e.i32(1))
        opens = e.op("Equal", started, e.i32(0))
        last = e.op("Slice", opens, e.i64([B - 1]), e.i64([B]), e.i64([1]))
        carry = segmented_scan(
            e,
            ends_v,
            nb,
            nb_bound,
            step,
            identity,
            cont=e.reshape(last, [-1]),
            level=level + 1,
            block=block,
        )
        prev_carry = shift(e, carry, 1, nb, fill)
        S = _fix_up(e, step, opens, prev_carry, S, nb, B, identity)
    out = e.reshape(S, [-1])
    if not (isinstance(pad, int) and pad == 0):
        out = e.op("Slice", out, e.i64([0]), sizes.tensor(e, n), e.i64([0]))
    return out


def _fast(step: Step) -> bool:
    """Does `_chain` take the float Add / Mul form for this step?"""
    op = getattr(step, "fold_op", None)
    return getattr(step, "floating", False) and op in ("Add", "Mul")


def _chain(
    e: Emitter,
    step: Step,
    sames: list,
    vcols: list[ir.Value],
    np_dtype: np.dtype,
    news: list | None = None,
) -> list[ir.Value]:
    """The sequential scan over the block's columns ([nb, 1] each): y_j = step(same_j, y_{j−1}, x_j)
    (same_j: column j continues column j − 1's run).

    Float Add and Mul skip the bit-copying select of the generic step (a Concat, an int Where
    and a GatherElements per column) with a float Where whose only constant sits in its true
    branch — ONNX Runtime's CPU Where loses the sign of a −0.0 there (see `fold_step`), and the
    constants are +0.0 and 1.0, which it keeps; y_{j−1} sits in the false branch, copied as is:

    * Mul: y_j = x_j · Where(new run, 1, y_{j−1}) — x · 1 is x bit for bit;
    * Add: the chain also carries −y: y_j = x_j − Where(new run, +0.0, −y_{j−1}); x − (+0.0)
      is x bit for bit (−0.0 included, which x + (+0.0) is not), and x − (−y) is x + y exactly
      (IEEE subtraction is the addition of the negation, rounded once).

    The constants are [1, 1], the columns' rank: ONNX Runtime's CPU broadcast of an [n, 1]
    tensor against a [1] one does not merge the trailing 1 and runs element by element
    (measured at n = 62,501: 1.0 ms a Where, 0.1 ms with a [1, 1] constant), which made the
    chain's 15 Wheres 18 % of the lowered scatter add's time.
    """
    op = getattr(step, "fold_op", None)
    fast = _fast(step)
    outs = [vcols[0]]
    neg = e.op("Neg", vcols[0]) if fast and op == "Add" else None
    for j in range(1, len(vcols)):
        same = sames[j]
        if not fast:
            outs.append(step(e, same, outs[-1], vcols[j], 1))
            continue
        earlier = neg if op == "Add" else outs[-1]
        # fast: a float Add or Mul, and Add carries −y from the first column on
        assert op is not None and earlier is not None
        new_run = news[j] if news is not None else e.op("Not", same)
        outs.append(_float_fold(e, op, vcols[j], new_run, earlier, np_dtype))
        if op == "Add" and j < len(vcols) - 1:
            neg = e.op("Neg", outs[-1])
    return outs


def _float_fold(
    e: Emitter,
    op: str,
    x: ir.Value,
    new_run: ir.Value,
    earlier: ir.Value,
    np_dtype: np.dtype,
) -> ir.Value:
    """x folded with the earlier value where the run continues, x itself where `new_run`, bit
    for bit, for float Add (`earlier` is then −y) and Mul — the form `_chain` explains: x −
    Where(new, +0.0, −y) and x · Where(new, 1, y), the only constant in Where's true branch."""
    if op == "Mul":
        one = e.const(np.ones((1, 1), dtype=np_dtype))
        return e.op("Mul", x, e.op("Where", new_run, one, earlier))
    zero = e.const(np.zeros((1, 1), dtype=np_dtype))
    return e.op("Sub", x, e.op("Where", new_run, zero, earlier))


def _fix_up(
    e: Emitter,
    step: Step,
    match: ir.Value,
    prev_carry: ir.Value,
    S: ir.Value,
    nb: Size,
    B: int,
    identity: ir.Value,
) -> ir.Value:
    """Each element of the [nb, B] block scan `S` whose run continues from the previous block
    (`match`) folded with that block's carry (`prev_carry`, 1-D, nb).

    The generic step broadcasts the carry over the block and selects with a Concat of both
    candidates ([nb, 2B]) and a GatherElements: about five full-size passes. The known steps
    need fewer, with the same values bit for bit:

    * a fold (Add, Mul, Max, Min): the carry where the run continues, else the op's identity,
      by one Where broadcasting the carry over its block, then the op — two passes. x op
      identity == x bit for bit, so no select of the result is needed. Float Add and Mul put
      the constant in the Where's true branch, as the chain does (`_chain`): S − Where(new,
      +0.0, −carry) and S · Where(new, 1, carry);
    * the sequential max / min: the strict compare against the broadcast carry, then one
      GatherElements from [S | carry] ([nb, B + 1]) at column j or B — about three passes, no
      [nb, 2B] Concat.
    """
    op = getattr(step, "fold_op", None)
    compare = getattr(step, "compare", None)
    carry = e.reshape(prev_carry, [-1, 1])  # broadcast over the block
    if op is not None:
        if getattr(step, "floating", False) and op in ("Add", "Mul"):
            assert identity.dtype is not None  # a constant made by the caller
            earlier = e.op("Neg", carry) if op == "Add" else carry
            return _float_fold(
                e, op, S, e.op("Not", match), earlier, identity.dtype.numpy()
            )
        # integers: Where is exact, and x op identity == x
        return e.op(op, S, e.op("Where", match, carry, e.reshape(identity, [1, 1])))
    if compare is not None:
        keep = e.op("And", match, e.op(compare, carry, S))
        # an int Where of constants (exact): column B (the carry) where kept, else column j
        pick = e.op("Where", keep, e.i32([[B]]), e.i32(np.arange(B).reshape(1, B)))
        return e.op("GatherElements", e.op("Concat", S, carry, axis=1), pick, axis=1)
    return step(e, match, carry, S, B)


def _hillis_steele(
    e: Emitter,
    keys: ir.Value,
    vals: ir.Value,
    n: Size,
    steps: int,
    step: Step,
    identity: ir.Value,
) -> ir.Value:
    """`steps` doubling steps over int32 run ids `keys`: exact for runs of up to 2^steps
    elements."""
    fill = e.reshape(identity, [])
    minus1 = e.const(np.asarray(-1, dtype=np.int32))
    vals = e.reshape(vals, [-1, 1])  # 2-D columns for the steps' selects
    for k in range(steps):
        s = 1 << k
        same = e.reshape(e.op("Equal", keys, shift(e, keys, s, n, minus1)), [-1, 1])
        earlier = e.reshape(shift(e, e.reshape(vals, [-1]), s, n, fill), [-1, 1])
        vals = step(e, same, earlier, vals, 1)
    return e.reshape(vals, [-1])


def reverse(e: Emitter, x: ir.Value, n: Size) -> ir.Value:
    """x[::-1] for a 1-D x of n elements: a Gather at −1, −2, …, −n.

    Not at n−1, …, 0: ONNX Runtime 1.31's GatherToSliceFusion turns a Gather whose indices are
    a Range into a Slice with the Range's start, limit and step, and the limit −1 then means
    "the last element" to Slice (measured: wrong lengths). With negative indices the Gather and
    the fused Slice agree."""
    idx = sizes.iota(e, n, np.int64, start=-1, step=-1)
    return e.op("Gather", x, idx, axis=0)
