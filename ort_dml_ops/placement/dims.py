"""Dim equality as ONNX Runtime's optimizers test it: two dims are equal when both have the same
value or both the same symbolic name (``TensorShapeProto_Dimension`` compared in
``TensorShapeProto_Dimension``'s operator==, as MatMulAddFusion and ORT 1.31's
ReshapeFusion compare dims). `shapes` holds each value's dims
(None where unknown), `symbols` the names of the values that have any."""

from __future__ import annotations


def same_dim(shapes: dict, symbols: dict, a: str, i: int, b: str, j: int) -> bool:
    x, y = shapes[a][i], shapes[b][j]
    if x is not None or y is not None:
        return x is not None and x == y
    na, nb = symbols.get(a), symbols.get(b)
    return na is not None and nb is not None and na[i] is not None and na[i] == nb[j]
