"""ScatterElements / ScatterND / Scatter (any reduction, any opset ≥ 11) -> ops the DML EP claims.

The DML EP rejects every reduction (`QueryScatter`, DmlOperatorScatter.cpp) and, in models
importing opset ≥ 18, has no kernel for ScatterElements / ScatterND at all (registered at
11/13/16 without an end version; kernel_registry.cc `VerifyVersion`). This rule rewrites all
three into TopK, Gather, GatherElements, Where, Pad, Slice, Split, Concat, Equal, MaxUnpool,
Range and elementwise ops, which the DML EP runs at opsets 11–21. Memory is O(K + M) for K
updates into M data elements — nothing is ever K × M.

Shapes may be symbolic or data-dependent: every size (K, M, strides, the padding of the scan)
is an int when the graph knows it and otherwise comes from `Shape` / `Size` at run time
(`sizes.py`), in small int64 nodes that ONNX Runtime keeps on the CPU next to a GPU EP.

1. flat positions, int32 (M + K < 2^31, guarded): `index · stride` is a Gather from
   `Range(0, dim · stride, stride)` (which also normalises negative indices, as Gather does),
   plus a broadcast sum of the other coordinates' `Range`s — two full-size passes;
2. reductions only: sort the positions (TopK, smallest first; equal keys keep index order),
   gather the updates in that order, and fold each run of equal positions with the blocked
   segmented scan of `segscan.py` (a chain in blocks of 16, the same over block ends, a short
   Hillis–Steele for the rest); the run's last element is combined with the data element.
   Float max / min follow ONNX Runtime's sequential rule exactly: `_max_min_sequential`;
3. write: MaxUnpool puts (i + 1) — the run's last slot, as float32 — at each run's position
   (every other slot goes to a dummy position M, sliced off), so A[m] names the update that
   lands on m; the output is a Gather from [data; results] at `Where(A > 0, M + A − 1, m)`.
4. guard (on by default; `check_indices=False` drops it): the run fails, as ONNX Runtime's
   kernel does, when an index is outside [−dim, dim) — ReduceMin / ReduceMax of the indices
   decide a shape that the final Reshape refuses (a GPU Gather does not fail on a bad index
   by itself). Sizes only known at run time are guarded the same way, always: K + 1 < 2^24
   (slot numbers exact in float32) and M + K < 2^31 (int32 gather indices).
"""

from __future__ import annotations

import numpy as np
import onnx_ir as ir

from ..._domain import DOMAIN
from . import scatter_clean, sizes
from ._base import (
    Emitter,
    Refusal,
    Rewrite,
    RewriteContext,
    Rule,
    attr_int,
    attr_str,
    zeros_inferred,
)
from .segscan import (
    BLOCK,
    fold_step,
    keep_step,
    segmented_scan,
    shift,
)
from .sizes import Size

REDUCE_OPS = {"add": "Add", "mul": "Mul", "max": "Max", "min": "Min"}
MAX_SLOTS = 2**24 - 2
MAX_GATHER = 2**31 - 1
_FLOATS = (
    ir.DataType.FLOAT,
    ir.DataType.DOUBLE,
    ir.DataType.FLOAT16,
    ir.DataType.BFLOAT16,
)
#: the guard's refused shape: Reshape rejects any dim below -1 (on every EP, at run time)
_BAD_DIM = -2


