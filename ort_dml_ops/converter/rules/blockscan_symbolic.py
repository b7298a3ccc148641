"""The blocked scan of blockscan.py along an axis whose length is known only at run time.

The same radix scan with a fixed block width (16, or 4 on strided columns) and the block counts
computed at run time (`scan_symbolic`): two (four) levels of chains, then Hillis–Steele doubling
steps on the remaining block totals, which are 256 times smaller than x. Exact (the same op
applications, reassociated) for every length < 2^31; the node count does not depend on the
length. Where the other dims are symbolic too, a doubling scan on x itself (`scan_doubling`):
each step is one Pad with a negative pad and the op where the target takes it (`crops`: WebGPU;
DML for a forward scan), two kernels where a Pad and a Slice made three.
"""

from __future__ import annotations

import math

import numpy as np
import onnx_ir as ir

from . import sizes
from .blockscan import (
    RADIX,
    SMALL_INNER,
    known_product,
    links,
    op_identity,
    with_prefix,
)
from .emitter import Emitter

#: A symbolic axis length is below 2**DYN_STEPS (what the doubling steps of its scan cover).
DYN_STEPS = 31
#: Block width of the symbolic-length scan on contiguous slices (two levels: 256 per block total).
DYN_BLOCK = 16


def scan_symbolic(
    e: Emitter,
    x: ir.Value,
    shape: list[int | None],
    axis: int,
    op: str,
    exclusive: bool,
    reverse: bool,
    dtype: ir.DataType,
    max_width: int | None = None,
) -> tuple[ir.Value, str]:
    """Scan along an axis whose length n is known only at run time: the radix scan of the static
    path with a fixed block width, so the node count does not depend on n and the work stays
    that of the static plan for the same n.

    x is viewed as [P, n, I] (P, I: products of the dims before / after the axis, static or
    from Shape). Level by level: pad the axis to a multiple of b (with the op's identity, at the
    end, or at the start of a reverse scan), chain the b columns of every block, scan the block
    totals (exclusive) one level down, combine, Concat, slice the padding off. After `levels`
    levels (2 of 16, or 4 of 4 on strided columns; more, narrower ones under `max_width`) the
    n / b^levels totals left are finished by Hillis–Steele steps, as many as a length below
    2^DYN_STEPS needs — on a tensor b^levels times smaller than x.

    A float32 product is first offered to the masked blocks of `cumprod_masked.py` (30
    kernels whatever the other dims; issue 28); `tune` measures both on the device.
    """
    post = shape[axis + 1 :]
    others = shape[:axis] + post
    if any(d is None or d == 0 for d in others):
        y = scan_doubling(e, x, axis, len(shape), op, exclusive, reverse, dtype)
        return y, (
            f"symbolic axis length and other dims symbolic: {DYN_STEPS}-step doubling scan on x itself "
            "(exact for empty tensors too)"
        )
    I_static = known_product(post)
    small_inner = I_static is not None and I_static < SMALL_INNER
    b, levels = (RADIX, 4) if small_inner else (DYN_BLOCK, 2)
    if (
        max_width is not None and b > max_width
    ):  # a target binding few tensors per node: narrower, deeper
        levels = math.ceil(levels * math.log2(b) / math.log2(max_width))
        b = max_width
    dims = sizes.dims(e, x)
    P = sizes.product(e, dims[:axis])
    I = sizes.product(e, dims[axis + 1 :])
    n = dims[axis]
    view = e.reshape(x, sizes.view(e, [P, n, I]))
    y = _radix_symbolic(
        e, view, P, n, I, op, exclusive, reverse, dtype, b, levels, DYN_STEPS
    )
    y = e.reshape(y, sizes.shape_target(e, x))
    hs = max(0, DYN_STEPS - levels * int(math.log2(b)))
    note = (
        f"symbolic axis length: {levels} levels of blocks of {b}, then {hs} doubling steps on the "
        f"block totals (exact for every length < 2^{DYN_STEPS}; node count independent of the length)"
    )
    return y, note


