"""The node emitter every rewrite rule builds its replacement with.

It builds onnx-ir nodes with names unique in the whole model, emits each (op, inputs,
attributes) and each constant once per graph, and spells version-dependent operators
(Split, Pad, Slice, Unsqueeze, Reduce*) the way the graph's opset wants them.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import numpy as np
import onnx_ir as ir

from ._base import Rewrite, RewriteContext, const_array


class Emitter:
    """Builds replacement nodes for one original node.

    The same op on the same inputs with the same attributes is emitted once, and so is each
    constant: a rule's graph then holds no common subexpression, so there is nothing for ONNX
    Runtime's CommonSubexpressionElimination / ConstantSharing to merge, and `inspect` need not
    guess which copies ORT keeps. Large constants (the block folds' 512 × 512 masks) are keyed
    by a digest of their bytes: ConstantSharing merges only small ones (constant_sharing.cc), so
    each lowered scatter of a graph kept its own copy — half the bytes of a converted file with
    two (`scatter_reduce_prod`: 2.2 MB, 1.1 MB of it repeated)."""

    SMALL_CONST = 64

    def __init__(self, ctx: RewriteContext, prefix: str):
        self.ctx = ctx
        self.prefix = prefix or "node"
        self.nodes: list[ir.Node] = []
        # shared by every rewrite of one graph (rewrites run in graph order, so a value made for an
        # earlier node precedes every later use): two scatters over the same tensors compute their
        # sizes once, and ORT's CSE / ConstantSharing find nothing left to merge
        shared = (
            ctx.graph.meta.setdefault("ort_dml_ops.emitted", ({}, {}, {}, {}))
            if ctx.graph is not None
            else ({}, {}, {}, {})
        )
        # (op, inputs, attributes) -> outputs; constant (a large one by digest) -> value;
        # attribute -> ir.Attr (an Attr holds a name, a type and a value, no owner: nodes may
        # share one); int or tuple of ints -> the value `i64` made of it (as `_consts` holds)
        self._ops, self._consts, self._attrs, self._i64 = shared
        self._keys: list = []  # the memo keys of the nodes this emitter made (see done)
        self._made_consts: list[ir.Value] = []  # the initializers it made (see done)

    # -- plumbing -------------------------------------------------------------------------
    def op(
        self,
        op_type: str,
        *inputs: ir.Value | None,
        outputs: int = 1,
        domain: str = "",
        dtype: ir.DataType | None = None,
        shape: Sequence[int | None] | None = None,
        **attrs: Any,
    ):
        # in the caller's order (the node's attributes keep it); sorted for the memo key
        keyed = (
            [(k, _value_key(v)) for k, v in attrs.items() if v is not None]
            if attrs
            else []
        )
        key = (
            domain,
            op_type,
            outputs,
            tuple(map(id, inputs)),
            (type(dtype), dtype),
            None if shape is None else tuple(shape),
            tuple(sorted(keyed, key=_first)),
        )
        out = self._ops.get(key)
        if out is None:
            out = self._ops[key] = self._emit(
                op_type, inputs, outputs, domain, dtype, shape, attrs, keyed
            )
            self._keys.append(key)
        return out

    def fresh(self, op_type: str, *inputs: ir.Value | None, **attrs: Any) -> ir.Value:
        """One output of a node of its own, outside the memo: where two equal computations must
        stay two nodes (two graph outputs guarded alike each keep their own name)."""
        keyed = [(k, _value_key(v)) for k, v in attrs.items() if v is not None]
        return self._emit(op_type, inputs, 1, "", None, None, attrs, keyed)

    def _emit(self, op_type, inputs, outputs, domain, dtype, shape, attrs, keyed):
        name = self.ctx.unique(f"{self.prefix}/{op_type}")
        outs = [ir.Value(name=self.ctx.unique(f"{name}:{i}")) for i in range(outputs)]
        attributes = []
        for k, v_key in keyed:
            attr = self._attrs.get((k, v_key))
            if attr is None:
                attr = ir.convenience.convert_attribute(k, attrs[k])
                if isinstance(attrs[k], _PLAIN):  # a tensor is never shared
                    self._attrs[k, v_key] = attr
            attributes.append(attr)
        node = ir.Node(
            domain, op_type, list(inputs), attributes, outputs=outs, name=name
        )
        if dtype is not None:
            for o in outs:
                o.dtype = dtype
        if shape is not None:
            for o in outs:
                o.shape = ir.Shape([d if d is not None else None for d in shape])
        self.nodes.append(node)
        return outs[0] if outputs == 1 else tuple(outs)

    def const(self, array: Any, dtype: Any = None) -> ir.Value:
        arr = np.asarray(array, dtype=dtype)
        data = arr.tobytes()
        if arr.size > self.SMALL_CONST:
            data = hashlib.sha256(data).digest()
        key = (arr.dtype.str, arr.shape, data)
        if key not in self._consts:
            self._consts[key] = self._new_const(arr)
        return self._consts[key]

    def _new_const(self, arr: np.ndarray) -> ir.Value:
        graph = self.ctx.graph
        if isinstance(
            graph, ir.Graph
        ):  # an initializer: ORT folds Constant nodes into one anyway
            v = ir.Value(
                name=self.ctx.unique(f"{self.prefix}/const"), const_value=ir.tensor(arr)
            )
            v.dtype = ir.DataType.from_numpy(arr.dtype)
            v.shape = ir.Shape(list(arr.shape))
            graph.register_initializer(v)
            self._made_consts.append(v)
            return v
        return self.op(
            "Constant",
            value=ir.tensor(arr),
            dtype=ir.DataType.from_numpy(arr.dtype),
            shape=list(arr.shape),
        )

    def i64(self, values: Sequence[int] | int) -> ir.Value:
        # the rules ask for the same few int lists tens of thousands of times (Reshape targets,
        # Slice bounds): those of plain ints are looked up by value before numpy sees them
        key: int | tuple[int, ...]
        if type(values) is int:  # not a bool, not a numpy int
            key = values
        elif (
            isinstance(values, (list, tuple))
            and len(values) <= self.SMALL_CONST
            and all(type(v) is int for v in values)
        ):
            key = tuple(values)
        else:
            return self.const(np.asarray(values, dtype=np.int64))
        found = self._i64.get(key)
        if found is None:
            found = self._i64[key] = self.const(np.asarray(values, dtype=np.int64))
        return found

    def i32(self, values: Any) -> ir.Value:
        return self.const(np.asarray(values, dtype=np.int32))

    def scalar(self, value: Any, dtype: ir.DataType) -> ir.Value:
        return self.const(np.asarray(value, dtype=dtype.numpy()))

    # -- version-dependent spellings ------------------------------------------------------
    @property
    def opset(self) -> int:
        return self.ctx.opset

    def split(self, x: ir.Value, sizes: Sequence[int], axis: int) -> list[ir.Value]:
        if len(sizes) == 1:
            return [x]
        if self.opset >= 13:
            outs = self.op(
                "Split", x, self.i64(list(sizes)), outputs=len(sizes), axis=axis
            )
        else:
            outs = self.op("Split", x, outputs=len(sizes), axis=axis, split=list(sizes))
        return list(outs)

    def slice(
        self,
        x: ir.Value,
        starts: Sequence[int],
        ends: Sequence[int],
        axes: Sequence[int],
    ) -> ir.Value:
        return self.op("Slice", x, self.i64(starts), self.i64(ends), self.i64(axes))

    def pad(
        self, x: ir.Value, pads: Sequence[int] | ir.Value, value: ir.Value
    ) -> ir.Value:
        p = pads if isinstance(pads, ir.Value) else self.i64(list(pads))
        return self.op("Pad", x, p, value, mode="constant")

    def unsqueeze(self, x: ir.Value, axes: Sequence[int]) -> ir.Value:
        if self.opset >= 13:
            return self.op("Unsqueeze", x, self.i64(list(axes)))
        return self.op("Unsqueeze", x, axes=list(axes))

    def squeeze(self, x: ir.Value, axes: Sequence[int]) -> ir.Value:
        if self.opset >= 13:
            return self.op("Squeeze", x, self.i64(list(axes)))
        return self.op("Squeeze", x, axes=list(axes))

    def reshape(
        self, x: ir.Value, shape: Sequence[int] | ir.Value, zeros_mapped: bool = False
    ) -> ir.Value:
        """Reshape to a list of ints (no 0 in it) or to a shape tensor, which may hold a run-time 0
        (an empty tensor). Reshape reads a 0 as "copy this dim" unless allowzero=1, and the DML EP
        fails kernel creation on allowzero=1 (tests/dml, issue 13): so a shape tensor's zeros become
        -1 (`zeros_inferred`), which is exact where at most one dim is 0 — the callers never put a
        -1 beside a size that may be 0."""
        if isinstance(shape, ir.Value):
            return self.op(
                "Reshape", x, shape if zeros_mapped else zeros_inferred(self, shape)
            )
        return self.op("Reshape", x, self.i64(list(shape)))

    def cast(self, x: ir.Value, to: ir.DataType) -> ir.Value:
        return self.op("Cast", x, to=int(to), dtype=to)

    def take(self, x: ir.Value, idx: ir.Value) -> ir.Value:
        """x[idx] (both read as 1-D), 1-D: one GatherElements along axis 0.

        Not a Gather: ONNX Runtime's CPU Gather copies each element with its own memcpy
        (onnxruntime/core/providers/cpu/tensor/gather.cc, `GatherCopyData`), GatherElements
        runs a typed loop — 6.3 ms against 1.4 at 1e6 int32 elements (measured, 1.31). The DML
        EP runs both as one gather. On the 1-D tensors themselves, not on [1, n] views: the
        same loop (1.9 ms against 2.3 at 1e6 float32, int32 indices, one thread) and three
        Reshape nodes fewer for ORT to create per gather. The WebGPU plugin's GatherElements
        takes float data only (targets/data/webgpu_0.4.0.json): other data keeps the Gather
        there."""
        if self.ctx.target == "webgpu" and x.dtype not in (
            ir.DataType.FLOAT,
            ir.DataType.FLOAT16,
        ):
            return self.op("Gather", x, idx, axis=0)
        return self.op("GatherElements", self._flat(x), self._flat(idx), axis=0)

    def _flat(self, v: ir.Value) -> ir.Value:
        """v itself where its rank is 1, else a [-1] view of it."""
        if v.shape is not None and len(v.shape) == 1:
            return v
        return self.reshape(v, [-1])

    def done(
        self,
        outputs: Sequence[ir.Value],
        note: str = "",
        keep: Sequence[ir.Value | None] = (),
    ) -> Rewrite:
        """The rewrite, without the emitted nodes nothing reads (a size computed for a path the
        rule did not take): the DML EP's graph fusion refuses a partition holding an unused
        output (see tests' test_no_dead_nodes). Dropped nodes leave the shared memo too.
        `keep`: values read later by nodes emitted after the graph's rewrites (the scatter's
        guard flags, `scatter_guard.guard_graph`)."""
        needed = {id(v) for v in outputs} | {id(v) for v in keep if v is not None}
        alive: set[int] = set()
        for node in reversed(self.nodes):  # emission order is topological
            if any(id(o) in needed for o in node.outputs):
                alive.add(id(node))
                needed.update(id(i) for i in node.inputs if i is not None)
        if len(alive) < len(self.nodes):
            dead = {id(o) for n in self.nodes if id(n) not in alive for o in n.outputs}
            for key in self._keys:  # only this emitter's nodes can be dead
                out = self._ops.get(key)
                if (
                    out is not None
                    and id(out[0] if isinstance(out, tuple) else out) in dead
                ):
                    del self._ops[key]
            self.nodes = [n for n in self.nodes if id(n) in alive]
            self._drop_unread_consts(outputs, keep)
        return Rewrite(self.nodes, list(outputs), note)

    def _drop_unread_consts(
        self, outputs: Sequence[ir.Value], keep: Sequence[ir.Value | None]
    ) -> None:
        """Take out of the graph (and the shared memo) the initializers this emitter made that
        only dropped nodes read: ONNX Runtime would warn about each and remove it."""
        read = {id(i) for n in self.nodes for i in n.inputs if i is not None}
        read |= {id(v) for v in (*outputs, *keep) if v is not None}
        unread = [v for v in self._made_consts if id(v) not in read]
        if not unread or not isinstance(self.ctx.graph, ir.Graph):
            return
        gone = {id(v) for v in unread}
        for v in unread:
            assert v.name is not None  # _new_const names every initializer
            self.ctx.graph.initializers.pop(v.name)
        for memo in (self._consts, self._i64):
            for key in [k for k, v in memo.items() if id(v) in gone]:
                del memo[key]
        self._made_consts = [v for v in self._made_consts if id(v) not in gone]


def _first(pair: tuple) -> Any:
    return pair[0]


_PLAIN = (int, float, str, list, tuple)


def _value_key(v: Any):
    """A hashable stand-in for an attribute value: equal keys, equal values (the type kept,
    so 1, 1.0 and True differ; floats by repr, so a NaN matches itself); values of other
    kinds (tensors) by their repr, as before."""
    if isinstance(v, (int, str)):
        return (type(v), v)
    if isinstance(v, (list, tuple)):
        return (type(v), tuple(_value_key(x) for x in v))
    return (type(v), repr(v))


def zeros_inferred(e: Emitter, shape: ir.Value) -> ir.Value:
    """`shape` with every 0 replaced by -1: Reshape without allowzero then infers that dim as
    0 (the element count is 0) — the same result as allowzero=1 wherever at most one dim is 0
    and no -1 is present (ONNX forbids -1 beside 0 under allowzero=1); with two zero dims the
    Reshape fails instead (two -1). Constant shapes are mapped at convert time."""
    const = const_array(shape)
    if const is not None:
        arr = np.where(const == 0, -1, const).astype(np.int64)
        return shape if np.array_equal(arr, const) else e.const(arr)
    if never_zero(shape):
        return shape
    return e.op("Where", e.op("Equal", shape, e.i64(0)), e.i64(-1), shape)


def never_zero(v: ir.Value) -> bool:
    """Whether no element of the int64 tensor v can be 0, as its nodes show: a constant without
    one, Max(x, c) with every c ≥ 1 (a row length `Max(n, 1)`), or a Concat of such parts.
    Then `zeros_inferred` has nothing to map (the `[-1, row]` views of the lowered scatter)."""
    const = const_array(v)
    if const is not None:
        return bool(np.all(const != 0))
    node = v.producer()
    if node is None or node.domain != "":
        return False
    if node.op_type == "Concat":
        return all(i is not None and never_zero(i) for i in node.inputs)
    if node.op_type == "Max":
        bounds = [const_array(i) for i in node.inputs if i is not None]
        return any(c is not None and bool(np.all(c >= 1)) for c in bounds)
    return False
