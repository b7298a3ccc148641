"""CumProd (the project's DOMAIN::CumProd and ONNX CumProd-26) -> Mul, Split, Concat, Reshape.

Static axis length n — a blocked scan made of Split, Mul and Concat:

1. an axis of at most 32 elements (8 when the inner size I, the product of the dims after the
   axis, is below 16) is one chain on x itself: Split into slices, y_k = y_{k-1}·x_k, Concat;
2. longer axes: view x as [P, n, I], cut the axis into m blocks of b consecutive elements
   ([P·m, b, I]), chain the b columns (every block at once; the last link is each block's
   total), scan the m totals exclusively (the same construction, recursively) and multiply
   each column by its block's prefix before the Concat. A tail that does not fill a block is
   padded with ones and sliced off.

b is a divisor near √n when I ≥ 16 (slices are contiguous runs, so one level of wide blocks
is cheapest), and 4 (or another small divisor) when I < 16: the columns are then strided, and
ONNX Runtime's Split of a few strided columns is fast where that of 32 is 4x slower. This is
why there is no Transpose: ORT's transpose optimizer pushes a Transpose into the Split and
Concat around it, which turns them into exactly those slow strided copies. `exclusive` and
`reverse` only change which slice starts each chain and where the ones go.

Symbolic axis length — the same radix scan with a fixed block width (16, or 4 on strided
columns) and the block counts computed at run time (`scan_symbolic`): two (four) levels of
chains, then Hillis–Steele doubling steps on the remaining block totals, which are 256 times
smaller than x. Exact (same products, reassociated) for every length < 2^31; the node count
does not depend on the length.

A target may cap how many inputs/outputs one node binds (``max_width``, from the target's
``max_io_width``: 8 on WebGPU, whose shaders bind each tensor as a storage buffer): chains and
blocks are then at most that wide, so the scan takes more levels of narrower blocks.

Never Exp/Log. Integers are exact (wrapping multiplication is associative); floats differ
from the sequential reference only by rounding: see docs/convert.md for the bound.
"""

from __future__ import annotations

import math

import numpy as np
import onnx_ir as ir

from ..._domain import DOMAIN
from . import sizes
from ._base import (
    Emitter,
    Refusal,
    Rewrite,
    RewriteContext,
    Rule,
    attr_int,
    const_array,
    static_shape,
)

#: dtypes the Mul-based lowering supports (ONNX Mul-14 type set minus bool).
SUPPORTED = {
    ir.DataType.FLOAT,
    ir.DataType.FLOAT16,
    ir.DataType.DOUBLE,
    ir.DataType.BFLOAT16,
    ir.DataType.INT32,
    ir.DataType.INT64,
    ir.DataType.UINT32,
    ir.DataType.UINT64,
    ir.DataType.INT8,
    ir.DataType.INT16,
    ir.DataType.UINT8,
    ir.DataType.UINT16,
}
#: Axes this short are scanned with a single chain (slices of at least SMALL_INNER elements).
FLAT_MAX = 32
#: Inner size (elements) below which slices along the axis are strided columns: the scan then
#: splits RADIX columns at a time (ORT's Split of many narrow columns is slow) ...
SMALL_INNER = 16
RADIX = 4
#: ... and chains at most CHAIN_MAX of them.
CHAIN_MAX = 8
#: A symbolic axis length is below 2**DYN_STEPS (what the doubling steps of its scan cover).
DYN_STEPS = 31
#: Block width of the symbolic-length scan on contiguous slices (two levels: 256 per block total).
DYN_BLOCK = 16


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

    def check(self, node: ir.Node, ctx: RewriteContext) -> Refusal | None:
        x = node.inputs[0]
        if len(node.inputs) < 2 or node.inputs[1] is None:
            return Refusal("no-axis", "CumProd has no axis input")
        axis_value = const_array(node.inputs[1])
        if axis_value is None:
            return Refusal(
                "axis-not-constant",
                "the axis input is not a constant; the scan is laid out at convert time",
            )
        # the data input is required (an empty one would fail in static_shape anyway)
        assert x is not None
        shape = static_shape(x)
        if shape is None:
            return Refusal(
                "rank-unknown",
                "the rank of the input is unknown (run shape inference or give input shapes)",
            )
        if x.dtype not in SUPPORTED:
            return Refusal(
                "dtype-unsupported",
                f"no Mul for element type {x.dtype.name if x.dtype else 'unknown'}",
            )
        axis = int(axis_value.reshape(-1)[0])
        if not -len(shape) <= axis < len(shape):
            return Refusal(
                "axis-out-of-range",
                f"axis {axis} is out of range for rank {len(shape)}",
            )
        if ctx.opset < 11:
            return Refusal("opset-too-old", f"opset {ctx.opset} < 11")
        return None

    def rewrite(self, node: ir.Node, ctx: RewriteContext) -> Rewrite:
        x = node.inputs[0]
        assert x is not None and x.dtype is not None  # check() passed
        shape = static_shape(x)
        axis_value = const_array(node.inputs[1])
        assert shape is not None and axis_value is not None  # check() passed
        rank = len(shape)
        axis = int(axis_value.reshape(-1)[0]) % rank
        exclusive = bool(attr_int(node, "exclusive"))
        reverse = bool(attr_int(node, "reverse"))
        e = Emitter(ctx, node.name or "CumProd")
        n = shape[axis]
        width = ctx.options.get("max_io_width")
        if n is None:
            y, note = scan_symbolic(
                e, x, shape, axis, "Mul", exclusive, reverse, x.dtype, max_width=width
            )
        else:
            y = scan_static(
                e, x, shape, axis, "Mul", exclusive, reverse, x.dtype, max_width=width
            )
            note = f"axis length {n}: {scan_plan(shape, axis, max_width=width)}"
        return e.done([y], note)


