"""The run-time checks of the lowered scatter (scatter.py): what makes a lowered scatter fail
where ONNX Runtime's kernel fails, instead of returning a value.

ORT's CPU kernel (scatter.cc) refuses an index outside [-dim, dim), updates whose shape
differs from the indices' ("Indices vs updates dimensions differs") and indices longer than the
data off a ScatterElements' axis ("Indices dim=… is greater than input dim=…"); a GPU Gather
fails on none of them. So each lowered scatter computes checks on small tensors (a min and a
max over its indices on the device, `in_range`; the sizes known only at run time on the CPU)
and registers them with its graph (`register`). Once every node of the graph is rewritten,
`guard_graph` folds all of them into ONE flag through ONE host copy — the graph's only index
check by a Slice of its position table (`one_check_to_host`), several by one ReduceMax of their
overruns on the device (`overrun`, `to_host`) — then the host flags: a model pays one tiny copy
per run however many scatters it lowers (issue 28). A false flag turns
each graph output's shape into one that Reshape refuses (`BAD_DIM`), in nodes named
`…/IndexOrSizeOutOfRange` that `run` reports in one line: the run fails as ORT's kernel's does.
`host=True` spells the flags with ops the WebGPU plugin has no kernel for, so the whole guard
stays on the CPU beside its int64 inputs.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np
import onnx_ir as ir

from . import sizes
from ._base import VIEW_OPS
from .emitter import Emitter, zeros_inferred
from .sizes import Size

#: K + 1 slot numbers exact in float32 (the MaxUnpool write), M + K int32 gather indices
MAX_SLOTS = 2**24 - 2
MAX_GATHER = 2**31 - 1
#: what the write's gather indices reach past M + K: the scan's padding to whole blocks (of 16)
#: and its lead item (scatter_write.scatter_flat)
WRITE_SLACK = 64
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
    """Not(a); `host`: Equal(a, false), a bool Equal (no WebGPU kernel, see `both`). Where `a`
    is itself a negation made so, its operand: no node (`both` of a negated check spelt four
    host nodes where two do)."""
    false = e.const(np.zeros((), dtype=bool))
    node = a.producer()
    if node is not None:
        if host:
            negation = node.op_type == "Equal" and node.inputs[1:] == (false,)
        else:
            negation = node.op_type == "Not"
        if negation and node.inputs[0] is not None:
            return node.inputs[0]
    if host:
        return e.op("Equal", a, false)
    return e.op("Not", a)


@dataclasses.dataclass(frozen=True)
class IndexCheck:
    """One set of indices checked on the device (`in_range`), for the graph's guard to finish.

    `worst` = max(hi, −1 − lo) over the indices (int64, [1]): at most dim − 1 exactly when every
    index lies in [−dim, dim), and at least 0 where there is an index (−1 − lo does not overflow
    for any int64). `count`: the number of indices where it may be 0 at run time, else None
    (then ORT's empty reductions give INT64_MIN / INT64_MAX — or, on the lane, garbage inside
    a fused DML graph: piper's spline ScatterNDs with no update, docs/dml-lane.md — so the worst
    means nothing). `span`: a device tensor of at least `dim` elements (the scatter's position
    table), which the graph's one Slice can read when this is its only check. `ready`: `worst`
    is already an overrun, at most 0 when every index is in range (before opset 12, without an
    integer Max)."""

    worst: ir.Value
    dim: Size
    count: Size | None
    span: ir.Value | None
    ready: bool = False

    def values(self) -> list[ir.Value]:
        """The values the guard reads later (`Emitter.done`'s keep)."""
        sized = [v for v in (self.dim, self.count) if isinstance(v, ir.Value)]
        return [self.worst, *sized] + ([self.span] if self.span is not None else [])


def in_range(
    e: Emitter,
    idx: ir.Value,
    dim: Size,
    count: Size | None = None,
    span: ir.Value | None = None,
) -> IndexCheck:
    """The device's check that every element of idx lies in [-dim, dim), from a min and a max
    over the indices (two reads of K integers, nothing written at full size): an `IndexCheck`
    that `guard_graph` takes to the host with the graph's other checks. No bool on the device,
    where the lane read garbage from a Cast of the last of a long chain of And-ed flags (piper's
    61, docs/dml-lane.md). Before opset 12 (no integer Max) the overrun is 1 or 0 from the two
    compares, made here."""
    lo = e.op("ReduceMin", idx, keepdims=0)
    hi = e.op("ReduceMax", idx, keepdims=0)
    static = count if isinstance(count, int) else static_numel(idx)
    if static is not None:
        count = static
    elif count is None:
        count = e.reshape(e.op("Size", idx), [1])
    maybe_empty = None if isinstance(count, int) and count > 0 else count
    if e.opset >= 12:
        worst = e.reshape(e.op("Max", hi, e.op("Sub", e.i64(-1), lo)), [1])
        return IndexCheck(worst, dim, maybe_empty, span)
    below = e.op("Less", lo, sizes.on_device(e, sizes.sub(e, 0, dim)))
    ok = e.op("And", e.op("Not", below), e.op("Less", hi, sizes.on_device(e, dim)))
    overrun = e.reshape(e.op("Where", ok, e.i64([0]), e.i64([1])), [1])
    return IndexCheck(overrun, dim, maybe_empty, None, ready=True)


def in_range_on_host(e: Emitter, idx: ir.Value, dim: Size) -> ir.Value:
    """Whether every element of idx lies in [-dim, dim), as a bool flag computed on the CPU
    (the int64 indices are reduced there: no WebGPU kernel reduces int64; see `both`)."""
    lo = e.op("ReduceMin", idx, keepdims=0)
    hi = e.op("ReduceMax", idx, keepdims=0)
    below = e.op("Less", lo, sizes.tensor(e, sizes.sub(e, 0, dim)))
    ok = both(e, negate(e, below, True), e.op("Less", hi, sizes.tensor(e, dim)), True)
    assert ok is not None  # both flags given
    return ok


def overrun(e: Emitter, check: IndexCheck) -> ir.Value:
    """How far the check's worst index reaches past the last valid one (int64 [1]): at least 1
    when an index is out of range, at most 0 when none is, or when there is no index at all
    (min(overrun, count): count ≥ 1 keeps any overrun ≥ 1 as it is, count 0 makes it at most 0
    whatever the empty reductions gave). The device computes it, sizes included (`on_device`),
    so that the graph's checks meet in one ReduceMax before their one copy."""
    if check.ready:
        out = check.worst
    else:
        last = sizes.on_device(e, sizes.sub(e, check.dim, 1))
        out = e.op("Sub", check.worst, last)
    if check.count is None:
        return out
    return sizes.int_extreme(e, "Min", out, sizes.on_device(e, check.count))


def static_numel(v: ir.Value) -> int | None:
    """The element count of `v` where every dim is static, else None."""
    if v.shape is None:
        return None
    known = [d for d in v.shape if isinstance(d, int)]
    if len(known) != len(v.shape):
        return None
    return int(np.prod(known))


def to_host(e: Emitter, overrun: ir.Value) -> ir.Value:
    """Whether the device-side overrun (`overrun`, [1] int64) is at most 0, as a CPU bool,
    through ONE host copy: the overrun is the `ends` of a Slice of one element from 0, an input
    the DML EP reads from CPU memory, so ORT copies it there; the Slice clamps it (ONNX Slice: a
    negative end counts from the end, then ends are clamped to [0, 1]), so its length is 1 when
    the overrun is at least 1, 0 when it is at most 0, however large; that tensor's Shape is
    CPU-side again. Everything downstream (the size checks, the Where that picks each output's
    shape) then reads only CPU tensors, and ORT keeps it on the CPU (fallback_cpu_capability.cc)
    instead of copying shapes to the device and back.

    The Slice clamps for free: an Expand to a length needed Add, Max and Min to bring the value
    into [0, 1] first — two kernels more, each a dispatch and a compiled node (issue 28). Not a
    Range(overrun, 0, δ) either: the DML EP gives it one element where ONNX gives none for a start
    above the limit (measured on the lane, docs/dml-lane.md)."""
    one = e.const(np.ones(1, dtype=np.float32))
    piece = e.op("Slice", one, e.i64([0]), overrun)
    return e.op("Equal", e.op("Shape", piece), e.i64([0]))


def one_check_to_host(e: Emitter, check: IndexCheck, host_spelling: bool) -> ir.Value:
    """`check` (the graph's only one) as a CPU bool through ONE host copy, with no device
    kernel after its worst index: a Slice of its `span` from dim − 1 to the worst, whose `ends`
    the DML EP reads from CPU memory (the copy) and whose `starts`, a size, is on the CPU
    already. The span holds at least dim elements, so the Slice is empty exactly when the worst
    index is at most dim − 1 (ONNX Slice clamps both to [0, len]); its Shape is CPU-side again.
    Where there may be no index (the worst means nothing then) or dim may be 0 (every index is
    out of range, and the span may still hold elements: the position table reads a 0 dim as 1),
    the CPU decides from the sizes: ok = no index, or (the Slice is empty and dim ≥ 1). Against `overrun` + `to_host`, this saves the device-side
    dim − 1 and its Sub, and where the count may be 0 the device-side count and its Min: one
    kernel with static sizes, four with symbolic ones (issue 28)."""
    assert check.span is not None and not check.ready
    start = sizes.tensor(e, sizes.sub(e, check.dim, 1))
    piece = e.op("Slice", e.reshape(check.span, [-1]), start, check.worst)
    ok = e.op("Equal", e.op("Shape", piece), e.i64([0]))
    if not (isinstance(check.dim, int) and check.dim >= 1):
        some_dim = e.op("Less", e.i64([0]), sizes.tensor(e, check.dim))
        ok = both(e, ok, some_dim, host_spelling)
    if check.count is not None:
        # Or: no WebGPU kernel, and the DML EP leaves it to the CPU with its CPU inputs
        none = e.op("Equal", sizes.tensor(e, check.count), e.i64([0]))
        ok = e.op("Or", ok, none)
    assert ok is not None
    return ok


#: graph.meta key: the (device flag, host flag) pairs the graph's lowered scatters registered
_FLAGS = "ort_dml_ops.guard_flags"
#: ops that only relabel a tensor's shape: ONNX Runtime's ReshapeFusion (reshape_fusion.cc,
#: `FuseContiguousReshapes`) merges a chain of them ending in a statically shaped output into
#: one Reshape to that constant shape, which would drop a guard Reshape at the chain's end
_VIEW_OPS = VIEW_OPS
#: node.meta key: a view node `_guard_output` read around
_BYPASSED = "ort_dml_ops.guard_bypassed"


def checked_updates(e: Emitter, updates: ir.Value, shape_ok: ir.Value) -> ir.Value:
    """The updates, through a Reshape to their own shape that fails (`BAD_DIM`) where they do not
    have the shape ONNX requires: the same error ORT's kernel raises, before any node mixes
    updates and indices. `shape_ok` is computed from shapes on the CPU, so this costs no copy
    and no pass (a Reshape is a view); the flag also joins the graph's guard (`register`)."""
    rank = len(updates.shape) if updates.shape is not None else None
    if not rank:  # a 0-d (or run-time rank) updates tensor: the graph's guard alone
        return updates
    shape = sizes.shape_tensor(e, updates)  # the Shape its sizes read too, not another
    bad = e.i64([BAD_DIM] * rank)
    return _guard_reshape(e, updates, e.op("Where", shape_ok, shape, bad))


def register(
    e: Emitter, device: Sequence[IndexCheck] = (), host: ir.Value | None = None
) -> None:
    """Record a lowered scatter's checks for `guard_graph`: `device`, its index ranges checked
    on the device (`in_range`), `host`, a bool flag computed on the CPU (sizes, the updates'
    shape; True: the run may go on)."""
    if not device and host is None:
        return
    # the emitter too: its nodes (once the rewrite is done) are what the flags vouch for
    e.ctx.graph.meta.setdefault(_FLAGS, []).append((tuple(device), host, e))


def guard_graph(e: Emitter, host_spelling: bool) -> list[ir.Node]:
    """One guard for every flag the graph's rewrites registered: the nodes to append to the graph
    (its outputs renamed through them), or none where nothing registered a flag.

    The device checks (`in_range`) reach the host through ONE copy: the only one by a Slice of
    its span (`one_check_to_host`), several as overruns that meet in one ReduceMax on the device
    (`overrun`, `to_host`); the host flags join them there. Every graph output the graph computes is then passed through
    `Reshape(x, Where(ok, Shape(out), BAD_DIM))`, where x is the output before any view op
    (`_VIEW_OPS`), so the guard cannot be fused away (where out is one Reshape of x, that
    Reshape's target stands for Shape(out)); Shape and Where are on the CPU, and a
    Reshape on a GPU EP is a view: no pass, no copy. Outputs that are graph inputs or
    initializers are left alone (nothing computed them), and so are outputs that no rewrite with
    a flag reaches (`_downstream`: their values are right either way). Guarding the outputs, not each scatter,
    is what lets one flag serve them all: a scatter's own output waiting for a later scatter's
    flag could wait for itself (its indices may come from it)."""
    graph = e.ctx.graph
    flags = graph.meta.pop(_FLAGS, None)
    if not flags:
        return []
    host = None
    # scatters that share their indices and sizes share their checks (the emitter's memo):
    # each is folded in once
    checks = list({_identity(c): c for d, _, _ in flags for c in d}.values())
    for h in {id(h): h for _, h, _ in flags if h is not None}.values():
        host = both(e, host, h, host_spelling)
    ok = None
    if len(checks) == 1 and checks[0].span is not None and not checks[0].ready:
        ok = one_check_to_host(e, checks[0], host_spelling)
    elif checks:
        # the device overruns: one Concat and one ReduceMax, however many checks there are
        overruns = [overrun(e, c) for c in checks]
        device = overruns[0]
        if len(overruns) > 1:
            device = e.op("ReduceMax", e.op("Concat", *overruns, axis=0), keepdims=1)
        ok = to_host(e, device)
    ok = both(e, ok, host, host_spelling)
    assert ok is not None  # register() records no empty pair
    guarded: dict[int, ir.Value] = {}
    outputs = list(graph.outputs)
    vouched = _downstream(graph, [n for _, _, em in flags for n in em.nodes])
    for i, out in enumerate(outputs):
        if out.producer() is None:  # a graph input or an initializer
            continue
        if id(out) not in vouched:  # no rewrite that registered a flag reaches it
            continue
        if id(out) not in guarded:
            guarded[id(out)] = _guard_output(e, out, ok)
        graph.outputs[i] = guarded[id(out)]
    if not guarded:  # nothing computed here reaches an output: the flags are unread
        e.nodes = []
    return e.nodes


def _identity(check: IndexCheck) -> tuple:
    """What makes two checks the same check: the same values (the emitter's memo gives
    scatters of the same indices and sizes the same ones) and the same static sizes."""
    values = (getattr(check, f.name) for f in dataclasses.fields(check))
    return tuple(v if v is None or isinstance(v, int) else id(v) for v in values)


def _downstream(graph, sources: list[ir.Node]) -> set[int]:
    """ids of the values computed from the outputs of `sources` (their own outputs included), in
    `graph` (topologically sorted: the rewrites keep it so). An output that none of them reaches
    is right whatever the flags say, so it is not guarded: a guard Reshape on an output the CPU
    computed — an unlowered scatter's — would be put on the device and cost two copies (measured
    on scatter_torchscript: 6 copies per run became 8). A node with a subgraph is counted as
    reached once anything is (it may read a reached value from the outer scope)."""
    reached = {id(o) for n in sources for o in n.outputs}
    for node in graph:
        if any(v is not None and id(v) in reached for v in node.inputs) or (
            reached
            and any(
                a.type in (ir.AttributeType.GRAPH, ir.AttributeType.GRAPHS)
                for a in node.attributes.values()
            )
        ):
            reached.update(id(o) for o in node.outputs)
    return reached


def _guard_reshape(
    e: Emitter, x: ir.Value, shape: ir.Value, own: bool = False
) -> ir.Value:
    """A Reshape that fails the run on a bad shape, named for `run`'s one-line report; `own`:
    a node of its own, outside the emitter's memo (`Emitter.fresh`)."""
    out = e.fresh("Reshape", x, shape) if own else e.op("Reshape", x, shape)
    node = out.producer()
    assert node is not None
    node.name = e.ctx.unique(f"{e.prefix}/IndexOrSizeOutOfRange")
    return out


def drop_unread_views(graph) -> None:
    """Remove the view nodes a guard bypassed (`_guard_output`) whose output nothing reads now:
    the DML EP's graph fusion refuses a partition holding an unused output (measured: "Invalid
    parameter" at session creation, DmlGraphFusionHelper.cpp)."""
    for node in reversed(list(graph)):
        if (
            node.op_type in _VIEW_OPS
            and node.domain == ""
            and node.meta.get(_BYPASSED)
            and not any(o.uses() or o.is_graph_output() for o in node.outputs)
        ):
            graph.remove(node, safe=True)


def _guard_output(e: Emitter, out: ir.Value, ok: ir.Value) -> ir.Value:
    dims = list(out.shape) if out.shape is not None else []
    # a static shape is a constant: outputs of one shape then share one Where (the emitter's
    # memo), where Shape nodes ORT folds to equal constants would leave it two Wheres that its
    # CommonSubexpressionElimination does not merge (measured on the lane)
    static = [d for d in dims if isinstance(d, int)]
    node = out.producer()
    if out.shape is not None and len(static) == len(dims):
        shape = e.i64(static)
    elif dims and _single_reshape(node):
        # out = Reshape(src, target) with src computed by a non-view: Reshape(src, target)
        # gives out's shape again, so the target serves as is (no Shape of out, and no Equal
        # and Where to map its zeros: the lowered scatter's output reshape, every time)
        assert (
            node is not None
            and node.inputs[0] is not None
            and node.inputs[1] is not None
        )
        node.meta[_BYPASSED] = True
        return _checked(e, out, node.inputs[0], node.inputs[1], ok)
    else:
        shape = e.op("Shape", out)
    src, mapped = out, shape
    while node is not None and node.op_type in _VIEW_OPS and node.domain == "":
        # the same elements in the same order: reshape the source itself; a 0 in the output's
        # shape cannot be copied from a source of another rank (`zeros_inferred`)
        assert node.inputs[0] is not None  # a view's data input is required
        node.meta[_BYPASSED] = True
        src, node = node.inputs[0], node.inputs[0].producer()
        mapped = zeros_inferred(e, shape)
    return _checked(e, out, src, mapped, ok)


def _single_reshape(node: ir.Node | None) -> bool:
    """Whether `node` is a Reshape (no allowzero) of a value no view computes."""
    if node is None or node.op_type != "Reshape" or node.domain != "":
        return False
    allowzero = node.attributes.get("allowzero")
    if allowzero is not None and allowzero.as_int() != 0:
        return False
    data = node.inputs[0]
    if data is None or len(node.inputs) < 2 or node.inputs[1] is None:
        return False
    source = data.producer()
    return source is None or not (source.op_type in _VIEW_OPS and source.domain == "")


def _checked(
    e: Emitter, out: ir.Value, src: ir.Value, mapped: ir.Value, ok: ir.Value
) -> ir.Value:
    """`out` again, computed as Reshape(src, mapped) where `ok`, failing the run elsewhere: the
    graph output's new value, under its name."""
    rank = len(out.shape) if out.shape is not None else None
    if rank:
        bad = e.i64([BAD_DIM] * rank)
        checked = _guard_reshape(e, src, e.op("Where", ok, mapped, bad), own=True)
    else:
        # a 0-d output (or one of a rank known only at run time) has no dim to refuse: the
        # guard reshapes to [1, *shape] and a Gather of row 0 restores the shape (one pass of
        # the output, which is a scalar where the rank is known)
        lead = e.op("Concat", e.i64([1]), mapped, axis=0)
        bad = e.i64([BAD_DIM])
        wide = _guard_reshape(e, src, e.op("Where", ok, lead, bad), own=True)
        checked = e.fresh("Gather", wide, e.i64(0), axis=0)
    name = out.name
    out.name = e.ctx.unique(f"{name}/unguarded")
    checked.name = name
    checked.type, checked.shape = out.type, out.shape
    return checked


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


def dims_guard(
    e: Emitter, idims: list[Size], ddims: list[Size], axis: int
) -> ir.Value | None:
    """True when no dim of the indices is longer than the data's off the axis (None when the
    declared shapes already prove it). ORT's CPU kernel refuses a longer one ("Indices dim=… at
    pos=… is greater than input dim=…", cpu/tensor/scatter.cc, every dim but the axis); the
    lowering's flat positions would run into the next row instead, a value where ORT returns an
    error. Compared on the CPU, on shape tensors only; a static excess is refused by convert
    (passes/static_errors.py)."""
    pairs = [
        (i, n)
        for d, (i, n) in enumerate(zip(idims, ddims, strict=True))
        if d != axis and not (isinstance(i, int) and isinstance(n, int) and i <= n)
    ]
    if not pairs:
        return None
    got = sizes.concat(e, [i for i, _ in pairs])
    limit = sizes.concat(e, [n for _, n in pairs])
    excess = e.op("Sub", got, limit)
    if len(pairs) > 1:
        excess = e.op("ReduceMax", excess, keepdims=1)
    return e.op("Less", excess, e.i64([1]))


def size_guard(e: Emitter, K: Size, M: Size, host: bool = False) -> ir.Value | None:
    """K + 1 < 2^24 and M + K + WRITE_SLACK < 2^31 where the sizes are only known at run time."""
    checks = []
    if not isinstance(K, int):
        checks.append(e.op("Less", K, e.i64([MAX_SLOTS + 1])))
    if not (isinstance(K, int) and isinstance(M, int)):
        checks.append(
            e.op(
                "Less",
                sizes.tensor(e, sizes.add(e, M, K)),
                e.i64([MAX_GATHER - WRITE_SLACK]),
            )
        )
    out = None
    for c in checks:
        out = both(e, out, c, host)
    return out
