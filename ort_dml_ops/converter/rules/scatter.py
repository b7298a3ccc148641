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

1. flat positions, int32 (M + K < 2^31, guarded): a ScatterElements whose indices span more
   than its axis reads them in one GatherElements along the axis from `Range(0, M)` shaped as
   the data (the position table; GatherElements normalises negative indices, and ORT folds
   the Range where M is static, up to `POSITION_TABLE_LIMIT` elements); otherwise, and for
   ScatterND's coordinates, `index · stride` is a gather from `Range(0, dim · stride, stride)`
   (each 1-D gather of the rule is a GatherElements, `Emitter.take`), plus a broadcast sum of
   the other coordinates' `Range`s;
2. reductions only: sort the positions (TopK, smallest first; equal keys keep index order;
   a last-axis scatter row by row), gather the updates in that order, and fold each run of
   equal positions: float add and mul by blocks of masked reductions (`blocksum.py`: one mask,
   Where and ReduceSum / ReduceProd per level; integer mul the same with halving Muls, up to
   `INTEGER_PRODUCT_LIMIT` static updates; with static sizes their rows — along another axis
   moved last by two Transposes, a ScatterND's slice elements by `_slice_rows` — let the last
   level end on row ends), integer add, max and min and float max / min by
   sorts and a prefix sum (`scatter_lean.py`), the rest (float64, longer integer products) with
   the blocked segmented scan of `segscan.py` (a chain in blocks of 16, the same over block ends,
   a short Hillis–Steele for the rest), which reads the run flags of neighbouring positions,
   not the positions. The scan's input starts with one lead item
   (`scatter_write.with_lead`), so that slot s of step 3 is index s of its output. Float max /
   min follow ONNX Runtime's sequential rule exactly: `max_min_sequential` (steps 2 and 3 are
   `scatter_write.py`);
3. write: MaxUnpool puts the slot number s = i + 1 of each run's last sorted update i at the
   run's position (every other slot goes to a dummy position M, sliced off), so A[m] names
   the update that lands on m, 0 where none does. Float add unpools each run's negated sum
   instead: output = data − U, +0.0 where no update lands (x − (+0.0) == x, −0.0 included).
   Mul, integer add and integer max / min: output =
   data op (the scan's output at A — the op's identity at the lead item); float max / min
   and none: a gather from [data; results] at `Where(A > 0, M + result index, m)` — where
   M + K < 2^24 is static, at `Max(B, m)` with B the unpooled slots numbered from M on (one
   kernel, not three); without a reduction the positions are int64, MaxUnpool's own type;
4. guard (`scatter_guard.py`; on by default, `check_indices=False` drops it): the run fails,
   as ONNX Runtime's kernel does, when an index is outside [−dim, dim) — ReduceMin / ReduceMax of the indices
   decide a shape that the final Reshape refuses (a GPU Gather does not fail on a bad index
   by itself). Sizes only known at run time are guarded the same way, always: K + 1 < 2^24
   (slot numbers exact in float32), M + K < 2^31 (int32 gather indices), the updates' shape
   and, off a ScatterElements' axis, indices no longer than the data.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
import onnx_ir as ir

from ..._domain import DOMAIN
from . import scatter_clean, sizes
from ._base import (
    Refusal,
    Rewrite,
    RewriteContext,
    Rule,
    attr_int,
    attr_str,
    constant_of_shape_fill,
)
from .emitter import Emitter
from .scatter_guard import (
    MAX_SLOTS,
    WRITE_SLACK,
    IndexCheck,
    both,
    checked_updates,
    dims_guard,
    expected_update_dims,
    in_range,
    in_range_on_host,
    register,
    shape_guard,
    size_guard,
    static_numel,
)
from .scatter_lean import as_rows
from .scatter_write import REDUCE_OPS, folds_by_blocks, scatter_flat
from .segscan import BLOCK
from .sizes import Size

