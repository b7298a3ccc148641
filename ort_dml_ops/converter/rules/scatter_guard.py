"""The run-time checks of the lowered scatter (scatter.py): what makes a lowered scatter fail
where ONNX Runtime's kernel fails, instead of returning a value.

ORT's CPU kernel (scatter.cc) refuses an index outside [-dim, dim) and updates whose shape
differs from the indices' ("Indices vs updates dimensions differs"); a GPU Gather fails on
neither. So the lowering computes flags on small tensors (a min and a max of the indices, the
sizes known only at run time) and turns a false flag into a shape that Reshape refuses
(`BAD_DIM`), in a node named `<node>/IndexOrSizeOutOfRange` that `run` reports in one line.
`host=True` spells the flags with ops the WebGPU plugin has no kernel for, so the whole guard
stays on the CPU beside its int64 inputs.
"""

from __future__ import annotations

import numpy as np
import onnx_ir as ir

from . import sizes
from .emitter import Emitter
from .sizes import Size

#: K + 1 slot numbers exact in float32 (the MaxUnpool write), M + K int32 gather indices
MAX_SLOTS = 2**24 - 2
MAX_GATHER = 2**31 - 1
#: the guard's refused shape: Reshape rejects any dim below -1 (on every EP, at run time)
BAD_DIM = -2


def both(
    e: Emitter, a: ir.Value | None, b: ir.Value | None, host: bool = False
) -> ir.Value | None:
    """a and b (either may be None: no check). `host`: spelt with Or and Equal on bools, which
    the WebGPU plugin has no kernel for, so the whole guard stays on the CPU EP beside its int64
    inputs (And and Not it has: they would bounce each flag to the device and back)."""
    if a is None or b is None:
        return a if b is None else b
    if host:
        return negate(e, e.op("Or", negate(e, a, True), negate(e, b, True)), True)
    return e.op("And", a, b)


def negate(e: Emitter, a: ir.Value, host: bool = False) -> ir.Value:
    """Not(a); `host`: Equal(a, false), a bool Equal (no WebGPU kernel, see `both`)."""
    if host:
        return e.op("Equal", a, e.const(np.zeros((), dtype=bool)))
    return e.op("Not", a)


def in_range(e: Emitter, idx: ir.Value, dim: Size, host: bool = False) -> ir.Value:
    """True when every element of idx lies in [-dim, dim): a min and a max over the indices
    (two reads of K integers), compared on scalars. `host`: the int64 indices are reduced on
    the CPU (no WebGPU kernel reduces int64), and the flag stays there (see `both`)."""
    lo = e.op("ReduceMin", idx, keepdims=0)
    hi = e.op("ReduceMax", idx, keepdims=0)
    neg = sizes.sub(e, 0, dim)
    if host:
        below = e.op("Less", lo, sizes.tensor(e, neg))
        ok = both(
            e, negate(e, below, True), e.op("Less", hi, sizes.tensor(e, dim)), True
        )
        assert ok is not None  # both flags given
        return ok
    below = e.op("Less", lo, sizes.on_device(e, neg))
    return e.op("And", e.op("Not", below), e.op("Less", hi, sizes.on_device(e, dim)))


def to_host(e: Emitter, flag: ir.Value) -> ir.Value:
    """The device-side flag as a CPU tensor, through ONE host copy: the flag (as 0 or 1) is the
    shape input of a ConstantOfShape — an input the DML EP reads from CPU memory, so ORT copies
    the flag there — and that tensor's Shape is CPU-side again. Everything downstream (the size
    checks, the Where that picks the Reshape's shape) then reads only CPU tensors, and ORT keeps
    it on the CPU (fallback_cpu_capability.cc) instead of copying the shape to the device and
    back."""
    length = e.reshape(e.cast(flag, ir.DataType.INT64), [1])
    return e.op("Equal", e.op("Shape", e.op("ConstantOfShape", length)), e.i64([1]))


def unchanged_unless_mismatch(
    e: Emitter, data: ir.Value, shape_ok: ir.Value | None
) -> ir.Value:
    """The data itself, but the run fails where `shape_ok` is false: Expand(data, [1]) is a copy,
    and its shape input comes from a Reshape of [1] to [-2] on a mismatch. The guard is not a
    Reshape of the data: ONNX Runtime's ReshapeFusion (reshape_fusion.cc) replaces a chain of
    Reshapes whose output shape is known by one Reshape to that constant shape, which would drop
    a guard written as Reshape(data, Where(ok, shape, bad))."""
    if shape_ok is None:
        return e.op("Identity", data)
    ones = e.op("Where", shape_ok, e.i64([1]), e.i64([BAD_DIM]))
    guard = e.op("Reshape", e.i64([1]), ones)
    name_guard(e, guard)
    return e.op("Expand", data, guard)


def name_guard(e: Emitter, value: ir.Value) -> None:
    """Name the Reshape that fails a bad run `<node>/IndexOrSizeOutOfRange` (`run` reports it in
    one line) — unless an earlier rewrite of the graph emitted the same guard (Emitter's memo)."""
    node = value.producer()
    if node is not None and any(n is node for n in e.nodes):
        node.name = e.ctx.unique(f"{e.prefix}/IndexOrSizeOutOfRange")


def expected_update_dims(
    op_type: str, idims: list[Size], ddims: list[Size]
) -> list[Size]:
    """The shape ONNX requires of the updates: the indices' shape (ScatterElements, Scatter), or
    indices.shape[:-1] + data.shape[q:] for ScatterND with q coordinates per update."""
    if op_type != "ScatterND":
        return idims
    q = idims[-1]
    assert isinstance(q, int)  # check() refuses a symbolic coordinate count
    return idims[:-1] + ddims[q:]


def shape_guard(e: Emitter, udims: list[Size], expected: list[Size]) -> ir.Value | None:
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


def size_guard(e: Emitter, K: Size, M: Size, host: bool = False) -> ir.Value | None:
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
        out = both(e, out, c, host)
    return out
