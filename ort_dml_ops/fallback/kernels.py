"""Bodies of the Python fallback ops: the reference kernels, run in place on ORT's input copy.

onnxruntime-extensions hands each call a fresh, writable, C-contiguous copy of every input,
so the kernels compute in that buffer instead of allocating another. float16 and bfloat16
arrive as float32 (the library cannot carry them); `compute` names the real type, and the
kernel computes in it, so every step rounds exactly as a native kernel in that type would.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

from ..ops import cumprod, cumsum, scatter_elements

_COMPUTE_TYPES = {"": None, "float16": np.float16, "bfloat16": ml_dtypes.bfloat16}


def _in_compute_type(x: np.ndarray, compute: str) -> np.ndarray:
    dtype = _COMPUTE_TYPES[compute]
    return (
        x if dtype is None else x.astype(dtype)
    )  # exact: the values came from that type


def _back(result: np.ndarray, like: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(result, dtype=like.dtype)


def scan_kernel(op: str):
    scan = {"CumSum": cumsum, "CumProd": cumprod}[op]

    # `session` is consumed by our hook; accepted here too so the kernels still work if another
    # library re-installs the stock hook (then errors abort, as for every PyOp).
    def kernel(x, axis, exclusive=0, reverse=0, compute="", session=""):
        work = _in_compute_type(x, compute)
        return _back(scan(work, axis, int(exclusive), int(reverse), inplace=True), x)

    kernel.__name__ = f"{op.lower()}_fallback"
    return kernel


def scatter_kernel(
    data, indices, updates, axis=0, reduction="none", compute="", session=""
):
    work = _in_compute_type(data, compute)
    result = scatter_elements(
        work,
        indices,
        _in_compute_type(updates, compute),
        int(axis),
        reduction,
        inplace=True,
    )
    return _back(result, data)