#: the largest static data (elements) whose position table `positions_elements` builds: ORT
#: folds the table's Range into a constant it keeps for the session's lifetime (8 bytes an
#: element for reduction none's int64 positions), where a dispatch saved weighs less than a
#: pass of data this large; sizes known only at run time build it per run, as a transient
POSITION_TABLE_LIMIT = 2**20


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
        # a ScatterND's data and updates may have a rank known only at run time (_runtime_rank_dims)
        ranked = (indices,) if node.op_type == "ScatterND" else (data, indices, updates)
        for what, v in (("data", data), ("indices", indices), ("updates", updates)):
            if v in ranked and v.shape is None:
                return Refusal("rank-unknown", f"the rank of {what} is unknown")
        dshape, ishape = data.shape, indices.shape
        assert ishape is not None  # refused above
        if dshape is not None and len(dshape) == 0:
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
        K = static_numel(updates)
        if K is not None and K > MAX_SLOTS:
            return Refusal(
                "too-many-updates",
                f"{K} updates: slot numbers would not be exact in float32 (limit {MAX_SLOTS})",
            )
        M = static_numel(data)
        if K is not None and M is not None and M + 2 * K + WRITE_SLACK >= 2**31:
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
        if red != "none" and _reduces_exactly_itself(ctx.target, data.dtype):
            return Refusal(
                "native-exact",
                f"the {ctx.target} EP's own kernel reduces {data.dtype.name.lower()} exactly "
                "(an atomic update per element: a wrapped integer sum or product, a max or a "
                "min, is the same in any order): a lowering would only add kernels and copies",
            )
        if ctx.target in scatter_clean.CLEAN_TARGETS and not scatter_clean.takes(
            data.dtype, red
        ):
            return Refusal(
                "host-type",
                f"the {ctx.target} EP has no kernels for {data.dtype.name.lower()} data: ORT's "
                "CPU kernel runs the node where its inputs are, and a lowering would run there "
                "too, between copies",
            )
        return None

    def rewrite(self, node: ir.Node, ctx: RewriteContext) -> Rewrite:
        data, indices, updates = node.inputs[:3]
        # check() passed
        assert data is not None and indices is not None and updates is not None
        assert data.dtype is not None
        e = Emitter(ctx, node.name or node.op_type)
        data, updates = made_on_device(e, data), made_on_device(e, updates)
        assert data.dtype is not None  # made_on_device keeps the type
        red = attr_str(node, "reduction", "none")
        idims = sizes.dims(e, indices)
        shape_ok: ir.Value | None
        if data.shape is None or updates.shape is None:  # ScatterND only (check)
            ddims, shape_ok = _runtime_rank_dims(e, data, indices, updates, idims)
        else:
            ddims = sizes.dims(e, data)
            expected = expected_update_dims(node.op_type, idims, ddims)
            shape_ok = shape_guard(e, sizes.dims(e, updates), expected)
            if node.op_type != "ScatterND":
                axis = attr_int(node, "axis", 0) % len(ddims)
                dims_ok = dims_guard(e, idims, ddims, axis)
                shape_ok = both(e, shape_ok, dims_ok, ctx.target == "webgpu")
        if (
            shape_ok is None and static_numel(updates) == 0
        ):  # no updates: the data unchanged
            # (the size nodes emitted above are unread, and done() drops them)
            return e.done(
                [e.op("Identity", data)],
                f"no updates: the data unchanged; reduction {red}",
            )
        if (
            static_numel(indices) == 0
        ):  # no update: the data unchanged once the updates' shape is checked
            register(e, host=shape_ok)
            return e.done(
                [e.op("Identity", data)],
                f"no updates: the data unchanged; reduction {red}; run-time guard: the updates' shape",
                keep=[shape_ok],
            )
        if shape_ok is not None:
            # updates that do not match the indices fail here, before any node mixes the two
            # (the graph's guard would fail the run too, but later and by a broadcast error)
            updates = checked_updates(e, updates, shape_ok)
        M = sizes.product(e, ddims)
        # known 1-D, so that every gather reads this value itself, not a view of it: data that
        # comes from the CPU (an exporter's ConstantOfShape) is then copied to the device once
        flat = e.op(
            "Reshape", data, e.i64([-1]), shape=[M if isinstance(M, int) else None]
        )
        idx = (
            e.cast(indices, ir.DataType.INT64)
            if indices.dtype != ir.DataType.INT64
            else indices
        )
        clean = scatter_clean.applies(ctx.target, data.dtype, M, red)
        # positions are int32 gather indices and sort keys (M + K < 2^31, guarded). A write
        # without a reduction sorts nothing where its positions cannot repeat, or where its
        # MaxUnpool writes them in order: the WebGPU plugin has none (its kernel table), so
        # ORT's CPU kernel runs it there (float data of a static size past the clean
        # variant's float keys: the types it does not take are refused, `host-type`); its
        # positions then only feed that MaxUnpool, which takes int64: computed so, no Cast
        unsorted = (
            red == "none"
            and not clean
            and (distinct_positions(node) or ctx.target == "webgpu")
        )
        pos_type = np.int64 if unsorted else np.int32
        # ScatterND of slices folded by blocks: the updates' slice elements as rows (each writes
        # its own column of slices), which the block folds' last level can end on
        slice_rows = _slice_rows(node, red, data.dtype, idims, ddims)
        if node.op_type == "ScatterND":
            pos, K, device_checks, index_ok = positions_nd(
                e,
                idx,
                idims,
                ddims,
                ctx.check_indices,
                clean,
                pos_type,
                slices_first=slice_rows is not None,
            )
        else:
            axis = attr_int(node, "axis", 0) % len(ddims)
            pos, K, device_checks, index_ok = positions_elements(
                e,
                idx,
                idims,
                ddims,
                axis,
                ctx.check_indices,
                clean,
                not clean,
                pos_type,
            )
        if pos.dtype is None:  # what later steps read to choose their own dtypes
            pos.dtype = ir.DataType.from_numpy(np.dtype(pos_type))
        # the flags go to the graph's one guard (scatter_guard.guard_graph): the index range
        # on the device (the clean variant computes it on the CPU), the rest on the CPU
        host_ok = both(e, index_ok, size_guard(e, K, M, clean), clean)
        # without a reduction from opset 18 the clean variant sorts nothing: no float keys
        last_writes = clean and scatter_clean.writes_last(red, e.opset)
        if clean and not last_writes:
            host_ok = both(e, host_ok, scatter_clean.size_guard(e, M), clean)
        host_ok = both(e, host_ok, shape_ok, clean)
        register(e, device_checks, host_ok)
        width = ctx.options.get("max_io_width") or BLOCK
        if last_writes:
            vals = e.reshape(updates, [-1])
            out = scatter_clean.last_writes(e, flat, e.reshape(pos, [-1]), vals, K, M)
        elif clean:
            crow: Size | None = None
            if node.op_type != "ScatterND" and len(ddims) > 1:
                pos, vals, crow = scatter_clean.rows_of(e, pos, updates, idims, axis)
            elif slice_rows is not None:
                pos, vals = _as_slice_rows(e, pos, updates, slice_rows)
                crow = slice_rows.T
            else:
                pos = e.reshape(pos, [-1])
                vals = e.reshape(updates, [-1])
            # rows of a last-axis scatter are disjoint increasing ranges: sorted row by row,
            # every key is in order (a moved axis interleaves the rows' positions)
            ascending = crow is None or (
                node.op_type != "ScatterND" and axis == len(ddims) - 1
            )
            out = scatter_clean.scatter_clean(
                e,
                flat,
                pos,
                vals,
                K,
                M,
                red,
                data.dtype,
                crow,
                ascending,
            )
        else:
            vals = e.reshape(updates, [-1])
            row: Size | None = None
            ascending = True
            elements = node.op_type != "ScatterND" and len(ddims) > 1
            static_idims = [d for d in idims if isinstance(d, int)]
            if (
                elements
                and axis == len(ddims) - 1
                and not (isinstance(idims[-1], int) and idims[-1] <= 1)
            ):
                # positions along the last axis: sorted row by row (see scatter_flat), rows of
                # a length known at run time too; a length 0 is read as rows of 1 (no element
                # either way; Reshape cannot infer the row count of [-1, 0])
                row = sizes.maximum(e, idims[-1], 1)
            elif (
                elements
                and folds_by_blocks(red, data.dtype, K)
                and len(static_idims) == len(idims)
                and static_idims[axis] > 1
            ):
                # the block folds' last level ends on row ends (blocksum.plan): along another
                # axis, two Transposes make rows of it (11 kernels fewer at 300 × 300)
                shaped = e.reshape(pos, static_idims)
                # kept as [rows, row]: the sort reads them so (flattened and read as rows
                # again, two Reshapes that ORT fuses into one to their own shape: `as_rows`)
                pos, vals, row = scatter_clean.rows_of(e, shaped, updates, idims, axis)
                ascending = False
            elif slice_rows is not None:
                pos, vals = _as_slice_rows(e, pos, updates, slice_rows)
                ascending, row = False, slice_rows.T
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
                ascending=ascending,
                unique=unsorted,
            )
        # the output takes the data's shape: a constant target where only one dim is symbolic
        y = e.reshape(out, sizes.shape_target(e, data))
        note = f"{_show(K)} updates into {_show(M)} elements; reduction {red}"
        if last_writes:
            note += "; WebGPU-clean variant (last writers by a ScatterElements max)"
        elif clean:
            note += "; WebGPU-clean variant (float32 sort keys, ScatterElements write)"
        if device_checks or host_ok is not None:
            note += "; run-time guard (one per graph, on its outputs): " + (
                "indices and sizes" if ctx.check_indices else "sizes"
            )
        elif not ctx.check_indices:
            note += "; indices not checked (out-of-range indices write wrong elements)"
        kept = [v for c in device_checks for v in c.values()]
        return e.done([y], note, keep=[*kept, host_ok])


