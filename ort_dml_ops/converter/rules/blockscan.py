"""The blocked scan of a tensor along one axis with an associative op (Mul for CumProd, Add for
CumSum on WebGPU and for the scatter lowering's run counts) -> Split, the op, Concat, Reshape.

Used by cumprod.py (CumProd), cumsum_scan.py (CumSum on long axes where the target's own kernel
is slow) and segscan.prefix_count.

Static axis length n — a blocked scan made of Split, the op and Concat:

1. an axis of at most 32 elements (8 when the inner size I, the product of the dims after the
   axis, is below 16) is one chain on x itself: Split into slices, y_k = y_{k-1} op x_k, Concat;
2. longer axes: view x as [P, n, I], cut the axis into m blocks of b consecutive elements
   ([P·m, b, I]), chain the b columns (every block at once; the last link is each block's
   total), scan the m totals exclusively (the same construction, recursively) and fold
   each column with its block's prefix before the Concat. A tail that does not fill a block is
   padded with the op's identity and sliced off.

b is a divisor near √n when I ≥ 16 (slices are contiguous runs, so one level of wide blocks
is cheapest), and 4 (or another small divisor) when I < 16: the columns are then strided, and
ONNX Runtime's Split of a few strided columns is fast where that of 32 is 4x slower. This is
why there is no Transpose: ORT's transpose optimizer pushes a Transpose into the Split and
Concat around it, which turns them into exactly those slow strided copies. `exclusive` and
`reverse` only change which slice starts each chain and where the identities go.

Symbolic axis length: the same construction with block counts computed at run time
(blockscan_symbolic.py).

A target may cap how many inputs/outputs one node binds (``max_width``, from the target's
``max_io_width``: 8 on WebGPU, whose shaders bind each tensor as a storage buffer): chains and
blocks are then at most that wide, so the scan takes more levels of narrower blocks.

Integers are exact (wrapping addition and multiplication are associative); floats differ from
the sequential reference only by rounding: see docs/convert.md for the bound.
"""

from __future__ import annotations

import math

import numpy as np
import onnx_ir as ir

from ._base import FLOATS
from .emitter import Emitter

#: Axes this short are scanned with a single chain (slices of at least SMALL_INNER elements).
FLAT_MAX = 32
#: Inner size (elements) below which slices along the axis are strided columns: the scan then
#: splits RADIX columns at a time (ORT's Split of many narrow columns is slow) ...
SMALL_INNER = 16
RADIX = 4
#: ... and chains at most CHAIN_MAX of them.
CHAIN_MAX = 8


def block_size(n: int) -> tuple[int, int]:
    """(B, b): B blocks of b elements, B·b ≥ n, b a divisor of n near √n when there is one."""
    r = math.isqrt(n)
    for d in range(r, max(1, r // 2) - 1, -1):
        if n % d == 0:
            b = n // d if n // d <= 2 * r else d
            return n // b, b
    b = r if r * r >= n else r + 1
    return -(-n // b), b


def op_identity(op: str, dtype: ir.DataType):
    """The value that changes nothing the op combines it with. For a float sum that is −0.0,
    not +0.0: x + (−0.0) is x for every x, −0.0 included, where +0.0 + (−0.0) is +0.0. ORT's
    CPU CumSum keeps −0.0 where every summand is −0.0 (cumsum.cc adds each element to the sum
    so far, starting from the first); a scan padded with +0.0 turned those into +0.0."""
    if op == "Mul":
        return 1
    if op == "Add":
        return -0.0 if dtype in FLOATS else 0
    raise ValueError(op)


def _ones_like_piece(
    e: Emitter, dtype: ir.DataType, piece_shape: list[int] | ir.Value, op: str
) -> ir.Value:
    one = e.const(
        np.full(
            [1] * (len(piece_shape) if isinstance(piece_shape, list) else 1),
            op_identity(op, dtype),
            dtype=dtype.numpy(),
        )
    )
    if isinstance(piece_shape, list):
        return e.op("Expand", one, e.i64(piece_shape), dtype=dtype, shape=piece_shape)
    return e.op("Expand", one, piece_shape, dtype=dtype)


def links(
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
    inc = links(e, pieces, order, op, dtype)
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
    P = known_product(shape[:axis])
    I = known_product(shape[axis + 1 :])
    if n == 0 or (all_static and 0 in shape):
        return e.op("Identity", x, dtype=dtype)
    if n == 1:
        if exclusive:
            one = e.const(
                np.full([1] * rank, op_identity(op, dtype), dtype=dtype.numpy())
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
        # no static view: the run-time layout (which imports this module's pieces)
        from .blockscan_symbolic import scan_symbolic

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
            e.scalar(op_identity(op, dtype), dtype),
        )
    rows = P * m if P is not None else -1
    cols = e.split(e.reshape(x, [rows, b, _dim(I)]), [1] * b, 1)
    order = list(range(b - 1, -1, -1)) if reverse else list(range(b))
    within = links(e, cols, order, op, dtype)
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
        with_prefix(e, prefix, within, order, op, exclusive, dtype),
        [_dim(P), m * b, _dim(I)],
    )
    if m * b != n:
        start = m * b - n if reverse else 0
        y = e.slice(y, [start], [start + n], [1])
    return y


def with_prefix(
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
    I = known_product(shape[axis + 1 :])
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


def scan_kernels(
    shape: list[int | None], axis: int, exclusive: bool, max_width: int | None = None
) -> int | None:
    """The kernels ONNX Runtime runs for scan_static's layout of this axis (Reshapes are views):
    per level a Split, b − 1 links, b combines (b − 1 exclusive) and a Concat, with a Pad and a
    Slice where b does not divide the length. The last chain: a Split, its links and a Concat;
    where it is exclusive (every level below the top) its last link, the total, is unused and
    ORT drops it, and the Expand of the identity it starts with is folded to a constant where
    the shape is static (level-1 constant folding). None where scan_static hands over to the
    run-time layout or the axis length is unknown. Pinned against `inspect` by test_cost."""
    n = shape[axis]
    I = known_product(shape[axis + 1 :])
    if n is None or (known_product(shape[:axis]) is None and I is None):
        return None
    if n <= 1:  # Identity (dropped), or an exclusive scan's Expand of the identity
        return 1 if n == 1 and exclusive and None in shape else 0
    small_inner = I is not None and I < SMALL_INNER
    kernels = 0
    while n > _chain_max(small_inner, max_width):
        b = _block(n, small_inner, max_width)
        m = -(-n // b)
        kernels += 2 + (b - 1) + (b - 1 if exclusive else b) + (2 if m * b != n else 0)
        n, exclusive = m, True  # the block totals are scanned exclusively
    if not exclusive:
        return kernels + 2 + (n - 1)
    expand = 0 if None not in shape else 1
    return kernels + 2 + (n - 2) + expand


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


def known_product(dims: list[int | None]) -> int | None:
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
