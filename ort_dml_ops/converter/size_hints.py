"""Sizes the user knows and the graph does not: `convert --input-shape NAME=DIMS` (API:
``convert(..., input_shapes={"x": (8, 1024)})``).

`auto` weighs a lowering against ONNX Runtime's CPU kernel with the sizes of the node's tensors
(rules/cost.py, DeviceModel); where the graph leaves them symbolic (a torch.onnx export with
dynamic axes), a hint gives them. The hints only feed that estimate: the converted model keeps
the input's own declarations. They are propagated through the graph by onnx's shape inference
on a copy of the model whose inputs take the hinted dims (data propagation on, so Shape →
Reshape chains resolve as well), then, where a scatter's sizes are still open, by ONNX Runtime's
symbolic shape inference, which also bounds the counts only the data decides (`known_sizes`).
"""

from __future__ import annotations

import math
import re

import onnx

from ..errors import UserError

_HINT = re.compile(r"^([^=]+)=(\d+(?:[x,]\d+)*|)$")


def parse_hint(text: str) -> tuple[str, tuple[int, ...]]:
    """'NAME=D1,D2,...' (or D1xD2; 'NAME=' for a 0-d input) → (name, dims), or a UserError."""
    match = _HINT.match(text.strip())
    if not match:
        raise UserError(
            f"--input-shape {text!r}: expected NAME=DIMS, e.g. x=8,1024 (whole numbers)"
        )
    name, dims = match.group(1), match.group(2)
    return name, tuple(int(d) for d in re.split(r"[x,]", dims)) if dims else ()


def known_sizes(
    proto: onnx.ModelProto, input_shapes: dict[str, tuple[int, ...]]
) -> tuple[dict[str, tuple[int, ...]], dict[str, tuple[int, ...]]]:
    """(exact, at_most): every value whose dims are all known once the hinted inputs take
    `input_shapes` (onnx's inference), completed where every graph input's size is known
    (declared or hinted) and a scatter's sizes are still open by ONNX Runtime's symbolic shape
    inference (onnxruntime/tools/symbolic_shape_infer.py: it follows Shape → ConstantOfShape /
    Expand / Range chains that onnx's data propagation leaves symbolic), and upper bounds for
    dims only the data decides: a NonZero's count is at most its input's size, and a dim ORT
    writes as a sum of products of such counts and whole numbers is bounded by the same sum.
    `auto` reads a bound only as the CPU path's worst case (rules/cost.py). A name that is not
    a graph input, or dims that contradict the input's declaration, is a UserError (one line)."""
    if input_shapes:
        model = _hinted(proto, input_shapes)
        exact = _onnx_sizes(model)
    else:
        model, exact = proto, {}
    if not _scatter_sizes_open(model, exact) or not _inputs_static(model):
        return exact, {}
    more, at_most = _ort_sizes(model)
    for name, dims in more.items():
        exact.setdefault(name, dims)
    return exact, {k: v for k, v in at_most.items() if k not in exact}


def _onnx_sizes(hinted: onnx.ModelProto) -> dict[str, tuple[int, ...]]:
    """name → dims of every value onnx's shape inference (data propagation on) sizes fully in
    `hinted`, whose value_info it clears first (the exporter's declarations of the inputs' old
    dims would contradict the hints; `hinted` is `_hinted`'s copy)."""
    del hinted.graph.value_info[:]
    try:
        inferred = onnx.shape_inference.infer_shapes(hinted, data_prop=True)
    except Exception:  # noqa: BLE001 - inference stops where onnx cannot follow: hints stay partial
        inferred = hinted
    out: dict[str, tuple[int, ...]] = {}
    g = inferred.graph
    for vi in [*g.input, *g.value_info, *g.output]:
        dims = _dims(vi)
        if dims is not None and all(isinstance(d, int) for d in dims):
            out[vi.name] = tuple(int(d) for d in dims)
    return out


_SCATTERS = ("ScatterElements", "ScatterND", "Scatter")


def _scatter_sizes_open(
    proto: onnx.ModelProto, exact: dict[str, tuple[int, ...]]
) -> bool:
    """Does a scatter of the main graph have data or updates whose dims are neither declared
    nor hinted?"""
    declared = {
        vi.name: _dims(vi) for vi in [*proto.graph.value_info, *proto.graph.input]
    }
    for node in proto.graph.node:
        if node.op_type not in _SCATTERS or node.domain not in ("", "ai.onnx"):
            continue
        for name in (node.input[0], node.input[-1]):
            dims = exact.get(name) or declared.get(name)
            if dims is None or not all(isinstance(d, int) for d in dims):
                return True
    return False


def _inputs_static(proto: onnx.ModelProto) -> bool:
    initializers = {t.name for t in proto.graph.initializer}
    for vi in proto.graph.input:
        if vi.name in initializers:
            continue
        dims = _dims(vi)
        if dims is None or not all(isinstance(d, int) for d in dims):
            return False
    return True