def _reduces_exactly_itself(target: str, dtype: ir.DataType) -> bool:
    """Does the target EP's own scatter kernel reduce `dtype` exactly, repeated indices and all
    (the target's measured `scatter_exact_integer_reductions`: WebGPU's int32 / uint32)? Its
    lowering would only add kernels and copies (on WebGPU 9 to 30 copies a run: the sort's
    int32 TopK and MaxUnpool have no WebGPU kernel)."""
    from ...targets import get_target

    exact = get_target(target).cost_facts.get("scatter_exact_integer_reductions", ())
    return dtype.name.lower() in exact


def _runtime_rank_dims(
    e: Emitter,
    data: ir.Value,
    indices: ir.Value,
    updates: ir.Value,
    idims: list[Size],
) -> tuple[list[Size], ir.Value]:
    """A ScatterND whose data (or updates) has a rank known only at run time: the data's dims
    as the rule uses them, and the guard on the updates' shape.

    Where no static inference reaches a ScatterND (a quantized Kokoro's iSTFT sits behind a
    DynamicQuantizeLSTM that neither onnx's nor ONNX Runtime's shape inference follows), the
    data is read as [d0, …, d(q-1), R]: its q indexed dims and R = the product of the rest, all
    from Shape(data) at run time. ScatterND on that view writes the same elements (each update is
    a row-major slice of R elements), and the output takes Shape(data) back. The updates must
    have the shape ONNX requires, indices.shape[:-1] + data.shape[q:], compared at run time
    with its rank (a 0 is put in front of both so that a 0-d pair still compares): a mismatch
    fails the run, as ONNX Runtime's kernel does (scatter_nd.cc), here through the guard's
    Reshape, or through the Sub itself where the two lengths cannot broadcast.
    """
    q = idims[-1]
    assert isinstance(q, int)  # check() refuses a symbolic coordinate count
    dshape = sizes.shape_tensor(e, data)
    ddims: list[Size] = [e.op("Gather", dshape, e.i64([j]), axis=0) for j in range(q)]
    tail = e.op("Slice", dshape, e.i64([q]), e.i64([2**62]))
    ddims.append(e.op("ReduceProd", tail, keepdims=1))  # 1 for an empty tail
    lead = e.op("Slice", sizes.shape_tensor(e, indices), e.i64([0]), e.i64([-1]))
    want = e.op("Concat", e.i64([0]), lead, tail, axis=0)
    got = e.op("Concat", e.i64([0]), sizes.shape_tensor(e, updates), axis=0)
    same_rank = e.op("Equal", e.op("Size", got), e.op("Size", want))
    worst = e.op("ReduceMax", e.op("Abs", e.op("Sub", got, want)), keepdims=1)
    same_dims = e.op("Equal", worst, e.i64([0]))
    return ddims, e.op("And", e.op("Reshape", same_rank, e.i64([1])), same_dims)


