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
3. run flags from the float keys (Pad and Slice of float32, Equal), the blocked segmented scan
   of `segscan.py` over float keys (so its own shifts slice float32 only), and for float max /
   min the sequential rule of `scatter_write.max_min_sequential` with `x != x` for IsNaN;
4. write: one ScatterElements (reduction none, a kernel the plugin has) of each run's last
   result into the data padded by one dummy element; every other sorted update writes to that
   dummy (position M), which is sliced off. Only run ends land inside the data, so no two
   writes race where it matters.

The values follow the same rules as the DML-shaped graph's (same scan, same step functions):
ints and float max / min bit-exact against ORT's sequential kernel, float add / mul within the
scan's documented rounding bound (the blocks may split a run at other places than there).
"""

from __future__ import annotations

import numpy as np
import onnx_ir as ir

from . import blocksum, sizes
from .emitter import Emitter
from .scatter_lean import continues
from .segscan import fold_step, segmented_scan
from .sizes import Size

#: targets that take this variant
CLEAN_TARGETS = frozenset({"webgpu"})
#: float32 holds every integer up to 2^24 exactly: the largest data size whose positions sort as
#: float32 keys
MAX_FLOAT_KEY = 2**24
_DATA_TYPES = (ir.DataType.FLOAT, ir.DataType.FLOAT16)


def applies(target: str, dtype: ir.DataType | None, M: Size | None) -> bool:
    """Does the clean variant replace the DML-shaped graph? (A static M above 2^24 keeps the
    old graph, whose int32 keys are exact to 2^31.) `M`: the data's element count, a run-time
    value or None where it is not static."""
    return (
        target in CLEAN_TARGETS
        and dtype in _DATA_TYPES
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
        pos = e.op("Transpose", pos, perm=perm)
        updates = e.op("Transpose", updates, perm=perm)
    shape = sizes.concat(e, [-1, row])
    return e.reshape(pos, shape), e.reshape(updates, shape), row


def scatter_clean(
    e: Emitter,
    flat: ir.Value,
    pos: ir.Value,
    vals: ir.Value,
    K: Size,
    M: Size,
    red: str,
    dt: ir.DataType,
    block: int,
    row: Size | None,
    ascending: bool = True,
) -> ir.Value:
    """Scatter K values at int32 positions into the M-element 1-D `flat` (see the module
    docstring). `row`: `pos` and `vals` are [rows, row] (from `rows_of`), sorted row by row;
    None: 1-D, sorted whole. `ascending`: the rows sorted one after another are sorted whole
    (false where `rows_of` moved the axis: equal keys are adjacent, no more)."""
    from .scatter_write import FLOATS, REDUCE_OPS, identity_of, max_min_sequential

    keys = e.cast(pos, ir.DataType.FLOAT)  # exact: positions < M ≤ 2^24
    by_blocks = red in (
        "add",
        "mul",
    )  # float32 / float16 (`applies`): folded in float32
    if by_blocks and dt == ir.DataType.FLOAT16:
        vals = e.cast(vals, ir.DataType.FLOAT)
    if red == "add":  # −0.0 updates change no sum: to the dummy position (blocksum.py)
        keys = blocksum.drop_negative_zeros(
            e, keys, vals, sizes.on_device(e, M, np.float32)
        )
    if row is None:
        sk, perm = e.op(
            "TopK", keys, sizes.tensor(e, K), outputs=2, largest=0, sorted=1, axis=0
        )
        svals = e.take(vals, perm)
    else:
        sk, perm = e.op(
            "TopK", keys, sizes.tensor(e, row), outputs=2, largest=0, sorted=1, axis=1
        )
        sk = e.reshape(sk, [-1])
        svals = e.reshape(e.op("GatherElements", vals, perm, axis=1), [-1])
    spos = e.cast(sk, ir.DataType.INT32)
    not_first, not_last = continues(e, sk, K, np.float32)
    is_last = e.op("Not", not_last)
    bound = sizes.upper_bound(K, MAX_FLOAT_KEY)
    if red == "none":
        result = svals
    elif by_blocks:
        fold = blocksum.fold_of(red, ascending)
        folded = blocksum.run_folds(e, sk, svals, K, bound, fold, key_dtype=np.float32)
        if not (isinstance(K, int) and blocksum.exact_length(K, fold)):
            folded = e.op("Slice", folded, e.i64([0]), sizes.tensor(e, K), e.i64([0]))
        if dt == ir.DataType.FLOAT16:
            folded = e.cast(folded, dt)
        # the dummy's updates read the padding's 0 (position M): never written back
        result = e.op(fold.op, e.take(_padded(e, flat, dt), spos), folded)
    elif red in ("max", "min") and dt in FLOATS:
        result = max_min_sequential(
            e, flat, spos, svals, not_first, K, red, dt, block, keys_float=True
        )
    else:
        op = REDUCE_OPS[red]
        identity = e.const(identity_of(red, dt))
        scanned = segmented_scan(
            e,
            sk,
            svals,
            K,
            bound,
            fold_step(op, True),
            identity,
            block=block,
            key_dtype=np.float32,
        )
        # the data element folded in last, as the DML-shaped graph does (data op run fold)
        result = e.op(op, e.take(flat, spos), scanned)
    target = e.op("Where", is_last, spos, sizes.on_device(e, M, np.int32))
    written = e.op("ScatterElements", _padded(e, flat, dt), target, result, axis=0)
    return e.op("Slice", written, e.i64([0]), sizes.tensor(e, M), e.i64([0]))


def _padded(e: Emitter, flat: ir.Value, dt: ir.DataType) -> ir.Value:
    """The data with one dummy element after it (position M: written, then sliced off)."""
    zero = e.const(np.zeros((), dtype=dt.numpy()))
    return e.op("Pad", flat, e.i64([0, 1]), zero, mode="constant")
