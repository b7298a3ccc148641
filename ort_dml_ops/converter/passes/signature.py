"""What a family node's decisions depend on, as hashable keys: nodes with equal keys get the same
placement, rule checks and costs, so the rewrite pass works each out once per key.

A model repeats a few kinds of node many times (a 10k-node chain holds 4,286 CumSum / scatter
nodes of four kinds); asking `Target.explain`, every rule's `check` and the cost model per node
was most of what `convert --strategy native` cost. `node_key` holds everything those read:
what `Target.explain` reads (the node's domain, op type, attributes, which inputs are given,
the element types of its inputs and outputs: targets/target.py, which also remembers its own
decisions per signature), and what the rules' `check` and `rules/cost.py` read besides —
shapes (static dims and the rank; symbolic dims kept by name), whether a value has a type, and
the content of constant inputs (an axis). A constant input over `SMALL_CONST` elements makes the
node unkeyed (None): it is then decided on its own, never hashed.

Graph attributes (a custom op's body) also make a node unkeyed.
"""

from __future__ import annotations

import onnx_ir as ir

from ..rules._base import const_array, const_tensor

#: largest constant input (elements) whose content goes into a key
SMALL_CONST = 64

_SCALAR_ATTRS = (
    ir.AttributeType.INT,
    ir.AttributeType.FLOAT,
    ir.AttributeType.STRING,
)
_LIST_ATTRS = (
    ir.AttributeType.INTS,
    ir.AttributeType.FLOATS,
    ir.AttributeType.STRINGS,
)


class _Unkeyed(Exception):
    """The node holds something the keys do not capture."""


def node_key(
    node: ir.Node,
    target: str,
    opsets: tuple,
    opset: int,
    extra: tuple,
    consts: dict | None = None,
):
    """Key of every decision the rewrite pass makes for `node` before rewriting it, or None.
    `extra`: the context's other settings the rules may read (check_indices, io width);
    `consts`: value -> its constant's key, kept across calls (many nodes read one axis)."""
    consts = {} if consts is None else consts
    try:
        return (
            target,
            opsets,
            opset,
            extra,
            node.domain,
            node.op_type,
            _attrs(node),
            tuple(_value(v, consts) for v in node.inputs),
            tuple(_value(v, consts) for v in node.outputs),
        )
    except _Unkeyed:
        return None


def _attrs(node: ir.Node) -> tuple:
    out = []
    for name, a in node.attributes.items():
        if a.type in _SCALAR_ATTRS:
            out.append((name, a.type, a.value))
        elif a.type in _LIST_ATTRS:
            out.append((name, a.type, tuple(a.value)))
        else:
            raise _Unkeyed
    return tuple(sorted(out, key=lambda t: t[0]))


def _typed(v: ir.Value | None):
    if v is None:
        return None
    return (bool(v.name), type(v.type), v.dtype if v.type is not None else None)


def _value(v: ir.Value | None, consts: dict):
    if v is None:
        return None
    shape = (
        None
        if v.shape is None
        else tuple(d if isinstance(d, int) else ("symbolic", str(d)) for d in v.shape)
    )
    # the Value itself is the cache key (identity hash), so it stays alive: no id is reused
    const = consts.get(v)
    if const is None:
        const = consts[v] = _const(v)
    return (*_typed(v), shape, const)


def _const(v: ir.Value):
    """The content of a constant input (as `rules._base.const_array` reads it), () if none."""
    t = const_tensor(v)
    if t is None:
        return ()
    size = getattr(t, "size", None)
    if not isinstance(size, int) or size > SMALL_CONST:
        raise _Unkeyed
    arr = const_array(v)
    return () if arr is None else (arr.dtype.str, arr.shape, arr.tobytes())