def made_on_device(e: Emitter, data: ir.Value) -> ir.Value:
    """A scatter input (data or updates) that a ConstantOfShape makes, made on the device where
    the target has no kernel for that ConstantOfShape: Expand(its value, its shape). The DML EP
    registers ConstantOfShape at 9 and 21 only (kernel_registry.cc), so in an opset-20 model it
    runs on the CPU and its output — a scatter's zeros or −inf, as `zeros(...).scatter_reduce_(
    ...)` exports — is copied to the device on every run (pyg_global_max_pool: two of its
    copies); Expand (13 on) runs there, reading its shape from CPU memory as ConstantOfShape
    did. The same values: Expand of a 0-d fill to the shape. The ConstantOfShape goes with the
    scatter where nothing else reads it (passes/rewrite.py `_replace`)."""
    node = data.producer()
    if (
        e.ctx.target != "dml"
        or node is None
        or (node.domain, node.op_type) != ("", "ConstantOfShape")
        or node.inputs[0] is None
    ):
        return data
    from ..passes.rewrite import _native  # rules are imported by the pass: here, lazily

    if _native(node, e.ctx)[0]:
        return data
    fill = constant_of_shape_fill(node)
    out = e.op("Expand", e.const(fill), node.inputs[0], dtype=data.dtype)
    out.shape = data.shape  # what inference knew of the ConstantOfShape's output
    return out