class ScatterLowering(Rule):
    name = "scatter-sort-scan-unpool"
    ops = (
        ("", "ScatterElements"),
        ("", "ScatterND"),
        ("", "Scatter"),
        (DOMAIN, "ScatterElements"),
    )
    summary = "TopK sort, blocked segmented scan, MaxUnpool write"

    def check(self, node: ir.Node, ctx: RewriteContext) -> Refusal | None:
        if len(node.inputs) < 3 or any(v is None for v in node.inputs[:3]):
            return Refusal("missing-inputs", "missing inputs")
        data, indices, updates = node.inputs[:3]
        # refused above
        assert data is not None and indices is not None and updates is not None
        for what, v in (("data", data), ("indices", indices), ("updates", updates)):
            if v.shape is None:
                return Refusal("rank-unknown", f"the rank of {what} is unknown")
        dshape, ishape, ushape = data.shape, indices.shape, updates.shape
        # refused above
        assert dshape is not None and ishape is not None and ushape is not None
        if len(dshape) == 0:
            return Refusal("scalar-data", "0-d data")
        if node.op_type == "ScatterND":
            coords = ishape[-1]
            if not isinstance(coords, int):
                return Refusal(
                    "coordinates-symbolic",
                    "the last dim of the indices (coordinates per update) is not static",
                )
            if coords < 1:
                return Refusal(
                    "no-coordinates", "ScatterND with 0 coordinates per update"
                )
        red = attr_str(node, "reduction", "none")
        if red != "none" and red not in REDUCE_OPS:
            return Refusal("reduction-unknown", f"unknown reduction {red!r}")
        K = _static_numel(updates)
        if K is not None and K > MAX_SLOTS:
            return Refusal(
                "too-many-updates",
                f"{K} updates: slot numbers would not be exact in float32 (limit {MAX_SLOTS})",
            )
        M = _static_numel(data)
        if K is not None and M is not None and M + 2 * K >= 2**31:
            return Refusal(
                "index-overflow",
                f"{M} data elements and {K} updates: int32 gather indices would overflow",
            )
        if ctx.opset < 11:
            return Refusal("opset-too-old", f"opset {ctx.opset} < 11")
        if data.dtype is None:
            return Refusal("dtype-unknown", "the data element type is unknown")
        if red in ("max", "min") and data.dtype == ir.DataType.BOOL:
            return Refusal("dtype-unsupported", "max/min of bool")
        return None

    def rewrite(self, node: ir.Node, ctx: RewriteContext) -> Rewrite:
        data, indices, updates = node.inputs[:3]
        # check() passed
        assert data is not None and indices is not None and updates is not None
        assert data.dtype is not None
        e = Emitter(ctx, node.name or node.op_type)
        red = attr_str(node, "reduction", "none")
        ddims = sizes.dims(e, data)
        idims = sizes.dims(e, indices)
        expected = _expected_update_dims(node.op_type, idims, ddims)
        shape_ok = _shape_guard(e, sizes.dims(e, updates), expected)
        if (
            shape_ok is None and _static_numel(updates) == 0
        ):  # no updates: the data unchanged
            # (the size nodes emitted above are unread, and done() drops them)
            return e.done(
                [e.op("Identity", data)],
                f"no updates: the data unchanged; reduction {red}",
            )
        if (
            _static_numel(indices) == 0
        ):  # no update: the data unchanged once the updates' shape is checked
            return e.done(
                [_unchanged_unless_mismatch(e, data, shape_ok)],
                f"no updates: the data unchanged; reduction {red}; run-time guard: the updates' shape",
            )
        flat = e.reshape(data, [-1])
        M = sizes.product(e, ddims)
        idx = (
            e.cast(indices, ir.DataType.INT64)
            if indices.dtype != ir.DataType.INT64
            else indices
        )
        clean = scatter_clean.applies(ctx.target, data.dtype, M)
        if node.op_type == "ScatterND":
            pos, K, ok = _positions_nd(e, idx, idims, ddims, ctx.check_indices, clean)
        else:
            axis = attr_int(node, "axis", 0) % len(ddims)
            pos, K, ok = _positions_elements(
                e, idx, idims, ddims, axis, ctx.check_indices, clean, not clean
            )
        if ok is not None and not clean:  # (the clean variant computes it on the CPU)
            ok = _to_host(e, ok)
        ok = _and(e, ok, _size_guard(e, K, M, clean), clean)
        if clean:
            ok = _and(e, ok, scatter_clean.size_guard(e, M), clean)
        ok = _and(e, ok, shape_ok, clean)
        width = ctx.options.get("max_io_width") or BLOCK
        if clean:
            crow: Size | None = None
            if node.op_type != "ScatterND" and len(ddims) > 1:
                pos, vals, crow = scatter_clean.rows_of(e, pos, updates, idims, axis)
            else:
                pos = e.reshape(pos, [-1])
                vals = e.reshape(updates, [-1])
            out = scatter_clean.scatter_clean(
                e, flat, pos, vals, K, M, red, data.dtype, min(BLOCK, width), crow
            )
        else:
            vals = e.reshape(updates, [-1])
            row = None
            if (
                node.op_type != "ScatterND"
                and axis == len(ddims) - 1
                and len(ddims) > 1
                and isinstance(idims[-1], int)
                and idims[-1] > 1
            ):
                row = idims[
                    -1
                ]  # positions along the last axis: sorted row by row (see scatter_flat)
            out = scatter_flat(
                e,
                flat,
                pos,
                vals,
                K,
                M,
                red,
                data.dtype,
                block=min(BLOCK, width),
                row=row,
            )
        shape = zeros_inferred(e, sizes.shape_tensor(e, data))
        if ok is not None:
            shape = e.op("Where", ok, shape, e.i64([_BAD_DIM] * len(ddims)))
        y = e.reshape(out, shape, zeros_mapped=True)
        if ok is not None:
            _name_guard(e, y)
        note = f"{_show(K)} updates into {_show(M)} elements; reduction {red}"
        if clean:
            note += "; WebGPU-clean variant (float32 sort keys, ScatterElements write)"
        if ok is not None:
            note += "; run-time guard: " + (
                "indices and sizes" if ctx.check_indices else "sizes"
            )
        elif not ctx.check_indices:
            note += "; indices not checked (out-of-range indices write wrong elements)"
        return e.done([y], note)


