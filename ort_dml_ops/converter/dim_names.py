"""Names for the run-time dims of a graph's values, equal only where the dims are provably equal.

Why: ONNX Runtime's allocation planner lets a new tensor take a freed buffer only when the two
shapes compare equal dim for dim: the same number, or the same non-empty ``dim_param``
(``SameShape`` in onnxruntime/core/framework/allocation_planner.cc). The dims a lowering's
Reshape, Range, TopK or Pad computes at run time get a fresh name each from shape inference
(onnx's ``unk__<n>``), so no buffer of theirs is ever taken again. Each stays on the planner's
free list, which ``FindReusableTensor`` walks whole for every output: session creation grows
with the square of the lowered nodes (minimol, 48 lowered scatters: 5.2 s, 4.6 s of it that
walk). Written into the converted model's value_info, the names below let the planner reuse
those buffers; ONNX Runtime keeps a declared ``dim_param`` where its own inference knows no
value (``mergeInShapeInfo``: the target's param is preferred).

How: a value numbering over the main graph, in node order. A dim is a key: an int where
it is static, the graph input's own ``dim_param``, or a tuple naming the computation that
gives it — ``("Mul", a, b)``, ``("reshape", x_dims, target, i)`` and so on — so two dims
get one key only where the same function of the same keys gives them. Small int tensors
(shapes and the arithmetic on them: Shape, Gather, Concat, Add, Mul, …) are followed by value,
element by element, so that a Reshape to ``Concat(Gather(Shape(x), 0), [16])`` and a
ConstantOfShape of the same sizes name their dims alike. The shape rules follow the ONNX
operator specs; where no rule here applies, onnx's own inference gives the dims (its
``unk__<n>`` names are equal only where it propagated one dim, so they key soundly too).
A key is never a guess: a dim nothing proves equal to another keeps a name of its own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import numpy as np
import onnx
from onnx import numpy_helper

#: the prefix of every name written (never one a user's input declares)
PREFIX = "ort_dml_ops_dim_"

Key = int | tuple


def is_named(dim: object) -> bool:
    """Whether `dim` (a dim of `dim_names`' result, or a ``dim_param``) is a name given here."""
    return isinstance(dim, str) and dim.startswith(PREFIX)


def has_named_dim(info: onnx.ValueInfoProto) -> bool:
    """Whether a declaration carries a dim named here (the converted model keeps it)."""
    t = info.type
    return t.HasField("tensor_type") and any(
        is_named(d.dim_param) for d in t.tensor_type.shape.dim
    )


#: an int tensor up to this many elements is followed by value
_SMALL = 64

#: output shape = input 0's
_SAME_SHAPE = frozenset(
    [
        "Abs",
        "Cast",
        "CastLike",
        "Ceil",
        "CumSum",
        "Erf",
        "Exp",
        "Floor",
        "Identity",
        "IsInf",
        "IsNaN",
        "Log",
        "LogSoftmax",
        "Neg",
        "Not",
        "Reciprocal",
        "Relu",
        "Round",
        "Sigmoid",
        "Sign",
        "Softmax",
        "Sqrt",
        "Tanh",
        "BitwiseNot",
    ]
)
#: output shape = the inputs' multidirectional broadcast
_BROADCAST = frozenset(
    [
        "Add",
        "And",
        "BitShift",
        "BitwiseAnd",
        "BitwiseOr",
        "BitwiseXor",
        "Div",
        "Equal",
        "Greater",
        "GreaterOrEqual",
        "Less",
        "LessOrEqual",
        "Max",
        "Mean",
        "Min",
        "Mod",
        "Mul",
        "Or",
        "Pow",
        "PRelu",
        "Sub",
        "Sum",
        "Where",
        "Xor",
    ]
)
_REDUCE = frozenset(
    [
        "ReduceL1",
        "ReduceL2",
        "ReduceLogSum",
        "ReduceLogSumExp",
        "ReduceMax",
        "ReduceMean",
        "ReduceMin",
        "ReduceProd",
        "ReduceSum",
        "ReduceSumSquare",
    ]
)
#: elementwise ops followed by value on small int tensors
_ARITHMETIC: dict[str, Callable[[int, int], int]] = {
    "Add": lambda a, b: a + b,
    "Sub": lambda a, b: a - b,
    "Mul": lambda a, b: a * b,
    "Max": max,
    "Min": min,
}
#: casts that keep an int value (sizes are far below 2**31)
_INT_TYPES = frozenset(
    {
        onnx.TensorProto.INT32,
        onnx.TensorProto.INT64,
        onnx.TensorProto.UINT32,
        onnx.TensorProto.UINT64,
    }
)


def _ints(values: Sequence[Key] | None) -> list[int] | None:
    """The values where each is a known int, else None."""
    if values is None or not all(isinstance(v, int) for v in values):
        return None
    return [int(v) for v in values]  # type: ignore[arg-type]


def _product(factors: Iterable[Key]) -> Key:
    """The product of `factors` in one canonical form (products are commutative and
    associative): ``("prod", c, f1, f2, …)`` with the constant c and the other factors sorted;
    an int where every factor is one, the factor itself where it stands alone."""
    constant = 1
    rest: list[Key] = []
    for f in factors:
        if isinstance(f, int):
            constant *= f
        elif f[0] == "prod":
            constant *= f[1]
            rest.extend(f[2:])
        else:
            rest.append(f)
    if not rest or constant == 0:
        return constant
    if constant == 1 and len(rest) == 1:
        return rest[0]
    return ("prod", constant, *sorted(rest, key=repr))


def _attr(node: onnx.NodeProto, name: str, default=None):
    for a in node.attribute:
        if a.name == name:
            return onnx.helper.get_attribute_value(a)
    return default


def _declared_dims(
    info: onnx.ValueInfoProto,
) -> list[onnx.TensorShapeProto.Dimension] | None:
    t = info.type
    if not t.HasField("tensor_type") or not t.tensor_type.HasField("shape"):
        return None
    return list(t.tensor_type.shape.dim)


class _Numbering:
    """The keys of every value's dims (`dims`) and of small int tensors' elements (`values`)."""

    def __init__(self, graph: onnx.GraphProto):
        self.dims: dict[str, tuple[Key, ...]] = {}
        self.values: dict[str, tuple[Key, ...]] = {}
        self._fresh = 0
        for t in graph.initializer:
            self.dims[t.name] = tuple(int(d) for d in t.dims)
            # read only what may be a size: a small int tensor
            if t.data_type in _INT_TYPES and int(np.prod(t.dims)) <= _SMALL:
                self._constant(t.name, numpy_helper.to_array(t))
        for info in graph.input:
            if info.name in self.dims:
                continue
            declared = _declared_dims(info)
            if declared is not None:
                self.dims[info.name] = tuple(
                    d.dim_value
                    if d.HasField("dim_value")
                    else ("param", d.dim_param)
                    if d.dim_param
                    else self.fresh()
                    for d in declared
                )

    def fresh(self) -> tuple:
        self._fresh += 1
        return ("fresh", self._fresh)

    def _constant(self, name: str, array: np.ndarray) -> None:
        self.dims[name] = tuple(int(d) for d in array.shape)
        if array.dtype.kind in "iub" and array.size <= _SMALL:
            self.values[name] = tuple(int(x) for x in array.reshape(-1))

    # -- small int tensors, element by element -------------------------------------------
    @staticmethod
    def _apply(op: str, args: Sequence[Key]) -> Key:
        if op in _ARITHMETIC and len(args) == 2:
            a, b = args
            if isinstance(a, int) and isinstance(b, int):
                return _ARITHMETIC[op](a, b)
            if op == "Mul":
                return _product([a, b])
            if op in ("Add", "Sub") and b == 0:
                return a
            if op == "Add" and a == 0:
                return b
        return (op, *args)

    def _elementwise(
        self, op: str, operands: list[tuple[Key, ...]]
    ) -> tuple[Key, ...] | None:
        n = max(len(v) for v in operands)
        if any(len(v) not in (1, n) for v in operands):
            return None
        return tuple(
            self._apply(op, [v[0] if len(v) == 1 else v[i] for v in operands])
            for i in range(n)
        )

    def _vector(self, name: str) -> tuple[Key, ...] | None:
        """The elements of a followed value of rank 0 or 1 (a shape or a size); None else."""
        value = self.values.get(name) if name else None
        return (
            value
            if value is not None and len(self.dims.get(name, (0, 0))) <= 1
            else None
        )

    def _follow_values(self, node: onnx.NodeProto) -> None:
        """The elements of `node`'s output where it computes a shape or a size: only from
        rank-0 / rank-1 values, where flat element order is the tensor's own."""
        op, ins, out = node.op_type, list(node.input), node.output[0]
        known = [self._vector(x) for x in ins]
        if op == "Shape" and ins[0] in self.dims:
            dims = self.dims[ins[0]]
            r = len(dims)
            start, end = _attr(node, "start", 0), _attr(node, "end", r)
            start = min(max(start + r if start < 0 else start, 0), r)
            end = min(max(end + r if end < 0 else end, 0), r)
            self.values[out] = dims[start:end]
        elif op == "Size" and ins[0] in self.dims:
            self.values[out] = (_product(self.dims[ins[0]]),)
        elif op == "Gather" and known[0] is not None and known[1] is not None:
            data, picks, n = known[0], _ints(known[1]), len(known[0])
            if picks is not None and all(-n <= i < n for i in picks):
                self.values[out] = tuple(data[i] for i in picks)
        elif op == "Concat" and all(v is not None for v in known):
            self.values[out] = tuple(e for v in known if v is not None for e in v)
        elif (
            op in ("Unsqueeze", "Squeeze", "Reshape", "Identity", "Flatten")
            and ins[0] in self.values
        ) or (
            op == "Cast" and ins[0] in self.values and _attr(node, "to") in _INT_TYPES
        ):  # the same elements in the same order
            self.values[out] = self.values[ins[0]]
        elif op in _BROADCAST or op in ("Abs", "Neg", "Not"):
            operands = [v for x, v in zip(ins, known) if x]
            if operands and all(v is not None for v in operands):
                follows = self._elementwise(op, operands)  # type: ignore[arg-type]
                if follows is not None:
                    self.values[out] = follows
        elif (
            op in _REDUCE
            and known[0] is not None
            and _attr(node, "axes") is None
            and len(ins) < 2
        ):  # every element into one
            self.values[out] = ((op, *known[0]),)

    # -- shapes -----------------------------------------------------------------------------
    @staticmethod
    def _broadcast(shapes: list[tuple[Key, ...]]) -> list[Key]:
        """Multidirectional broadcast: where every dim not 1 has one key, that key; a static
        one where there is one (the others equal it or are 1); else the broadcast of them."""
        rank = max(len(s) for s in shapes)
        out: list[Key] = []
        for i in range(rank):
            keys = [s[i - rank + len(s)] for s in shapes if i - rank + len(s) >= 0]
            wide = [k for k in keys if k != 1]
            if not wide:
                out.append(1)
            elif all(k == wide[0] for k in wide):
                out.append(wide[0])
            else:
                static = [k for k in wide if isinstance(k, int)]
                out.append(static[0] if static else ("broadcast", *wide))
        return out

    def _axes(self, node: onnx.NodeProto) -> list[int] | None:
        """The `axes` attribute, else the axes input where its value is followed; None else."""
        axes = _attr(node, "axes")
        if axes is not None:
            return [int(a) for a in axes]
        if len(node.input) > 1 and node.input[1]:
            return _ints(self.values.get(node.input[1]))
        return None

    def _reduced_axes(self, node: onnx.NodeProto, rank: int) -> set[int] | None:
        """The axes a reduction removes (or keeps as 1): its axis / axes, every axis where none
        is given or the list is empty, None for an empty list under noop_with_empty_axes, and
        the empty set where the axes input is known only at run time."""
        if node.op_type in ("ArgMax", "ArgMin"):
            return {_attr(node, "axis", 0) % rank} if rank else set()
        axes = self._axes(node)
        if axes is None and len(node.input) > 1 and node.input[1]:
            return set()
        if not axes:
            if axes is not None and _attr(node, "noop_with_empty_axes", 0):
                return None
            return set(range(rank))
        return {a % rank for a in axes}

    def _shape_of(self, node: onnx.NodeProto) -> list[Sequence[Key]] | None:
        op, ins = node.op_type, list(node.input)
        x = self.dims.get(ins[0]) if ins and ins[0] else None
        # the inputs' followed elements, padded: an old opset's op has fewer inputs
        v = [self.values.get(i) if i else None for i in ins] + [None] * 5
        if op in _SAME_SHAPE:
            return None if x is None else [x]
        if op in _BROADCAST:
            operands = [self.dims.get(i) for i in ins if i]
            known = [s for s in operands if s is not None]
            return [self._broadcast(known)] if len(known) == len(operands) else None
        if op in ("ScatterElements", "ScatterND"):
            return None if x is None else [x]
        if op == "ConstantOfShape":
            return None if v[0] is None else [v[0]]
        if op == "MaxUnpool" and len(ins) > 2 and v[2] is not None:
            return [v[2]]
        if op == "GatherElements":
            idx = self.dims.get(ins[1])
            return None if idx is None else [idx]
        if x is None:
            return None
        if op == "Reshape":
            target = v[1]
            if target is None:
                return None
            allowzero = _attr(node, "allowzero", 0)
            out: list[Key] = []
            for i, e in enumerate(target):
                if isinstance(e, int) and e > 0:
                    out.append(e)
                elif e == 0 and not allowzero and i < len(x):
                    out.append(x[i])
                elif e == -1 and all(
                    isinstance(f, int) and f > 0 for j, f in enumerate(target) if j != i
                ):  # the element count over the other dims
                    others = _product(f for j, f in enumerate(target) if j != i)
                    numel = _product(x)
                    out.append(numel if others == 1 else ("Div", numel, others))
                else:  # known at run time only: what decides it, whole
                    out.append(("reshape", x, target, i))
            return [out]
        if op == "Range":
            start, limit, delta = v[0], v[1], v[2]
            if start is None or limit is None or delta is None:
                return None
            if start == (0,) and delta == (1,) and not isinstance(limit[0], int):
                # max(limit, 0) elements: limit itself, a count (never below 0 here)
                return [[limit[0]]]
            return [[("range", start, limit, delta)]]
        if op == "Expand":
            return None if v[1] is None else [self._broadcast([x, v[1]])]
        if op == "TopK":
            if v[1] is None or not x:
                return None
            axis = _attr(node, "axis", -1) % len(x)
            dims = list(x)
            dims[axis] = v[1][0]
            return [dims, dims]
        if op == "Pad":
            pads = v[1] if len(ins) > 1 else None
            if pads is None or len(pads) != 2 * len(x) or (len(ins) > 3 and ins[3]):
                return None
            r = len(x)
            return [
                [
                    self._apply(
                        "Add", [self._apply("Add", [x[i], pads[i]]), pads[i + r]]
                    )
                    for i in range(r)
                ]
            ]
        if op == "Slice":
            starts, ends = v[1], v[2]
            if starts is None or ends is None:
                return None
            sliced = (
                _ints(v[3]) if len(ins) > 3 and ins[3] else list(range(len(starts)))
            )
            steps = v[4] if len(ins) > 4 and ins[4] else (1,) * len(starts)
            if sliced is None or steps is None:
                return None
            dims = list(x)
            for a, s, e, k in zip(sliced, starts, ends, steps):
                dims[a % len(x)] = ("slice", x[a % len(x)], s, e, k)
            return [dims]
        if op == "Concat":
            inputs = [self.dims.get(i) for i in ins]
            shapes: list[tuple[Key, ...]] = [s for s in inputs if s is not None]
            if len(shapes) != len(inputs):
                return None
            axis = _attr(node, "axis") % len(x)
            dims = list(x)
            # a dim off the axis is equal in every input: a static one where there is one
            for i in range(len(dims)):
                static = [s[i] for s in shapes if isinstance(s[i], int)]
                if i != axis and static:
                    dims[i] = static[0]
            parts = [s[axis] for s in shapes]
            ints = _ints(parts)
            dims[axis] = sum(ints) if ints is not None else ("concat", *parts)
            return [dims]
        if op == "Gather":
            idx = self.dims.get(ins[1])
            if idx is None:
                return None
            axis = _attr(node, "axis", 0) % len(x)
            return [[*x[:axis], *idx, *x[axis + 1 :]]]
        if op == "Transpose":
            perm = _attr(node, "perm") or list(reversed(range(len(x))))
            return [[x[p] for p in perm]]
        if op == "Unsqueeze":
            axes = self._axes(node)
            if axes is None:
                return None
            rank = len(x) + len(axes)
            at = {a % rank for a in axes}
            rest = iter(x)
            return [[1 if i in at else next(rest) for i in range(rank)]]
        if op == "Squeeze":
            axes = self._axes(node)
            if axes is None:
                return None
            at = {a % len(x) for a in axes}
            return [[d for i, d in enumerate(x) if i not in at]]
        if op in _REDUCE or op in ("ArgMax", "ArgMin"):
            reduced = self._reduced_axes(node, len(x))
            if reduced is None:
                return [x]  # an empty axes list with noop_with_empty_axes
            if not reduced and len(ins) > 1 and ins[1]:
                return None  # axes known only at run time
            keep = _attr(node, "keepdims", 1)
            return [
                [
                    1 if i in reduced else d
                    for i, d in enumerate(x)
                    if keep or i not in reduced
                ]
            ]
        return None

    def follow(
        self, node: onnx.NodeProto, inferred: dict[str, tuple[Key, ...]]
    ) -> None:
        """Number `node`'s outputs: its small int values, its dims by the rules above, else
        onnx's inferred dims (`inferred`)."""
        if node.domain in ("", "ai.onnx"):
            if node.op_type == "Constant":
                for name in ("value", "value_ints", "value_int"):
                    value = _attr(node, name)
                    if value is not None:
                        array = (
                            numpy_helper.to_array(value)
                            if name == "value"
                            else np.array(value, dtype=np.int64)
                        )
                        self._constant(node.output[0], array)
                        return
            if node.output and node.output[0]:
                self._follow_values(node)
            shapes = self._shape_of(node)
            if shapes is not None:
                for out, dims in zip(node.output, shapes):
                    if out:
                        self.dims[out] = tuple(dims)
        for out in node.output:
            if out and out not in self.dims and out in inferred:
                self.dims[out] = inferred[out]


def _inferred_keys(
    graph: onnx.GraphProto, numbering: _Numbering
) -> dict[str, tuple[Key, ...]]:
    out: dict[str, tuple[Key, ...]] = {}
    for info in graph.value_info:
        declared = _declared_dims(info)
        if declared is None:
            continue
        out[info.name] = tuple(
            d.dim_value
            if d.HasField("dim_value")
            else ("onnx", d.dim_param)
            if d.dim_param.startswith("unk__")
            else ("param", d.dim_param)
            if d.dim_param
            else numbering.fresh()
            for d in declared
        )
    return out


class Disagreement(Exception):
    """The numbering and onnx's inference give a value different static dims or ranks: a rule
    here is wrong for this graph, and no name may be written."""


def dim_names(
    inferred: onnx.ModelProto, values: Iterable[str]
) -> dict[str, list[int | str | None]]:
    """For each of `values` (node outputs of `inferred`'s main graph, a model onnx's shape
    inference ran on): its dims as an int, a name (`PREFIX` + n, or a graph input's own
    ``dim_param``), or None where nothing proves the dim equal to another. Raises
    `Disagreement` where a static dim of onnx's inference contradicts the numbering."""
    graph = inferred.graph
    numbering = _Numbering(graph)
    from_onnx = _inferred_keys(graph, numbering)
    for node in graph.node:
        numbering.follow(node, from_onnx)
    wanted = set(values)
    names: dict[Key, str] = {}
    out: dict[str, list[int | str | None]] = {}
    for name in (o for node in graph.node for o in node.output if o in wanted):
        keys, onnx_keys = numbering.dims.get(name), from_onnx.get(name)
        if keys is None or onnx_keys is None:
            continue
        if len(keys) != len(onnx_keys):
            raise Disagreement(
                f"{name}: rank {len(keys)} against onnx's {len(onnx_keys)}"
            )
        dims: list[int | str | None] = []
        for key, onnx_key in zip(keys, onnx_keys):
            if isinstance(onnx_key, int):
                if isinstance(key, int) and key != onnx_key:
                    raise Disagreement(f"{name}: dim {key} against onnx's {onnx_key}")
                dims.append(onnx_key)
            elif isinstance(key, int):
                dims.append(key)
            elif key[0] == "param":
                dims.append(key[1])
            elif key[0] == "fresh":
                dims.append(None)
            else:
                dims.append(names.setdefault(key, f"{PREFIX}{len(names)}"))
        out[name] = dims
    return out