def _show(s: Size) -> str:
    return str(s) if isinstance(s, int) else "n (run time)"


def positions_elements(
    e: Emitter,
    idx: ir.Value,
    idims: list[Size],
    ddims: list[Size],
    axis: int,
    check: bool,
    host: bool = False,
    flat: bool = True,
    pos_type: type = np.int32,
) -> tuple[ir.Value, Size, tuple[IndexCheck, ...], ir.Value | None]:
    """Flat positions of the updates (`pos_type`; 1-D, in the indices' shape where not `flat`),
    K and the index guard: checks on the device, or (`host`) a flag on the CPU."""
    rank = len(ddims)
    # a stride is 0 only for empty data, where K is 0 too; Range refuses a 0 step, so ≥ 1
    strides = [
        sizes.maximum(e, sizes.product(e, ddims[d + 1 :]), 1) for d in range(rank)
    ]
    off_axis = [
        d
        for d in range(rank)
        if d != axis and not (isinstance(idims[d], int) and idims[d] == 1)
    ]
    K = sizes.product(e, idims)
    M = sizes.product(e, ddims)
    small = not isinstance(M, int) or M <= POSITION_TABLE_LIMIT
    if flat and off_axis and small and e.ctx.target != "webgpu":
        # the position of every data element as a tensor of the data's shape: one GatherElements
        # along the axis reads each update's position, negative indices included, with no
        # broadcast sum of per-dim Ranges (a kernel per dim, a pass; the WebGPU plugin's
        # GatherElements takes float data only). Dims of 0 are read as 1: the data is then
        # empty, and K is 0 or the run fails (no index is in range, or the indices are longer)
        whole = [sizes.maximum(e, n, 1) for n in ddims]
        # the first dim inferred (-1): a constant shape where the others are static. A Concat
        # of one run-time element and constants is what ORT's ReshapeFusion (Fuse_Subgraph,
        # reshape_fusion.cc) folds into a constant with -1 itself, which `inspect` does not model
        table = e.reshape(
            sizes.iota(e, sizes.product(e, whole), pos_type),
            sizes.concat(e, [-1, *whole[1:]]),
            zeros_mapped=True,
        )
        pos = e.op("GatherElements", table, idx, axis=axis)
        return (
            e.reshape(pos, [-1]),
            K,
            _checks(e, idx, ddims[axis], K, table, check),
            None,
        )
    table = sizes.iota(
        e, ddims[axis], pos_type, step=strides[axis]
    )  # arange(dim) · stride
    # negative indices count from the end, as in ONNX (Gather and GatherElements both)
    if flat:
        pos = e.take(table, idx)
        if any(
            d != axis and not (isinstance(n, int) and n == 1)
            for d, n in enumerate(idims)
        ):
            # back to the indices' rank for the broadcast sum below: the axis dim inferred, the
            # others as they are, or 1 where 0 (then K = 0 and the sum broadcasts to empty:
            # Reshape reads a 0 as "copy the input's dim", and more than one -1 fails)
            pos = e.reshape(
                pos,
                sizes.concat(
                    e,
                    [
                        -1 if d == axis else sizes.maximum(e, n, 1)
                        for d, n in enumerate(idims)
                    ],
                ),
                zeros_mapped=True,
            )
    else:
        pos = e.op("Gather", table, idx, axis=0)
    base = None
    for d in off_axis:
        shape = [1] * rank
        shape[d] = -1
        term = e.reshape(sizes.iota(e, idims[d], pos_type, step=strides[d]), shape)
        base = term if base is None else e.op("Add", base, term)
    if base is not None:
        pos = e.op("Add", pos, base)
    if check and host:
        ok = in_range_on_host(e, idx, ddims[axis])
        return (e.reshape(pos, [-1]) if flat else pos), K, (), ok
    return (
        (e.reshape(pos, [-1]) if flat else pos),
        K,
        _checks(e, idx, ddims[axis], K, table, check),
        None,
    )


