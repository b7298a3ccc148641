"""Refuse, before any rewrite, a family node whose error shows without running it."""

from __future__ import annotations

import onnx
import onnx_ir as ir
import onnx_ir.passes

from ...errors import UserError, node_label
from .._common import known_dims, walk_graphs
from ..rules import FAMILY_OPS
from ..rules._base import const_array, onnx_domain

_AXIS_INPUT_OPS = {"CumSum", "CumProd"}
_ELEMENTS_OPS = {"ScatterElements", "Scatter"}
_INT_TYPES = (ir.DataType.INT32, ir.DataType.INT64)


class RefuseStaticErrorsPass(onnx_ir.passes.InPlacePass):
    """An analysis: raises UserError naming the first invalid family node; changes nothing."""

    def call(self, model: ir.Model) -> onnx_ir.passes.PassResult:
        _refuse_static_errors(model)
        return onnx_ir.passes.PassResult(model, modified=False)


def _refuse_static_errors(model: ir.Model) -> None:
    """Refuse, in one line naming the node, a family node whose error shows without running it.

    ONNX Runtime loads such models and fails only at run time (or the lowered graph would
    compute something else): a constant axis out of range or not one integer, a non-integer
    axis, a scatter axis attribute out of range, indices and updates of different static shapes,
    indices longer than the data off a ScatterElements' axis.
    """
    for graph, where, _ in walk_graphs(model, 0):
        for node in graph:
            if (onnx_domain(node.domain), node.op_type) not in FAMILY_OPS:
                continue
            problem = _static_problem(node)
            if problem:
                raise UserError(
                    f"{node_label(node, where)}: {problem}; the model is invalid, refused"
                )


def _rank(v: ir.Value | None) -> int | None:
    return None if v is None or v.shape is None else len(v.shape)


def _type_name(dt: ir.DataType) -> str:
    try:
        return f"tensor({onnx.helper.tensor_dtype_to_np_dtype(int(dt)).name.replace('float32', 'float').replace('float64', 'double')})"
    except Exception:  # noqa: BLE001  # pragma: no cover - types numpy does not know
        return f"tensor(type {int(dt)})"


def _static_problem(node: ir.Node) -> str | None:
    op = node.op_type
    if op in _AXIS_INPUT_OPS:
        x = node.inputs[0] if node.inputs else None
        axis = node.inputs[1] if len(node.inputs) > 1 else None
        if axis is None:
            return None
        if axis.dtype is not None and axis.dtype not in _INT_TYPES:
            return f"the axis must be an int32 or int64 tensor, got {_type_name(axis.dtype)}"
        value = const_array(axis)
        if value is None:
            return None
        if value.size != 1:
            return f"the axis must be a scalar (one element), got shape {list(value.shape)}"
        if value.dtype.kind not in "iu":
            return f"the axis must be an integer, got {value.dtype}"
        a, r = int(value.reshape(-1)[0]), _rank(x)
        if r is not None and not -r <= a < r:
            return f"axis {a} is out of range for rank {r} (valid: [{-r}, {r - 1}])"
        return None
    data, indices, updates = (list(node.inputs) + [None, None, None])[:3]
    if op in _ELEMENTS_OPS:
        a = node.attributes.get_int("axis", 0)
        r = _rank(data)
        if r is not None and not -r <= a < r:
            return f"axis {a} is out of range for rank {r} (valid: [{-r}, {r - 1}])"
        di, du = known_dims(indices), known_dims(updates)
        if (
            di is not None
            and du is not None
            and (
                len(di) != len(du)
                or any(
                    i is not None and u is not None and i != u for i, u in zip(di, du)
                )
            )
        ):
            return f"indices dimensions {_show(di)} and updates dimensions {_show(du)} differ (they must be equal)"
        if di is not None and r is not None and len(di) != r:
            return (
                f"indices have rank {len(di)}, the data rank {r} (they must be equal)"
            )
        dd = known_dims(data)
        if di is not None and dd is not None and len(di) == len(dd):
            # ORT's kernel (cpu/tensor/scatter.cc): "Indices dim=… at pos=… is greater than
            # input dim=…" off the axis, at run time; the lowering would write other rows
            for d, (i, n) in enumerate(zip(di, dd)):
                if d != a % len(dd) and i is not None and n is not None and i > n:
                    return f"indices dimension {d} is {i}, larger than the data's {n} (off the axis it may not be)"
    elif op == "ScatterND":
        dd, di, du = known_dims(data), known_dims(indices), known_dims(updates)
        if dd is None or di is None or du is None or not di or di[-1] is None:
            return None
        q = di[-1]
        if q > len(dd):
            return f"indices' last dimension {q} is larger than the data rank {len(dd)}"
        want = di[:-1] + dd[q:]
        if len(want) != len(du) or any(
            w is not None and u is not None and w != u for w, u in zip(want, du)
        ):
            return f"updates dimensions {_show(du)} differ from indices.shape[:-1] + data.shape[{q}:] = {_show(want)}"
    return None


def _show(dims: list) -> str:
    return "[" + ", ".join("?" if d is None else str(d) for d in dims) + "]"