def _static_numel(v: ir.Value) -> int | None:
    if v.shape is None:
        return None
    known = [d for d in v.shape if isinstance(d, int)]
    if len(known) != len(v.shape):
        return None
    return int(np.prod(known))


def _show(s: Size) -> str:
    return str(s) if isinstance(s, int) else "n (run time)"


def _and(
    e: Emitter, a: ir.Value | None, b: ir.Value | None, host: bool = False
) -> ir.Value | None:
    """a and b (either may be None: no check). `host`: spelt with Or and Equal on bools, which
    the WebGPU plugin has no kernel for, so the whole guard stays on the CPU EP beside its int64
    inputs (And and Not it has: they would bounce each flag to the device and back)."""
    if a is None or b is None:
        return a if b is None else b
    if host:
        return _not(e, e.op("Or", _not(e, a, True), _not(e, b, True)), True)
    return e.op("And", a, b)


def _not(e: Emitter, a: ir.Value, host: bool = False) -> ir.Value:
    """Not(a); `host`: Equal(a, false), a bool Equal (no WebGPU kernel, see `_and`)."""
    if host:
        return e.op("Equal", a, e.const(np.zeros((), dtype=bool)))
    return e.op("Not", a)


def _in_range(e: Emitter, idx: ir.Value, dim: Size, host: bool = False) -> ir.Value:
    """True when every element of idx lies in [-dim, dim): a min and a max over the indices
    (two reads of K integers), compared on scalars. `host`: the int64 indices are reduced on
    the CPU (no WebGPU kernel reduces int64), and the flag stays there (see `_and`)."""
    lo = e.op("ReduceMin", idx, keepdims=0)
    hi = e.op("ReduceMax", idx, keepdims=0)
    neg = sizes.sub(e, 0, dim)
    if host:
        below = e.op("Less", lo, sizes.tensor(e, neg))
        ok = _and(e, _not(e, below, True), e.op("Less", hi, sizes.tensor(e, dim)), True)
        assert ok is not None  # both flags given
        return ok
    below = e.op("Less", lo, sizes.on_device(e, neg))
    return e.op("And", e.op("Not", below), e.op("Less", hi, sizes.on_device(e, dim)))


def _to_host(e: Emitter, flag: ir.Value) -> ir.Value:
    """The device-side flag as a CPU tensor, through ONE host copy: the flag (as 0 or 1) is the
    shape input of a ConstantOfShape — an input the DML EP reads from CPU memory, so ORT copies
    the flag there — and that tensor's Shape is CPU-side again. Everything downstream (the size
    checks, the Where that picks the Reshape's shape) then reads only CPU tensors, and ORT keeps
    it on the CPU (fallback_cpu_capability.cc) instead of copying the shape to the device and
    back."""
    length = e.reshape(e.cast(flag, ir.DataType.INT64), [1])
    return e.op("Equal", e.op("Shape", e.op("ConstantOfShape", length)), e.i64([1]))