# --------------------------------------------------------------------------------------
# The scans (op is Mul here; Add works the same way).
# --------------------------------------------------------------------------------------
def _identity(op: str, dtype: ir.DataType):
    if op == "Mul":
        return 1
    if op == "Add":
        return 0
    raise ValueError(op)


def _ones_like_piece(
    e: Emitter, dtype: ir.DataType, piece_shape: list[int] | ir.Value, op: str
) -> ir.Value:
    one = e.const(
        np.full(
            [1] * (len(piece_shape) if isinstance(piece_shape, list) else 1),
            _identity(op, dtype),
            dtype=dtype.numpy(),
        )
    )
    if isinstance(piece_shape, list):
        return e.op("Expand", one, e.i64(piece_shape), dtype=dtype, shape=piece_shape)
    return e.op("Expand", one, piece_shape, dtype=dtype)


def _links(
    e: Emitter, pieces: list[ir.Value], order: list[int], op: str, dtype: ir.DataType
) -> dict[int, ir.Value]:
    """The inclusive chain over `pieces` taken in `order`: {k: op of the pieces up to k}."""
    out: dict[int, ir.Value] = {}
    prev = None
    for k in order:
        prev = pieces[k] if prev is None else e.op(op, prev, pieces[k], dtype=dtype)
        out[k] = prev
    return out


def chain(
    e: Emitter,
    x: ir.Value,
    n: int,
    ax: int,
    op: str,
    exclusive: bool,
    reverse: bool,
    dtype: ir.DataType,
    piece_shape: list[int] | ir.Value | None,
) -> tuple[ir.Value, ir.Value]:
    """Sequential scan of n slices along `ax`: (scanned tensor, inclusive total slice).
    `piece_shape` (one slice's shape) is read only by an exclusive scan, which needs it."""
    pieces = e.split(x, [1] * n, ax) if n > 1 else [x]
    order = list(range(n - 1, -1, -1)) if reverse else list(range(n))
    inc = _links(e, pieces, order, op, dtype)
    total = inc[order[-1]]
    if exclusive:
        assert piece_shape is not None  # the callers give it for an exclusive scan
        out = {order[0]: _ones_like_piece(e, dtype, piece_shape, op)}
        for i in range(1, n):
            out[order[i]] = inc[order[i - 1]]
    else:
        out = inc
    parts = [out[k] for k in range(n)]
    y = parts[0] if n == 1 else e.op("Concat", *parts, axis=ax, dtype=dtype)
    return y, total