def _radix_symbolic(
    e: Emitter,
    x: ir.Value,
    P,
    n,
    I,
    op: str,
    exclusive: bool,
    reverse: bool,
    dtype: ir.DataType,
    b: int,
    levels: int,
    bits: int,
) -> ir.Value:
    """Scan along axis 1 of the [P, n, I] view x, n a run-time [1] int64 (or int)."""
    if levels == 0:
        return _doubling(e, x, n, op, exclusive, reverse, dtype, max(0, bits))
    m = sizes.ceil_div(e, n, b)
    pad = sizes.sub(e, sizes.mul(e, m, b), n)
    fill = e.scalar(op_identity(op, dtype), dtype)
    pads = sizes.concat(e, [0, pad, 0, 0, 0, 0] if reverse else [0, 0, 0, 0, pad, 0])
    x = e.op("Pad", x, pads, fill, mode="constant")
    rows = sizes.mul(e, P, m)
    cols = e.split(e.reshape(x, sizes.view(e, [rows, b, I])), [1] * b, 1)
    order = list(range(b - 1, -1, -1)) if reverse else list(range(b))
    within = links(e, cols, order, op, dtype)
    totals = e.reshape(within[order[-1]], sizes.view(e, [P, m, I]))
    prefix = _radix_symbolic(
        e,
        totals,
        P,
        m,
        I,
        op,
        True,
        reverse,
        dtype,
        b,
        levels - 1,
        bits - int(math.log2(b)),
    )
    prefix = e.reshape(prefix, sizes.view(e, [rows, 1, I]))
    y = e.reshape(
        with_prefix(e, prefix, within, order, op, exclusive, dtype),
        sizes.view(e, [P, sizes.mul(e, m, b), I]),
    )
    if e.ctx.target == "webgpu" and crops(e, reverse):
        # the plugin's Slice has no integer kernels (its recorded table): eight copies a run
        # for an int32 scan. A Pad of the negated widths crops the padding off instead, one
        # kernel as the Slice was (and one Neg of the pads on the CPU)
        return e.op("Pad", y, e.op("Neg", pads), fill, mode="constant", dtype=dtype)
    start = pad if reverse else 0
    return e.op(
        "Slice",
        y,
        sizes.tensor(e, start),
        sizes.tensor(e, sizes.add(e, start, n)),
        e.i64([1]),
        dtype=dtype,
    )


def _doubling(
    e: Emitter,
    x: ir.Value,
    n,
    op: str,
    exclusive: bool,
    reverse: bool,
    dtype: ir.DataType,
    steps: int,
) -> ir.Value:
    """Hillis–Steele along axis 1 of a [P, n, I] view; exact for every length < 2^steps."""
    ident = e.scalar(op_identity(op, dtype), dtype)
    n_t = sizes.tensor(e, n)
    return hillis_steele(e, x, n_t, 1, 3, op, ident, exclusive, reverse, dtype, steps)


def scan_doubling(
    e: Emitter,
    x: ir.Value,
    axis: int,
    rank: int,
    op: str,
    exclusive: bool,
    reverse: bool,
    dtype: ir.DataType,
) -> ir.Value:
    """Hillis–Steele on x itself along `axis`, pad widths clipped to the run-time axis length
    (DYN_STEPS full-size steps): no Reshape, so it is exact for empty tensors of any shape —
    the radix scan's views cannot express two zero dims without Reshape's allowzero, which the
    DML EP refuses."""
    ident = e.scalar(op_identity(op, dtype), dtype)
    n = e.slice(e.op("Shape", x), [axis], [axis + 1], [0])  # [1] int64
    return hillis_steele(
        e, x, n, axis, rank, op, ident, exclusive, reverse, dtype, DYN_STEPS
    )


def hillis_steele(
    e: Emitter,
    x: ir.Value,
    n: ir.Value | int,
    axis: int,
    rank: int,
    op: str,
    ident: ir.Value,
    exclusive: bool,
    reverse: bool,
    dtype: ir.DataType,
    steps: int,
) -> ir.Value:
    """`steps` steps y = y ⊕ shift(y, 2^k) along `axis` of the rank-`rank` x, whose length
    there is `n` (a [1] int64, or an int: cumprod.py's static doubling scan): each shift pads
    `ident` in at one end, the width clipped to n, so the steps never pad more than the axis
    holds (`shift`)."""
    y = x
    if isinstance(n, int) or steps < 2:
        for k in range(steps):
            y = e.op(
                op,
                y,
                shift(e, y, 2**k, n, axis, rank, ident, reverse, dtype),
                dtype=dtype,
            )
    else:
        for pads, bounds in run_time_shifts(e, n, steps, axis, rank, reverse):
            moved = e.pad(y, pads, ident)
            if bounds is not None:
                moved = e.op("Slice", moved, *bounds, e.i64([axis]), dtype=dtype)
            y = e.op(op, y, moved, dtype=dtype)
    if exclusive:
        y = shift(e, y, 1, n, axis, rank, ident, reverse, dtype)
    return y