def _unchanged_unless_mismatch(
    e: Emitter, data: ir.Value, shape_ok: ir.Value | None
) -> ir.Value:
    """The data itself, but the run fails where `shape_ok` is false: Expand(data, [1]) is a copy,
    and its shape input comes from a Reshape of [1] to [-2] on a mismatch. The guard is not a
    Reshape of the data: ONNX Runtime's ReshapeFusion (reshape_fusion.cc) replaces a chain of
    Reshapes whose output shape is known by one Reshape to that constant shape, which would drop
    a guard written as Reshape(data, Where(ok, shape, bad))."""
    if shape_ok is None:
        return e.op("Identity", data)
    ones = e.op("Where", shape_ok, e.i64([1]), e.i64([_BAD_DIM]))
    guard = e.op("Reshape", e.i64([1]), ones)
    _name_guard(e, guard)
    return e.op("Expand", data, guard)


def _name_guard(e: Emitter, value: ir.Value) -> None:
    """Name the Reshape that fails a bad run `<node>/IndexOrSizeOutOfRange` (`run` reports it in
    one line) — unless an earlier rewrite of the graph emitted the same guard (Emitter's memo)."""
    node = value.producer()
    if node is not None and any(n is node for n in e.nodes):
        node.name = e.ctx.unique(f"{e.prefix}/IndexOrSizeOutOfRange")


def _expected_update_dims(
    op_type: str, idims: list[Size], ddims: list[Size]
) -> list[Size]:
    """The shape ONNX requires of the updates: the indices' shape (ScatterElements, Scatter), or
    indices.shape[:-1] + data.shape[q:] for ScatterND with q coordinates per update."""
    if op_type != "ScatterND":
        return idims
    q = idims[-1]
    assert isinstance(q, int)  # check() refuses a symbolic coordinate count
    return idims[:-1] + ddims[q:]


def _shape_guard(
    e: Emitter, udims: list[Size], expected: list[Size]
) -> ir.Value | None:
    """True when the updates have the shape ONNX requires (None when the declared shapes already
    prove it). ORT's CPU kernel refuses a mismatch ("Indices vs updates dimensions differs",
    scatter.cc); without this check the lowering would read too few or too many updates and
    return a value where ORT returns an error. Compared on the CPU, on shape tensors only. The
    ranks are equal: convert's RefuseStaticErrorsPass refuses a model where they differ."""
    pairs = [
        (u, x)
        for u, x in zip(udims, expected, strict=True)
        if not (isinstance(u, int) and isinstance(x, int) and u == x)
    ]
    if not pairs:
        return None
    got = sizes.concat(e, [u for u, _ in pairs])
    want = sizes.concat(e, [x for _, x in pairs])
    worst = e.op("ReduceMax", e.op("Abs", e.op("Sub", got, want)), keepdims=1)
    return e.op("Equal", worst, e.i64([0]))


def _size_guard(e: Emitter, K: Size, M: Size, host: bool = False) -> ir.Value | None:
    """K + 1 < 2^24 and M + K < 2^31 where the sizes are only known at run time."""
    checks = []
    if not isinstance(K, int):
        checks.append(e.op("Less", K, e.i64([MAX_SLOTS + 1])))
    if not (isinstance(K, int) and isinstance(M, int)):
        checks.append(
            e.op("Less", sizes.tensor(e, sizes.add(e, M, K)), e.i64([MAX_GATHER]))
        )
    out = None
    for c in checks:
        out = _and(e, out, c, host)
    return out


def _positions_elements(
    e: Emitter,
    idx: ir.Value,
    idims: list[Size],
    ddims: list[Size],
    axis: int,
    check: bool,
    host: bool = False,
    flat: bool = True,
) -> tuple[ir.Value, Size, ir.Value | None]:
    """Flat int32 positions of the updates (1-D; in the indices' shape where not `flat`), K and
    the index guard."""
    rank = len(ddims)
    # a stride is 0 only for empty data, where K is 0 too; Range refuses a 0 step, so ≥ 1
    strides = [
        sizes.maximum(e, sizes.product(e, ddims[d + 1 :]), 1) for d in range(rank)
    ]
    table = sizes.iota(
        e, ddims[axis], np.int32, step=strides[axis]
    )  # arange(dim) · stride
    pos = e.op(
        "Gather", table, idx, axis=0
    )  # negative indices count from the end, as in ONNX
    base = None
    for d in range(rank):
        if d == axis or (isinstance(idims[d], int) and idims[d] == 1):
            continue
        shape = [1] * rank
        shape[d] = -1
        term = e.reshape(sizes.iota(e, idims[d], np.int32, step=strides[d]), shape)
        base = term if base is None else e.op("Add", base, term)
    if base is not None:
        pos = e.op("Add", pos, base)
    ok = _in_range(e, idx, ddims[axis], host) if check else None
    return (e.reshape(pos, [-1]) if flat else pos), sizes.product(e, idims), ok


