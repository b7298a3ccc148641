"""The ONNX graphs for the torch ops the exporters get wrong, written once for both exporters.

`torch.onnx.export` (dynamo=True, torch 2.13) writes `scatter_reduce(reduce="mean")` as a
plain scatter-add (silently wrong), and fails on `index_reduce` and `cumprod` (pytorch
#102948); the TorchScript exporter refuses `include_self=False`, `mean`, `index_reduce`,
`cumprod` and `index_add` with duplicate indices. Each function here builds the exact
equivalent from ONNX ScatterElements (-18) and the project's DOMAIN CumProd through an `ops`
adapter (`dynamo.py`: onnxscript tracing; `torchscript.py`: `g.op`), so the two exporters
emit the same graph.

Semantics follow ATen's CPU kernels (aten/src/ATen/native/TensorAdvancedIndexing.cpp,
`scatter_reduce_two_cpu_out`, `index_reduce_func_impl`): `include_self=False` leaves every
indexed position as the reduction of its updates only; `mean` divides the sum by the count of
contributions (plus one for the element itself with `include_self=True`), rounding down for
integers (`div_(count, "floor")`); positions no index names are left as they are.
"""

from __future__ import annotations

from typing import Protocol

#: torch's reduce names -> ONNX ScatterElements' reduction
ONNX_REDUCTION = {"sum": "add", "prod": "mul", "amax": "max", "amin": "min"}
REDUCES = (*ONNX_REDUCTION, "mean")


class Ops(Protocol):
    def __call__(self, op_type: str, *inputs, domain: str = "", **attrs): ...
    def ints(self, values: list[int]): ...
    def scalar(self, value: float): ...
    def is_float(self, v) -> bool: ...
    def rank(self, v) -> int: ...


def scatter_reduce(
    o: Ops, x, dim: int, index, src, reduce: str, include_self: bool = True
):
    """torch.Tensor.scatter_reduce(dim, index, src, reduce, include_self)."""
    # torch reads only src[:index.shape] (src may be larger); ONNX wants updates == indices' shape
    updates = o(
        "Slice", src, o("Mul", o("Shape", index), o.ints([0])), o("Shape", index)
    )
    return _scatter(o, x, dim, index, updates, reduce, include_self)


def index_reduce(
    o: Ops, x, dim: int, index, source, reduce: str, include_self: bool = True
):
    """torch.Tensor.index_reduce(dim, index, source, reduce, include_self)."""
    return _scatter(
        o, x, dim, _spread(o, dim, index, source), source, reduce, include_self
    )


def index_add(o: Ops, x, dim: int, index, source, alpha=1):
    """torch.Tensor.index_add(dim, index, source, alpha): ScatterElements(add), duplicates summed."""
    if alpha != 1:
        source = o("Mul", source, o("CastLike", o.scalar(alpha), source))
    return _scatter(o, x, dim, _spread(o, dim, index, source), source, "sum", True)


#: torch.segment_reduce's value for an empty segment (and the start of every one) without `initial`
SEGMENT_START = {
    "sum": 0,
    "mean": 0,
    "prod": 1,
    "max": float("-inf"),
    "min": float("inf"),
}
SEGMENT_REDUCTION = {
    "sum": "add",
    "mean": "add",
    "prod": "mul",
    "max": "max",
    "min": "min",
}


