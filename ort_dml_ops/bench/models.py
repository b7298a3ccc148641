"""The benchmark's models, inputs and numpy baselines: one op per model, static shapes.

A case is (op, reduction, dtype, size, axis). Its tensor has shape [r, size / r] with r a power
of ten near sqrt(size) (1e3 -> [10, 100], 1e6 -> [1000, 1000], 3e7 -> [1000, 30000]); "first"
is axis 0, "last" axis 1. ScatterElements writes K = size updates (indices of the data's shape)
along the axis: random indices (duplicates) for the reductions, a cyclic shift per line for
reduction "none" (unique positions, so every implementation writes the same result).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper

from .._domain import DOMAIN

OPS = ("CumSum", "CumProd", "ScatterElements")
REDUCTIONS = ("none", "add", "mul", "max", "min")
#: opsets of the native models: CumSum-14, CumProd-26 (CPU kernel in ORT >= 1.25-ish),
#: ScatterElements-18 (max/min reductions). Models in the project's domain import opset 17.
NATIVE_OPSET = {"CumSum": 14, "CumProd": 26, "ScatterElements": 18}
DOMAIN_OPSET = 17


def shape_for(size: int) -> list[int]:
    r = 10 ** (int(math.log10(size)) // 2)
    return [r, size // r]


def case_name(op: str, reduction: str | None, dtype: str, size: int, axis: int) -> str:
    kind = f"{op}[{reduction}]" if reduction else op
    return f"{kind} {dtype} {size:.0e} axis={'first' if axis == 0 else 'last'}"


def _tt(dtype: str) -> int:
    return helper.np_dtype_to_tensor_dtype(np.dtype(dtype))


def _model(nodes, inputs, outputs, inits, opset: int, domain: str) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "bench", inputs, outputs, inits)
    imports = [helper.make_opsetid("", opset)] + (
        [helper.make_opsetid(DOMAIN, 1)] if domain else []
    )
    return helper.make_model(
        graph, opset_imports=imports, ir_version=13 if opset > 21 else 10
    )


def scan_model(
    op: str, dtype: str, shape, axis: int, *, domain: str = "", opset: int | None = None
) -> onnx.ModelProto:
    """y = op(x, axis) with the axis a constant initializer (so it can be lowered and fused)."""
    opset = opset or (DOMAIN_OPSET if domain else NATIVE_OPSET[op])
    node = helper.make_node(op, ["x", "axis"], ["y"], domain=domain)
    return _model(
        [node],
        [helper.make_tensor_value_info("x", _tt(dtype), shape)],
        [helper.make_tensor_value_info("y", _tt(dtype), shape)],
        [numpy_helper.from_array(np.array(axis, np.int64), "axis")],
        opset,
        domain,
    )


def scatter_model(
    reduction: str | None, dtype: str, shape, axis: int, *, domain: str = ""
) -> onnx.ModelProto:
    """ScatterElements(data, indices, updates) with `reduction` (None or "none": plain)."""
    opset = DOMAIN_OPSET if domain else NATIVE_OPSET["ScatterElements"]
    attrs: dict[str, Any] = {"axis": axis}
    if reduction not in (None, "none"):
        attrs["reduction"] = reduction
    node = helper.make_node(
        "ScatterElements", ["data", "indices", "updates"], ["y"], domain=domain, **attrs
    )
    t = _tt(dtype)
    return _model(
        [node],
        [
            helper.make_tensor_value_info("data", t, shape),
            helper.make_tensor_value_info("indices", onnx.TensorProto.INT64, shape),
            helper.make_tensor_value_info("updates", t, shape),
        ],
        [helper.make_tensor_value_info("y", t, shape)],
        [],
        opset,
        domain,
    )


def feeds_for(
    op: str, reduction: str | None, dtype: str, shape, axis: int, seed: int = 0
) -> dict:
    rng = np.random.default_rng(seed)
    # products of n factors near 1 stay far from overflow for n <= 3e4
    if op == "CumProd":
        return {"x": rng.uniform(0.999, 1.001, shape).astype(dtype)}
    if op == "CumSum":
        return {"x": rng.uniform(-1, 1, shape).astype(dtype)}
    d = shape[axis]
    if reduction == "none":
        line = np.arange(d).reshape([-1 if i == axis else 1 for i in range(len(shape))])
        other = [s if i != axis else 1 for i, s in enumerate(shape)]
        indices = (line + rng.integers(0, d, other)) % d
    else:
        indices = rng.integers(0, d, shape)
    updates = (
        rng.uniform(0.999, 1.001, shape)
        if reduction == "mul"
        else rng.uniform(0, 1, shape)
    )
    return {
        "data": rng.uniform(0, 1, shape).astype(dtype),
        "indices": indices.astype(np.int64),
        "updates": updates.astype(dtype),
    }


_UFUNC = {"add": np.add, "mul": np.multiply, "max": np.maximum, "min": np.minimum}


def numpy_fn(op: str, reduction: str | None, axis: int, feeds: dict):
    """What a numpy user would write: np.cumsum / np.cumprod, ufunc.at on flat positions."""
    if op == "CumSum":
        x = feeds["x"]
        return lambda: np.cumsum(x, axis=axis)
    if op == "CumProd":
        x = feeds["x"]
        return lambda: np.cumprod(x, axis=axis)
    data, idx, upd = feeds["data"], feeds["indices"], feeds["updates"]

    def scatter():
        out = data.copy()
        if reduction == "none":
            np.put_along_axis(out, idx, upd, axis=axis)
            return out
        rows, cols = data.shape
        pos = (
            idx * cols + np.arange(cols)
            if axis == 0
            else np.arange(rows)[:, None] * cols + idx
        )
        _UFUNC[str(reduction)].at(out.reshape(-1), pos.reshape(-1), upd.reshape(-1))
        return out

    return scatter


def chain_model(n_nodes: int, opset: int = 17) -> onnx.ModelProto:
    """A synthetic n-node model for the convert / inspect costs: element-wise ops, CumSum,
    ScatterElements with and without reduction (tools/bench_inspect.py times inspect on it)."""
    nodes = []
    inits = [
        helper.make_tensor("axis", onnx.TensorProto.INT64, [], [1]),
        helper.make_tensor("idx", onnx.TensorProto.INT64, [2, 3], [0, 1, 2, 2, 1, 0]),
    ]
    cycle = (
        "Relu",
        "Add",
        "CumSum",
        "ScatterElements",
        "Mul",
        "ScatterElementsAdd",
        "Neg",
    )
    cur = "x"
    for i in range(n_nodes):
        kind, out = cycle[i % len(cycle)], f"v{i}"
        if kind == "Add":
            node = helper.make_node("Add", [cur, cur], [out], name=f"n{i}")
        elif kind == "Mul":
            node = helper.make_node("Mul", [cur, "x"], [out], name=f"n{i}")
        elif kind == "CumSum":
            node = helper.make_node("CumSum", [cur, "axis"], [out], name=f"n{i}")
        elif kind == "ScatterElements":
            node = helper.make_node(
                "ScatterElements", [cur, "idx", cur], [out], name=f"n{i}"
            )
        elif kind == "ScatterElementsAdd":
            node = helper.make_node(
                "ScatterElements",
                [cur, "idx", cur],
                [out],
                name=f"n{i}",
                reduction="add",
            )
        else:
            node = helper.make_node(kind, [cur], [out], name=f"n{i}")
        nodes.append(node)
        cur = out
    f = onnx.TensorProto.FLOAT
    return _model(
        nodes,
        [helper.make_tensor_value_info("x", f, [2, 3])],
        [helper.make_tensor_value_info(cur, f, [2, 3])],
        inits,
        opset,
        "",
    )