def scan_static(
    e: Emitter,
    x: ir.Value,
    shape: list[int | None],
    axis: int,
    op: str,
    exclusive: bool,
    reverse: bool,
    dtype: ir.DataType,
    max_width: int | None = None,
) -> ir.Value:
    """Scan along `axis` whose length is known; other dims may be symbolic. No Split or Concat
    is wider than `max_width` (None: the defaults above)."""
    n = shape[axis]
    assert n is not None  # the axis length is known here (scan_symbolic otherwise)
    rank = len(shape)
    static = [d for d in shape if d is not None]
    all_static = len(static) == rank
    P = _known_product(shape[:axis])
    I = _known_product(shape[axis + 1 :])
    if n == 0 or (all_static and 0 in shape):
        return e.op("Identity", x, dtype=dtype)
    if n == 1:
        if exclusive:
            one = e.const(
                np.full([1] * rank, _identity(op, dtype), dtype=dtype.numpy())
            )
            return e.op("Expand", one, e.op("Shape", x), dtype=dtype)
        return e.op("Identity", x, dtype=dtype)
    small_inner = I is not None and I < SMALL_INNER
    if n <= _chain_max(small_inner, max_width):
        # one chain on x itself: no view, so a graph input is not copied
        piece = (
            [1 if k == axis else d for k, d in enumerate(static)]
            if all_static
            else _dyn_piece_shape(e, x, axis)
            if exclusive
            else None
        )
        return chain(e, x, n, axis, op, exclusive, reverse, dtype, piece)[0]
    if P is None and I is None:
        return scan_symbolic(
            e, x, shape, axis, op, exclusive, reverse, dtype, max_width
        )[0]
    y = radix_scan(
        e,
        e.reshape(x, [_dim(P), n, _dim(I)]),
        P,
        n,
        I,
        op,
        exclusive,
        reverse,
        dtype,
        small_inner,
        max_width,
    )
    return e.reshape(y, static if all_static else e.op("Shape", x))


