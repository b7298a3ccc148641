"""Sizes the user knows and the graph does not: `convert --input-shape NAME=DIMS` (API:
``convert(..., input_shapes={"x": (8, 1024)})``).

`auto` weighs a lowering against ONNX Runtime's CPU kernel with the sizes of the node's tensors
(rules/cost.py, DeviceModel); where the graph leaves them symbolic (a torch.onnx export with
dynamic axes), a hint gives them. The hints only feed that estimate: the converted model keeps
the input's own declarations. They are propagated through the graph by onnx's shape inference
on a copy of the model whose inputs take the hinted dims (data propagation on, so Shape →
Reshape chains resolve as well).
"""

from __future__ import annotations

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


def size_hints(
    proto: onnx.ModelProto, input_shapes: dict[str, tuple[int, ...]]
) -> dict[str, tuple[int, ...]]:
    """Every value whose dims are all known once the hinted inputs take `input_shapes`: name →
    dims. A name that is not a graph input, or dims that contradict the input's declaration,
    is a UserError (one line)."""
    if not input_shapes:
        return {}
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
    del graph.value_info[:]
    try:
        inferred = onnx.shape_inference.infer_shapes(hinted, data_prop=True)
    except Exception:  # noqa: BLE001 - inference stops where onnx cannot follow: hints stay partial
        inferred = hinted
    out: dict[str, tuple[int, ...]] = {}
    g = inferred.graph
    for vi in [*g.input, *g.value_info, *g.output]:
        tensor = vi.type.tensor_type
        if not tensor.HasField("shape"):
            continue
        dims = tensor.shape.dim
        if all(d.HasField("dim_value") for d in dims):
            out[vi.name] = tuple(d.dim_value for d in dims)
    return out


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