def _positions_nd(
    e: Emitter,
    idx: ir.Value,
    idims: list[Size],
    ddims: list[Size],
    check: bool,
    host: bool = False,
) -> tuple[ir.Value, Size, ir.Value | None]:
    q = idims[-1]
    assert isinstance(q, int)  # check() refuses a symbolic coordinate count
    T = sizes.product(e, idims[:-1])
    R = sizes.product(e, ddims[q:])
    idx2 = e.reshape(idx, [-1, q])
    tup = None
    ok = None
    for j in range(q):
        col = e.op("Gather", idx2, e.i64(j), axis=1)  # [T]
        stride = sizes.maximum(
            e, sizes.product(e, ddims[j + 1 :]), 1
        )  # 0 only for empty data
        comp = e.op(
            "Gather", sizes.iota(e, ddims[j], np.int32, step=stride), col, axis=0
        )
        tup = comp if tup is None else e.op("Add", tup, comp)
        if check:
            ok = _and(e, ok, _in_range(e, col, ddims[j], host), host)
    assert tup is not None  # check() refuses 0 coordinates per update
    pos = tup
    if not (isinstance(R, int) and R == 1):
        pos = e.op(
            "Add",
            e.reshape(tup, [-1, 1]),
            e.reshape(sizes.iota(e, R, np.int32), [1, -1]),
        )
    return e.reshape(pos, [-1]), sizes.mul(e, T, R), ok


def _identity(red: str, dt: ir.DataType) -> np.ndarray:
    np_dt = dt.numpy()
    if red == "add":
        v = -0.0 if dt in _FLOATS else 0  # x + (-0.0) == x bit for bit, -0.0 included
    elif red == "mul":
        v = 1
    elif dt in _FLOATS:
        v = -np.inf if red == "max" else np.inf
    else:
        info = np.iinfo(np_dt)
        v = info.min if red == "max" else info.max
    return np.asarray([v], dtype=np_dt)


def _choose(
    e: Emitter, a: ir.Value, b: ir.Value, take_b: ir.Value, n: Size
) -> ir.Value:
    """Where(take_b, b, a) for 1-D a, b of n elements, copying bits: ONNX Runtime's CPU float
    Where turns a selected −0.0 in its true branch into +0.0 (measured, 1.31), a gather copies
    bits. One GatherElements from the [n, 2] pairs (a, b) at column Cast(take_b): four passes
    (the pairs are two), where a Gather from [a; b] at Where(take_b, n + i, i) took five."""
    pairs = e.op("Concat", e.reshape(a, [-1, 1]), e.reshape(b, [-1, 1]), axis=1)
    column = e.reshape(e.cast(take_b, ir.DataType.INT32), [-1, 1])
    return e.reshape(e.op("GatherElements", pairs, column, axis=1), [-1])