def _ort_sizes(
    proto: onnx.ModelProto,
) -> tuple[dict[str, tuple[int, ...]], dict[str, tuple[int, ...]]]:
    """(exact dims, upper bounds) from ONNX Runtime's symbolic shape inference; nothing where
    it cannot follow the graph (it raises on ops it does not know, or on dims it would have to
    guess: auto_merge off, so that no bound rests on a guess) or leaves a value unshaped."""
    import logging

    model = onnx.ModelProto()
    model.CopyFrom(proto)
    del model.graph.value_info[:]
    log = logging.getLogger("onnxruntime.tools.symbolic_shape_infer")
    level, log.level = log.level, logging.CRITICAL
    try:
        inferred = _ort_inference(model)
    except Exception:  # noqa: BLE001 - its limits are many (unknown ops, contrib domains): no sizes then
        return {}, {}
    finally:
        log.level = level
    if inferred is None:
        return {}, {}
    g = inferred.graph
    infos = {vi.name: vi for vi in [*g.input, *g.value_info, *g.output]}
    counts: dict[str, int] = {}  # a NonZero's count symbol → its input's size
    for node in g.node:
        if node.op_type != "NonZero" or node.input[0] not in infos:
            continue
        size, out = _dims(infos[node.input[0]]), infos.get(node.output[0])
        out_dims = _dims(out) if out is not None else None
        if size is None or not all(isinstance(d, int) for d in size) or not out_dims:
            continue
        if len(out_dims) == 2 and isinstance(out_dims[1], str):
            counts[out_dims[1]] = math.prod(int(d) for d in size)
    exact: dict[str, tuple[int, ...]] = {}
    at_most: dict[str, tuple[int, ...]] = {}
    for name, vi in infos.items():
        dims = _dims(vi)
        if dims is None:
            continue
        if all(isinstance(d, int) for d in dims):
            exact[name] = tuple(int(d) for d in dims)
            continue
        bounds = [d if isinstance(d, int) else _upper_bound(d, counts) for d in dims]
        if all(b is not None for b in bounds):
            at_most[name] = tuple(int(b) for b in bounds if b is not None)
    return exact, at_most


def _ort_inference(model: onnx.ModelProto) -> onnx.ModelProto | None:
    """`SymbolicShapeInference.infer_shapes` (symbolic_shape_infer.py) step by step, without its
    last step: where the inference is incomplete, that wrapper saves the half-inferred model as
    `sym_shape_infer_temp.onnx` (and its weights beside it) in the working directory before it
    raises — a file `convert` must never write. Incomplete is None here, as there."""
    from onnxruntime.tools.symbolic_shape_infer import SymbolicShapeInference, get_opset

    opset = get_opset(model)
    if not opset or opset < 7:  # the wrapper's own limit
        return None
    inference = SymbolicShapeInference(
        2**31 - 1, auto_merge=False, guess_output_rank=False, verbose=0
    )
    inference._preprocess(model)
    complete = False
    while inference.run_:
        complete = inference._infer_impl()
    inference._update_output_from_vi()
    return inference.out_mp_ if complete else None


def _upper_bound(dim: str, counts: dict[str, int]) -> int | None:
    """The largest value of `dim`, a sum of products of whole numbers and NonZero counts as
    ORT's inference writes it ("NonZero_10_o0__d1 + 7", "2*NonZero_3_o0__d1"), each count at
    its bound; None for anything else (a difference, a minimum, an unknown symbol: no bound)."""
    total = 0
    for term in dim.split(" + "):
        value = 1
        for factor in term.strip().split("*"):
            factor = factor.strip()
            if factor.isdigit():
                value *= int(factor)
            elif factor in counts:
                value *= counts[factor]
            else:
                return None
        total += value
    return total


def _dims(vi: onnx.ValueInfoProto) -> list[int | str] | None:
    """A value's dims: whole numbers where known, the dim_param (or "") where not; None
    without a shape."""
    tensor = vi.type.tensor_type
    if not vi.type.HasField("tensor_type") or not tensor.HasField("shape"):
        return None
    return [
        d.dim_value if d.HasField("dim_value") else d.dim_param
        for d in tensor.shape.dim
    ]


def _hinted(
    proto: onnx.ModelProto, input_shapes: dict[str, tuple[int, ...]]
) -> onnx.ModelProto:
    """A copy of `proto` whose hinted inputs (and every input sharing their named dims) take
    the hinted sizes; mistakes in the hints are UserErrors (one line)."""
    hinted = onnx.ModelProto()
    hinted.CopyFrom(proto)
    graph = hinted.graph
    initializers = {t.name for t in graph.initializer}
    inputs = {vi.name: vi for vi in graph.input if vi.name not in initializers}
    for name, dims in input_shapes.items():
        vi = inputs.get(name)
        if vi is None:
            known = ", ".join(sorted(inputs)) or "none"
            raise UserError(
                f"--input-shape {name}: the model has no such input (inputs: {known})"
            )
        tensor = vi.type.tensor_type
        if tensor.HasField("shape"):
            declared = tensor.shape.dim
            if len(declared) != len(dims):
                raise UserError(
                    f"--input-shape {name}: {len(dims)} dims given, the input has {len(declared)}"
                )
            for d, want in zip(declared, dims, strict=True):
                if d.HasField("dim_value") and d.dim_value != want:
                    raise UserError(
                        f"--input-shape {name}: dims {list(dims)} contradict the declared "
                        f"{[x.dim_value if x.HasField('dim_value') else x.dim_param for x in declared]}"
                    )
        tensor.ClearField("shape")
        for want in dims:
            tensor.shape.dim.add().dim_value = want
    # a named dim is one size wherever it appears (ONNX dim_param): the other inputs take it too
    named = _named_dims(proto, input_shapes)
    for vi in inputs.values():
        for d in vi.type.tensor_type.shape.dim:
            if d.HasField("dim_param") and d.dim_param in named:
                d.dim_value = named[d.dim_param]
    return hinted


def _named_dims(
    proto: onnx.ModelProto, input_shapes: dict[str, tuple[int, ...]]
) -> dict[str, int]:
    """dim_param → size, from the hinted inputs' declarations in `proto` (the unhinted model)."""
    named: dict[str, int] = {}
    for vi in proto.graph.input:
        dims = input_shapes.get(vi.name)
        if dims is None or not vi.type.tensor_type.HasField("shape"):
            continue
        for d, size in zip(vi.type.tensor_type.shape.dim, dims, strict=False):
            if d.HasField("dim_param") and d.dim_param:
                named[d.dim_param] = size
    return named
