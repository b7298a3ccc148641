"""Since-version resolution and type-string binding, from the op schemas.

Mirrors how ONNX Runtime resolves a node (``core/graph/graph.cc`` ``Graph::VerifyNodeAndOpMatch``):
the node's schema is the newest one of its op whose since-version is <= the model's opset import
for the node's domain, and the node's since-version is that schema's. Nodes inside model-local
functions and subgraphs are resolved with the *model's* opset imports (``core/graph/model.cc``,
function inlining), not the function's own.

ONNX ops come from ``onnx.defs``; ``com.microsoft`` and other ORT contrib ops from the installed
onnxruntime's ``get_all_operator_schema()``. The two libraries' schema objects differ: ORT's
pybind ``FormalParameter`` (``onnxruntime/python/onnxruntime_pybind_schema.cc``) spells the
type string ``typeStr`` where onnx spells it ``type_str``, and its ``option`` is ORT's own enum,
which never compares equal to onnx's; ``_type_str`` and ``_is_variadic`` read either.
"""

from __future__ import annotations

from functools import cache, lru_cache

import onnx
import onnx.defs

ONNX_DOMAINS = ("", "ai.onnx")


def norm_domain(domain: str) -> str:
    return "" if domain in ONNX_DOMAINS else domain


@lru_cache(maxsize=1)
def _ort_schemas() -> dict:
    out: dict = {}
    try:
        from onnxruntime.capi import _pybind_state as C

        for s in C.get_all_operator_schema():
            if s.domain in ONNX_DOMAINS or s.domain == "ai.onnx.ml":
                continue
            out.setdefault((s.domain, s.name), []).append(s)
    except Exception:  # noqa: BLE001 # pragma: no cover - builds without schema export
        pass
    for v in out.values():
        v.sort(key=lambda s: s.since_version)
    return out


@cache
def get_schema(op: str, domain: str, opset: int | None):
    """The schema a node of (domain, op) resolves to under `opset`, or None."""
    domain = norm_domain(domain)
    if opset is None:
        return None
    try:
        return onnx.defs.get_schema(op, opset, domain)
    except onnx.defs.SchemaError:
        pass
    best = None
    for s in _ort_schemas().get((domain, op), ()):
        if s.since_version <= opset:
            best = s
    return best


def _type_str(param) -> str:
    """A formal parameter's type string, from onnx's (``type_str``) or ORT's (``typeStr``) schema."""
    return param.type_str if hasattr(param, "type_str") else param.typeStr


def _is_variadic(params) -> bool:
    """Whether the last formal parameter is variadic; compared by the enum member's name, which
    onnx's and ORT's ``FormalParameterOption`` share."""
    return bool(params) and params[-1].option.name == "Variadic"


@cache
def bindings(op: str, domain: str, opset: int | None):
    """((input type_strs), variadic_last_input, (output type_strs), variadic_last_output)."""
    s = get_schema(op, domain, opset)
    if s is None:
        return None
    ins = tuple(_type_str(p) for p in s.inputs)
    outs = tuple(_type_str(p) for p in s.outputs)
    return ins, _is_variadic(s.inputs), outs, _is_variadic(s.outputs)


def type_resolver(node_inputs, node_outputs, bind, value_type):
    """A function constraint-name -> type string of the first present argument bound to it.

    Mirrors kernel_registry.cc MatchKernelDefTypes: formal inputs first, then outputs; the first
    *present* argument decides; a variadic formal parameter is checked by its first actual arg.
    """
    ins, _, outs, _ = bind

    def actual(
        names, i
    ):  # a variadic last formal is checked by its first actual argument
        return names[i] if i < len(names) else ""

    def resolve(constraint: str):
        for names, formals in ((node_inputs, ins), (node_outputs, outs)):
            for i, ts in enumerate(formals):
                if ts != constraint:
                    continue
                name = actual(names, i)
                if name:
                    return value_type(name)
        return None

    return resolve


@cache
def allowed_types(op: str, domain: str, opset: int | None) -> dict:
    """Schema type constraints: name -> frozenset of allowed type strings."""
    s = get_schema(op, domain, opset)
    if s is None:
        return {}
    return {
        c.type_param_str: frozenset(c.allowed_type_strs) for c in s.type_constraints
    }
