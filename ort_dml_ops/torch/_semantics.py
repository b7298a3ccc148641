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