def segment_reduce(o: Ops, data, reduce: str, lengths, axis: int = 0, initial=None):
    """torch.segment_reduce(data, reduce, lengths=1-D, axis=0, initial) (floating data, as ATen).

    ATen (aten/src/ATen/native/SegmentReduce.cpp) starts each segment at `initial` (else the
    reduction's identity) and reduces its elements in order; `mean` divides by the element
    count and leaves an empty segment at `initial` (else NaN). Element j belongs to the number
    of segments that end at or before it (cumsum of lengths), written with one ScatterElements.
    """
    if reduce not in SEGMENT_REDUCTION:
        raise ValueError(
            f"segment_reduce: reduce={reduce!r}: expected one of {', '.join(SEGMENT_REDUCTION)}"
        )
    rank = o.rank(data)
    if axis % rank != 0 or o.rank(lengths) != 1:
        raise ValueError("segment_reduce: only 1-D lengths over axis 0 are translated")
    # Slice, not Shape(start=, end=): TorchScript's shape inference ignores those attributes
    shape = o("Shape", data)
    positions = o(
        "Range",
        o.scalar(0),
        o("Squeeze", o("Slice", shape, o.ints([0]), o.ints([1]))),
        o.scalar(1),
    )
    ends = o("CumSum", lengths, o.ints([0]))
    at_or_after = o(
        "GreaterOrEqual",
        o("Unsqueeze", positions, o.ints([1])),
        o("Unsqueeze", ends, o.ints([0])),
    )
    segment = o(
        "ReduceSum", o("Cast", at_or_after, to=7), o.ints([1]), keepdims=0
    )  # 7: INT64
    index = _spread(o, 0, segment, data)
    out_shape = o(
        "Concat",
        o("Shape", lengths),
        o("Slice", shape, o.ints([1]), o.ints([rank])),
        axis=0,
    )
    start = SEGMENT_START[reduce] if initial is None else initial

    def filled(value):
        return o("Expand", o("CastLike", o.scalar(value), data), out_shape)

    total = o(
        "ScatterElements",
        filled(start),
        index,
        data,
        axis=0,
        reduction=SEGMENT_REDUCTION[reduce],
    )
    if reduce != "mean":
        return total
    count = o(
        "ScatterElements", filled(0), index, _fill(o, data, 1), axis=0, reduction="add"
    )
    empty = o("Equal", count, o("CastLike", o.scalar(0), data))
    return o(
        "Where",
        empty,
        filled(float("nan") if initial is None else initial),
        o("Div", total, count),
    )


def cumprod(o: Ops, x, dim: int, domain: str):
    """torch.cumprod(x, dim) as DOMAIN::CumProd (ONNX CumProd-26 semantics, exclusive=0, reverse=0)."""
    return o("CumProd", x, o.ints([dim]), domain=domain, exclusive=0, reverse=0)


def _spread(o: Ops, dim: int, index, source):
    """index (1-D, along `dim`) as ScatterElements indices of source's shape."""
    rank = o.rank(source)
    dim = dim % rank if rank else 0
    shape = [1] * rank
    shape[dim] = -1
    return o("Expand", o("Reshape", index, o.ints(shape)), o("Shape", source))


def _fill(o: Ops, like, value: int):
    """A tensor of like's shape and type holding `value` (never derived from like's values: NaN-safe)."""
    return o("Expand", o("CastLike", o.scalar(value), like), o("Shape", like))


def _scatter(o: Ops, x, dim: int, idx, upd, reduce: str, include_self: bool):
    if reduce not in REDUCES:
        raise ValueError(f"reduce={reduce!r}: expected one of {', '.join(REDUCES)}")

    def scatter(data, updates, reduction="none"):
        return o("ScatterElements", data, idx, updates, axis=dim, reduction=reduction)

    if reduce == "mean":
        base = x if include_self else scatter(x, _fill(o, upd, 0))
        total = scatter(base, upd, "add")
        count = scatter(_fill(o, x, 1 if include_self else 0), _fill(o, upd, 1), "add")
        count = o("Max", count, o("CastLike", o.scalar(1), x))
        quotient = o("Div", total, count)
        if o.is_float(x):
            return quotient
        # integer Div truncates; torch floors (count > 0, so only a negative remainder differs)
        remainder = o("Sub", total, o("Mul", quotient, count))
        return o(
            "Sub",
            quotient,
            o("CastLike", o("Less", remainder, o("CastLike", o.scalar(0), x)), x),
        )
    reduction = ONNX_REDUCTION[reduce]
    if not include_self:
        if reduce in ("amax", "amin"):
            # any one update of each group, then the group's max/min: exact whichever one lands
            x = scatter(x, upd)
        else:
            x = scatter(x, _fill(o, upd, 1 if reduce == "prod" else 0))
    return scatter(x, upd, reduction)