def _max_min_sequential(
    e: Emitter,
    flat: ir.Value,
    spos: ir.Value,
    svals: ir.Value,
    not_first: ir.Value,
    K: Size,
    red: str,
    dt: ir.DataType,
    block: int,
    keys_float: bool = False,
) -> ir.Value:
    """Per sorted update k: ONNX Runtime's sequential max/min of the data item and the updates
    of k's run up to k (exact at each run's last element, which is all the caller reads).

    The CPU kernel (onnxruntime/core/providers/cpu/tensor/scatter.cc, `Max`/`Min` functors)
    keeps the current value only if it compares strictly greater (max) / smaller (min) than the
    update, else takes the update: a NaN is replaced by the next item, ties go to the later item
    (the sign of a zero survives). That fold is not associative, but it is once every NaN ends
    a segment: the value after a NaN starts afresh, as if nothing came before. So:

    * the data item is folded into the first update of its run (one strict compare, a
      bit-copying pick), so the run is K items, not 2K;
    * segment ids: a global prefix count (CumSum, int32, exact) of "first of its run, a NaN,
      or right after a NaN" — equal ids are exactly the items one sequential fold chains, and
      a NaN is a segment of its own (so a run whose last update is NaN gives that NaN);
    * one segmented scan with the sequential step over those ids (associative without NaN:
      the last of the items equal to the max / min).

    `keys_float` (the WebGPU-clean variant, `scatter_clean.py`): the ids are counted in float32
    (exact: K < 2^24) and the segment starts come from `x == x` and And — the plugin has no int32
    Slice, IsNaN or Or, and no bool Pad or Split for the scan's run flags.
    """
    compare = "Greater" if red == "max" else "Less"
    neutral = e.const(
        np.asarray([-np.inf if red == "max" else np.inf], dtype=dt.numpy())
    )
    d = e.op("Gather", flat, spos, axis=0)
    take_data = e.op("And", e.op("Not", not_first), e.op(compare, d, svals))
    items = _choose(e, svals, d, take_data, K)
    # the values shifted by one (a 0 shifted in), not the bool flags shifted: the DML EP's graph
    # fusion refuses Or(…, Slice(Pad(bool))) at session creation ("Invalid parameter",
    # DmlGraphFusionHelper.cpp; the lane, zoo segment_max / scatter_reduce_amax)
    zero = e.const(np.zeros(1, dtype=dt.numpy()))
    if keys_float:
        before = shift(e, svals, 1, K, zero)
        # continues = not first, not NaN, not after a NaN (x == x is "not NaN"): two Equals,
        # two Ands and one Not, where IsNaN and Or have no kernel
        ordered = e.op(
            "And", e.op("Equal", svals, svals), e.op("Equal", before, before)
        )
        starts = e.op("Not", e.op("And", not_first, ordered))
    else:
        isnan = e.op("IsNaN", svals)
        after_nan = e.op("IsNaN", shift(e, svals, 1, K, zero))
        starts = e.op("Or", e.op("Or", e.op("Not", not_first), isnan), after_nan)
    count_type = ir.DataType.FLOAT if keys_float else ir.DataType.INT32
    seg = prefix_count(e, e.cast(starts, count_type), K, count_type)
    bound = sizes.upper_bound(K, MAX_SLOTS)
    return segmented_scan(
        e,
        seg,
        items,
        K,
        bound,
        keep_step(compare),
        neutral,
        block=block,
        cont=e.op("Not", starts) if bound > block and not keys_float else None,
        key_dtype=np.float32 if keys_float else np.int32,
    )