def radix_scan(
    e: Emitter,
    x: ir.Value,
    P: int | None,
    n: int,
    I: int | None,
    op: str,
    exclusive: bool,
    reverse: bool,
    dtype: ir.DataType,
    small_inner: bool,
    max_width: int | None = None,
) -> ir.Value:
    """Scan along axis 1 of x, a [P, n, I] view (P or I None when symbolic, never both).

    Cut the axis into m blocks of b consecutive elements and view them as [P·m, b, I]: one
    chain over the b columns gives every block's inclusive scan and total; the m totals are
    scanned (exclusive) the same way, recursively; each column is then combined with its
    block's prefix and the columns concatenated back.
    """
    if n <= _chain_max(small_inner, max_width):
        piece = (
            [P, 1, I]
            if P is not None and I is not None
            else _dyn_piece_shape(e, x, 1)
            if exclusive
            else None
        )
        return chain(e, x, n, 1, op, exclusive, reverse, dtype, piece)[0]
    b = _block(n, small_inner, max_width)
    m = -(-n // b)
    if (
        m * b != n
    ):  # pad with the identity: at the end, or at the start of a reverse scan
        pad = m * b - n
        x = e.pad(
            x,
            [0, pad, 0, 0, 0, 0] if reverse else [0, 0, 0, 0, pad, 0],
            e.scalar(_identity(op, dtype), dtype),
        )
    rows = P * m if P is not None else -1
    cols = e.split(e.reshape(x, [rows, b, _dim(I)]), [1] * b, 1)
    order = list(range(b - 1, -1, -1)) if reverse else list(range(b))
    within = _links(e, cols, order, op, dtype)
    totals = within[order[-1]]
    prefix = radix_scan(
        e,
        e.reshape(totals, [_dim(P), m, _dim(I)]),
        P,
        m,
        I,
        op,
        True,
        reverse,
        dtype,
        small_inner,
        max_width,
    )
    prefix = e.reshape(prefix, [rows, 1, _dim(I)])
    y = e.reshape(
        _with_prefix(e, prefix, within, order, op, exclusive, dtype),
        [_dim(P), m * b, _dim(I)],
    )
    if m * b != n:
        start = m * b - n if reverse else 0
        y = e.slice(y, [start], [start + n], [1])
    return y


def _with_prefix(
    e: Emitter,
    prefix: ir.Value,
    within: dict,
    order: list[int],
    op: str,
    exclusive: bool,
    dtype: ir.DataType,
) -> ir.Value:
    """Each block column combined with its block's (exclusive) prefix, concatenated along axis 1:
    the inclusive chain value of the column, or for an exclusive scan that of the column before
    it in scan order (the first column takes the prefix alone)."""
    parts = {}
    for i, k in enumerate(order):
        if not exclusive:
            parts[k] = e.op(op, prefix, within[k], dtype=dtype)
        else:
            parts[k] = (
                prefix
                if i == 0
                else e.op(op, prefix, within[order[i - 1]], dtype=dtype)
            )
    return e.op("Concat", *[parts[k] for k in range(len(order))], axis=1, dtype=dtype)


def scan_plan(shape: list[int | None], axis: int, max_width: int | None = None) -> str:
    """What scan_static lays out for this axis, for the report: "single chain", or the block
    sizes level by level ("blocks of 4, 4, 4, then a chain of 4")."""
    n = shape[axis]
    I = _known_product(shape[axis + 1 :])
    small_inner = I is not None and I < SMALL_INNER
    if None in shape[:axis] and I is None:
        return "radix scan with run-time block counts (outer and inner dims symbolic)"
    assert n is not None  # the callers report a known axis length only
    levels = []
    while n > _chain_max(small_inner, max_width):
        b = _block(n, small_inner, max_width)
        levels.append(b)
        n = -(-n // b)
    if not levels:
        return "single chain"
    return f"blocks of {', '.join(map(str, levels))}, then a chain of {n}"


def _chain_max(small_inner: bool, max_width: int | None = None) -> int:
    limit = CHAIN_MAX if small_inner else FLAT_MAX
    return limit if max_width is None else min(limit, max_width)


def _block(n: int, small_inner: bool, max_width: int | None = None) -> int:
    """Elements per block: a few strided columns, or about √n contiguous slices; at most
    `max_width` (then the widest divisor of n from max_width/2 up, else max_width, padded)."""
    b = radix(n) if small_inner else block_size(n)[1]
    if max_width is None or b <= max_width:
        return b
    return next(
        (d for d in range(max_width, max(2, max_width // 2) - 1, -1) if n % d == 0),
        max_width,
    )


def radix(n: int) -> int:
    """Columns per block on a small-inner axis: RADIX, else another small divisor of n, else
    RADIX with the axis padded."""
    for b in (RADIX, 3, 5, 6, 7, 8, 2):
        if n % b == 0:
            return b
    return RADIX


def _known_product(dims: list[int | None]) -> int | None:
    """The product of `dims`, None when one of them is symbolic."""
    known = [d for d in dims if d is not None]
    return int(np.prod(known)) if len(known) == len(dims) else None


def _dim(d: int | None) -> int:
    return -1 if d is None else d


def _dyn_piece_shape(e: Emitter, t: ir.Value, ax: int) -> ir.Value:
    s = e.op("Shape", t)
    # replace dim `ax` by 1: Concat(s[:ax], [1], s[ax+1:])
    parts = []
    if ax > 0:
        parts.append(e.slice(s, [0], [ax], [0]))
    parts.append(e.i64([1]))
    parts.append(e.slice(s, [ax + 1], [2**62], [0]))
    return e.op("Concat", *parts, axis=0)


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
    from Shape). Level by level: pad the axis to a multiple of b (with ones, at the end, or at
    the start of a reverse scan), chain the b columns of every block, scan the block totals
    (exclusive) one level down, combine, Concat, slice the padding off. After CHAIN_LEVELS_DYN
    levels the n / b^levels totals left are finished by Hillis–Steele steps, as many as a length
    below 2^31 needs — on a tensor b^levels times smaller than x.
    """
    post = shape[axis + 1 :]
    others = shape[:axis] + post
    if any(d is None or d == 0 for d in others):
        y = scan_doubling(e, x, axis, len(shape), op, exclusive, reverse, dtype)
        return y, (
            f"symbolic axis length and other dims symbolic: {DYN_STEPS}-step doubling scan on x itself "
            "(exact for empty tensors too)"
        )
    I_static = _known_product(post)
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
    view = e.reshape(x, sizes.concat(e, [P, n, I]))
    y = _radix_symbolic(
        e, view, P, n, I, op, exclusive, reverse, dtype, b, levels, DYN_STEPS
    )
    y = e.reshape(y, sizes.shape_tensor(e, x))
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
    fill = e.scalar(_identity(op, dtype), dtype)
    pads = sizes.concat(e, [0, pad, 0, 0, 0, 0] if reverse else [0, 0, 0, 0, pad, 0])
    x = e.op("Pad", x, pads, fill, mode="constant")
    rows = sizes.mul(e, P, m)
    cols = e.split(e.reshape(x, sizes.concat(e, [rows, b, I])), [1] * b, 1)
    order = list(range(b - 1, -1, -1)) if reverse else list(range(b))
    within = _links(e, cols, order, op, dtype)
    totals = e.reshape(within[order[-1]], sizes.concat(e, [P, m, I]))
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
    prefix = e.reshape(prefix, sizes.concat(e, [rows, 1, I]))
    y = e.reshape(
        _with_prefix(e, prefix, within, order, op, exclusive, dtype),
        sizes.concat(e, [P, sizes.mul(e, m, b), I]),
    )
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
    """Hillis–Steele along axis 1 of a [P, n, I] view: `steps` steps y = y ⊕ shift(y, 2^k), each
    shift a Pad (identity) then Slice; exact for every length < 2^steps."""
    ident = e.scalar(_identity(op, dtype), dtype)
    n_t = sizes.tensor(e, n)

    def shift(t: ir.Value, s: int) -> ir.Value:
        w = e.op("Min", e.i64([s]), n_t)
        pads = (
            e.op("Concat", e.i64([0, 0, 0, 0]), w, e.i64([0]), axis=0)
            if reverse
            else e.op("Concat", e.i64([0]), w, e.i64([0, 0, 0, 0]), axis=0)
        )
        padded = e.op("Pad", t, pads, ident, mode="constant")
        if reverse:
            return e.op(
                "Slice", padded, w, e.op("Add", w, n_t), e.i64([1]), dtype=dtype
            )
        return e.op("Slice", padded, e.i64([0]), n_t, e.i64([1]), dtype=dtype)

    y = x
    for k in range(steps):
        y = e.op(op, y, shift(y, 2**k), dtype=dtype)
    if exclusive:
        y = shift(y, 1)
    return y


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
    ident = e.const(np.asarray(_identity(op, dtype), dtype=dtype.numpy()))
    n = e.slice(e.op("Shape", x), [axis], [axis + 1], [0])  # [1] int64
    zeros_before = e.i64([0] * axis)
    zeros_mid = e.i64([0] * (rank - 1))
    zeros_after = e.i64([0] * (rank - axis - 1))

    def shift(t: ir.Value, s: int) -> ir.Value:
        w = e.op("Min", e.i64([s]), n)
        parts = (
            [zeros_before, e.i64([0]), zeros_mid, w, zeros_after]
            if reverse
            else [zeros_before, w, zeros_mid, e.i64([0]), zeros_after]
        )
        parts = [
            p
            for p in parts
            if not (p is zeros_before and axis == 0)
            and not (p is zeros_after and axis == rank - 1)
            and not (p is zeros_mid and rank == 1)
        ]
        pads = e.op("Concat", *parts, axis=0)
        padded = e.pad(t, pads, ident)
        if reverse:
            return e.op(
                "Slice", padded, w, e.op("Add", w, n), e.i64([axis]), dtype=dtype
            )
        return e.op("Slice", padded, e.i64([0]), n, e.i64([axis]), dtype=dtype)

    y = x
    for k in range(DYN_STEPS):
        y = e.op(op, y, shift(y, 2**k), dtype=dtype)
    if exclusive:
        y = shift(y, 1)
    return y