def run_time_shifts(
    e: Emitter, n: ir.Value, steps: int, axis: int, rank: int, reverse: bool
) -> list[tuple[ir.Value, tuple[ir.Value, ir.Value] | None]]:
    """The pads of `shift` by 1, 2, 4, … 2^(steps − 1) along `axis` for a run-time length n (a
    [1] int64), and the Slice bounds that follow each Pad where the target's Pad cannot crop
    (None where it can): every width min(2^k, n) at once, one Min, one Mul by the pads' pattern
    and one Split on the CPU, where a width, a negation and a Concat per step made three nodes
    each (93 of a 31-step scan: every one a node ONNX Runtime builds at session creation)."""
    widths = e.op("Min", e.i64([2**k for k in range(steps)]), n)  # [steps]
    into = rank + axis if reverse else axis
    pattern = np.zeros((1, 2 * rank), dtype=np.int64)
    pattern[0, into] = 1
    cropping = crops(e, reverse)
    if cropping:  # in at one end and out at the other
        pattern[0, axis if reverse else rank + axis] = -1
    all_pads = e.op("Mul", e.reshape(widths, [-1, 1]), e.const(pattern))
    pads = e.split(e.reshape(all_pads, [-1]), [2 * rank] * steps, 0)
    if cropping:
        return [(p, None) for p in pads]
    if not reverse:  # the first n of each padded axis
        return [(p, (e.i64([0]), n)) for p in pads]
    starts = e.split(widths, [1] * steps, 0)
    ends = e.split(e.op("Add", widths, n), [1] * steps, 0)
    return [(p, (s, t)) for p, s, t in zip(pads, starts, ends)]


def crops(e: Emitter, reverse: bool = False) -> bool:
    """Whether the target's Pad takes the negative pad a shift needs (ONNX Pad-11 on: a negative
    pad removes elements) — at the axis's end for a forward shift, at its start for a reverse one.
    Measured, one-node Pads of [0, 3, 0, −3] and [0, −3, 0, 3] on [4, 10] and their rank-3 forms
    against ORT's CPU EP: the WebGPU plugin gives its values for both; the DML EP for an end pad
    only — a negative start pad makes its whole output the pad value (docs/dml-lane.md)."""
    if e.opset < 11:
        return False
    if e.ctx.target == "webgpu":
        return True
    return e.ctx.target == "dml" and not reverse


def shift(
    e: Emitter,
    t: ir.Value,
    s: int,
    n: ir.Value | int,
    axis: int,
    rank: int,
    ident: ir.Value,
    reverse: bool,
    dtype: ir.DataType,
) -> ir.Value:
    """t moved by s along `axis` (towards its end; its start where `reverse`), `ident` filling
    in, the width clipped to the axis length n (a [1] int64 or an int): ONE Pad where the target
    takes the negative pad (`crops`: the width in at one end, out at the other — a kernel and a
    pass fewer per step, issue 28), else a Pad, then a Slice back to n."""
    # Pad's pads are every dim's start, then every dim's end: the width goes in at the axis's
    # start (its end, reversed), zeros everywhere else; sizes' arithmetic keeps static widths
    # constants and computes run-time ones on the CPU
    w = sizes.minimum(e, s, n)
    into = rank + axis if reverse else axis
    if crops(e, reverse):  # and out at the other end
        out_of = axis if reverse else rank + axis
        out = sizes.sub(e, 0, w)
        pads = [w if d == into else out if d == out_of else 0 for d in range(2 * rank)]
        return e.pad(t, sizes.concat(e, pads), ident)
    pads = [w if d == into else 0 for d in range(2 * rank)]
    padded = e.pad(t, sizes.concat(e, pads), ident)
    start = w if reverse else 0
    return e.op(
        "Slice",
        padded,
        sizes.tensor(e, start),
        sizes.tensor(e, sizes.add(e, start, n)),
        e.i64([axis]),
        dtype=dtype,
    )