def _checks(
    e: Emitter, idx: ir.Value, dim: Size, K: Size, span: ir.Value, check: bool
) -> tuple[IndexCheck, ...]:
    """The device check of idx against dim (none where `check` is off); `span`, the position
    table, holds at least dim elements (`scatter_guard.one_check_to_host`)."""
    return (in_range(e, idx, dim, count=K, span=span),) if check else ()


class SliceRows(NamedTuple):
    """A ScatterND's slices read as rows (`_slice_rows`): T slices of R elements, the updates'
    leading `index_axes` axes counting the slices and the `slice_axes` after them their
    elements."""

    T: int
    R: int
    index_axes: int
    slice_axes: int


def distinct_positions(node: ir.Node) -> bool:
    """Does the graph prove that no two updates of this ScatterElements land on one position?
    So where its indices are a TopK's indices along the scatter's axis (a logits processor's
    sort, scattered back: hf_min_p, hf_top_p): TopK names each element of a slice at most once
    and never with a negative index, and the updates of other slices land in other positions.
    Without a reduction the write then needs no sort (scatter_write.scatter_flat `unique`)."""
    if node.op_type != "ScatterElements":
        return False
    indices = node.inputs[1]
    topk = indices.producer() if indices is not None else None
    if (
        topk is None
        or topk.op_type != "TopK"
        or topk.domain != ""
        or topk.outputs[1] is not indices
    ):
        return False
    data, source = node.inputs[0], topk.inputs[0]
    if data is None or source is None or data.shape is None or source.shape is None:
        return False
    rank = len(data.shape)
    if rank == 0 or len(source.shape) != rank:
        return False
    return attr_int(topk, "axis", -1) % rank == attr_int(node, "axis", 0) % rank