def prefix_count(
    e: Emitter, flags: ir.Value, n: Size, dtype: ir.DataType = ir.DataType.INT32
) -> ir.Value:
    """Inclusive prefix sum of a 1-D int32 tensor of n elements (exact: n < 2^31), or of a float32
    one (exact: n < 2^24).

    ONNX's CumSum, except where the target's own CumSum is known to be slow for this length
    (``cost_facts["cumsum_native_max_axis"]``: WebGPU's kernel reads the whole prefix for every
    element, onnxruntime/core/providers/webgpu/math/cumsum.cc); there, when n is static, the
    blocked Add scan of cumprod.py, no wider than the target binds."""
    from ...targets import get_target
    from .cumprod import scan_static

    target = get_target(e.ctx.target)
    limit = target.cost_facts.get("cumsum_native_max_axis")
    if limit is not None and isinstance(n, int) and n > limit:
        return scan_static(
            e,
            flags,
            [n],
            0,
            "Add",
            False,
            False,
            dtype,
            max_width=e.ctx.options.get("max_io_width"),
        )
    return e.op("CumSum", flags, e.i32(0))


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
    row: int | None = None,
) -> ir.Value:
    """Scatter K values at flat positions into the M-element 1-D `flat`.

    `row`: the positions come in rows of this length whose ranges are disjoint and increasing
    (a ScatterElements along the last axis: each row of indices writes one row of the data, rows
    in row-major order), so sorting each row sorts them all — a TopK along the rows instead of
    over all K (measured on ORT's CPU EP at [1000, 1000]: 58 ms instead of 70 single-threaded,
    and the rows are spread over the intra-op threads)."""
    fold = None  # (op, identity, run folds): the data is combined at the write
    if red == "none":
        target = pos
        result = vals
    else:
        # sort the int32 positions themselves (exact: M + K < 2^31 is checked), no float Cast.
        # TopK keeps equal keys in index order (ONNX spec), so each run lists its updates in order.
        if row is None:
            spos, perm = e.op(
                "TopK", pos, sizes.tensor(e, K), outputs=2, largest=0, sorted=1, axis=0
            )
            svals = e.op("Gather", vals, perm, axis=0)
        else:
            rows_pos, perm = e.op(
                "TopK",
                e.reshape(pos, [-1, row]),
                e.i64([row]),
                outputs=2,
                largest=0,
                sorted=1,
                axis=1,
            )
            spos = e.reshape(rows_pos, [-1])
            svals = e.reshape(
                e.op("GatherElements", e.reshape(vals, [-1, row]), perm, axis=1), [-1]
            )
        # same[i]: element i + 1 continues element i's run (K − 1 flags, from two views of spos)
        same = e.op(
            "Equal",
            e.op("Slice", spos, e.i64([1]), e.i64([2**62]), e.i64([0])),
            e.op("Slice", spos, e.i64([0]), e.i64([-1]), e.i64([0])),
        )
        no = e.const(np.zeros(1, dtype=bool))
        is_last = e.op("Not", e.op("Concat", same, no, axis=0))
        op = REDUCE_OPS[red]
        sequential = red in ("max", "min") and dt in _FLOATS
        not_first = None
        if (
            sequential or sizes.upper_bound(K, MAX_SLOTS) > block
        ):  # else the scan never reads it
            # (no dead node: the DML EP's graph fusion fails on an unused bool Concat, lane-tested)
            not_first = e.op("Concat", no, same, axis=0)
            if not isinstance(
                K, int
            ):  # K = 0 at run time: one flag too many (same has 0, not −1)
                not_first = e.op(
                    "Slice", not_first, e.i64([0]), sizes.tensor(e, K), e.i64([0])
                )
        if sequential:
            assert not_first is not None  # made above for every sequential fold
            result = _max_min_sequential(
                e, flat, spos, svals, not_first, K, red, dt, block
            )
        else:
            identity = e.const(_identity(red, dt))
            scanned = segmented_scan(
                e,
                spos,
                svals,
                K,
                sizes.upper_bound(K, MAX_SLOTS),
                fold_step(op, dt in _FLOATS),
                identity,
                block=block,
                cont=not_first,
            )
            fold = (op, identity, scanned)
        target = e.op("Where", is_last, spos, sizes.on_device(e, M, np.int32))
    n_slots = K
    if not isinstance(K, int):
        # K may be 0 at run time, and MaxUnpool refuses an empty input: one more slot, aimed at
        # the dummy position M like every other slot that is not a run's last
        target = e.op(
            "Pad", target, e.i64([0, 1]), sizes.scalar(e, M, np.int32), mode="constant"
        )
        n_slots = sizes.add(e, K, 1)
    slots = e.reshape(sizes.iota(e, n_slots, np.float32, start=1), [1, 1, -1])
    L = sizes.maximum(
        e, sizes.add(e, M, 1), n_slots
    )  # MaxUnpool's output may not be shorter than its input
    # MaxUnpool's indices are int64 (its only index type): the one widening Cast of the rule
    target = e.cast(target, ir.DataType.INT64)
    unpooled = e.op(
        "MaxUnpool",
        slots,
        e.reshape(target, [1, 1, -1]),
        sizes.concat(e, [1, 1, L]),
        kernel_shape=[1],
        strides=[1],
    )
    A = e.op(
        "Slice", e.reshape(unpooled, [-1]), e.i64([0]), sizes.tensor(e, M), e.i64([0])
    )
    if fold is not None:
        # add, mul and integer max/min: data op (its run's fold, or the op's identity where no
        # update lands — x op identity == x bit for bit), one Gather at the slot number itself
        op, identity, scanned = fold
        contrib = e.op(
            "Gather",
            e.op("Concat", identity, scanned, axis=0),
            e.cast(A, ir.DataType.INT32),
            axis=0,
        )
        return e.op(op, flat, contrib)
    mark = e.op("Greater", A, e.const(np.float32(0)))
    # int32 indices (K < 2^24): a float -> int32 Cast, never a 64-bit one. The write is a Gather
    # from [data; results] (no float Where: it would turn -0.0 into +0.0); slot A ≥ 1 is
    # result A − 1, at M + A − 1.
    src = e.op(
        "Add",
        e.cast(A, ir.DataType.INT32),
        sizes.on_device(e, sizes.sub(e, M, 1), np.int32),
    )
    idx = e.op("Where", mark, src, sizes.iota(e, M, np.int32))
    return e.op("Gather", e.op("Concat", flat, result, axis=0), idx, axis=0)
