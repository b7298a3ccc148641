"""What the converter's steps share: the graph walk, the model's names, one-line errors."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import onnx_ir as ir


def walk_graphs(model: ir.Model, main_opset: int) -> Iterator[tuple[Any, str, int]]:
    def walk(graph, where):
        yield graph, where, main_opset
        for node in list(graph):
            attributes = node.attributes
            if not attributes:  # most nodes: no view of an empty dict to build
                continue
            for attr in attributes.values():
                if attr.type == ir.AttributeType.GRAPH:
                    yield from walk(
                        attr.value, f"{where}/{node.name or node.op_type}.{attr.name}"
                    )
                elif attr.type == ir.AttributeType.GRAPHS:
                    for i, g in enumerate(attr.value):
                        yield from walk(
                            g, f"{where}/{node.name or node.op_type}.{attr.name}[{i}]"
                        )

    yield from walk(model.graph, "main")
    for func in model.functions.values():
        # ORT inlines functions under the model's opset (DESIGN.md), so emit for that opset
        fopset = main_opset or func.opset_imports.get("", 0)
        yield func, f"function {func.domain}::{func.name}", fopset


def all_names(model: ir.Model) -> set[str]:
    names: set[str] = set()
    for graph, _, _ in walk_graphs(model, 0):
        for v in getattr(graph, "inputs", []):
            if v.name:
                names.add(v.name)
        for v in getattr(graph, "initializers", {}) or {}:
            names.add(v)
        for node in graph:
            if node.name:
                names.add(node.name)
            for v in node.outputs:
                if v.name:
                    names.add(v.name)
    return names


def serde_reason(exc: BaseException) -> str:
    """The innermost cause's first line (onnx_ir wraps the reason in SerdeErrors)."""
    inner: BaseException | None = exc
    while inner is not None:
        exc, inner = inner, inner.__cause__ or inner.__context__
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def known_dims(v: ir.Value | None) -> list | None:
    """v's dims, None where symbolic; None when v or its rank is unknown."""
    if v is None or v.shape is None:
        return None
    return [d if isinstance(d, int) else None for d in v.shape]