def _slice_rows(
    node: ir.Node,
    red: str,
    dt: ir.DataType,
    idims: list[Size],
    ddims: list[Size],
) -> SliceRows | None:
    """Where a ScatterND writes T static slices of R > 1 static elements and folds them by
    blocks (`folds_by_blocks`): element r of every slice lands in its own set of positions
    (those ≡ r modulo R), so the updates read as R rows of T are rows no run crosses, and the
    block folds' last level ends on row ends (blocksum.plan: a Transpose of the updates buys
    some ten kernels). Else None."""
    if node.op_type != "ScatterND":
        return None
    q = idims[-1]
    assert isinstance(q, int)  # check() refuses a symbolic coordinate count
    counts = [d for d in idims[:-1] if isinstance(d, int)]
    slice_dims = [d for d in ddims[q:] if isinstance(d, int)]
    if len(counts) + len(slice_dims) != len(idims) - 1 + len(ddims) - q:
        return None  # a dim known only at run time
    T, R = math.prod(counts), math.prod(slice_dims)
    if T <= 1 or R <= 1 or not folds_by_blocks(red, dt, T * R):
        return None
    return SliceRows(T, R, len(counts), len(slice_dims))


def _as_slice_rows(
    e: Emitter, pos: ir.Value, updates: ir.Value, rows: SliceRows
) -> tuple[ir.Value, ir.Value]:
    """The positions (`positions_nd` with `slices_first`) and the updates as [R, T] rows: the
    updates' slice axes moved before their index axes by one Transpose of the updates as they
    are (a Transpose between two Reshapes is one that ORT's transpose optimizer rewrites and
    renames, which `inspect` does not model: measured on onnx's test_scatternd_multiply)."""
    counts = rows.index_axes
    perm = [*range(counts, counts + rows.slice_axes), *range(counts)]
    moved = None
    if updates.shape is not None and all(isinstance(d, int) for d in updates.shape):
        moved = [updates.shape[d] for d in perm]
    vals = as_rows(e, e.op("Transpose", updates, perm=perm, shape=moved), rows.T)
    return e.reshape(pos, [rows.R, rows.T]), vals


def positions_nd(
    e: Emitter,
    idx: ir.Value,
    idims: list[Size],
    ddims: list[Size],
    check: bool,
    host: bool = False,
    pos_type: type = np.int32,
    slices_first: bool = False,
) -> tuple[ir.Value, Size, tuple[IndexCheck, ...], ir.Value | None]:
    q = idims[-1]
    assert isinstance(q, int)  # check() refuses a symbolic coordinate count
    T = sizes.product(e, idims[:-1])
    R = sizes.product(e, ddims[q:])
    idx2 = e.reshape(idx, [-1, q])
    tup = None
    ok = None
    checks: tuple[IndexCheck, ...] = ()
    for j in range(q):
        # [T]; with one coordinate per update, the indices themselves (a view, no gather)
        col = (
            e.reshape(idx2, [-1]) if q == 1 else e.op("Gather", idx2, e.i64(j), axis=1)
        )
        stride = sizes.maximum(
            e, sizes.product(e, ddims[j + 1 :]), 1
        )  # 0 only for empty data
        table = sizes.iota(e, ddims[j], pos_type, step=stride)
        comp = e.take(table, col)
        tup = comp if tup is None else e.op("Add", tup, comp)
        if check and host:
            ok = both(e, ok, in_range_on_host(e, col, ddims[j]), True)
        elif check:
            checks += (in_range(e, col, ddims[j], count=T, span=table),)
    assert tup is not None  # check() refuses 0 coordinates per update
    pos = tup
    if not (isinstance(R, int) and R == 1):
        # [T, R], each slice's positions in a row; `slices_first`: [R, T], each slice element's
        # positions in a row (`_slice_rows`)
        within = sizes.iota(e, R, pos_type)
        if slices_first:
            pos = e.op("Add", e.reshape(tup, [1, -1]), e.reshape(within, [-1, 1]))
        else:
            pos = e.op("Add", e.reshape(tup, [-1, 1]), e.reshape(within, [1, -1]))
    return e.reshape(pos, [-1]), sizes.mul(e, T, R), checks, ok
