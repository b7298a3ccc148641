"""CumSum and CumProd (ONNX CumSum-14, CumProd-26): inclusive/exclusive, forward/reverse.

Integers wrap around on overflow, as ONNX Runtime's CPU kernels do (two's complement);
every step rounds to the input dtype (float16 and bfloat16 included), as a sequential
scan in that type does. NaN and ±inf propagate by IEEE rules (0 * inf = NaN).
"""

from __future__ import annotations

import numpy as np

from ._parallel import run_split
from .axis import normalize_axis

#: Loop over the scan axis with one vectorized op per step when the rows are at least this
#: long; numpy's accumulate along a non-last axis is 10-40x slower than that loop.
_ROW_LOOP_MIN_INNER = 32


def cumsum(
    x, axis, exclusive: int = 0, reverse: int = 0, *, inplace: bool = False
) -> np.ndarray:
    """ONNX CumSum. With inplace=True, `x` (a writable C-contiguous array) holds the result."""
    return _scan(np.add, 0, "CumSum", x, axis, exclusive, reverse, inplace)


def cumprod(
    x, axis, exclusive: int = 0, reverse: int = 0, *, inplace: bool = False
) -> np.ndarray:
    """ONNX CumProd-26 (and the project's DOMAIN::CumProd)."""
    return _scan(np.multiply, 1, "CumProd", x, axis, exclusive, reverse, inplace)


def _scan(ufunc, identity, op, x, axis, exclusive, reverse, inplace) -> np.ndarray:
    x = np.asarray(x)
    if x.dtype.kind not in "iuf" and x.dtype.name != "bfloat16":
        raise TypeError(f"{op}: unsupported element type {x.dtype}")
    ax = normalize_axis(axis, x.ndim, op)
    out = (
        x
        if inplace and x.flags.c_contiguous and x.flags.writeable
        else np.array(x, order="C", copy=True)
    )
    n = out.shape[ax]
    if out.size == 0 or (n == 1 and not exclusive):
        return out
    outer = int(np.prod(out.shape[:ax], dtype=np.int64))
    inner = int(np.prod(out.shape[ax + 1 :], dtype=np.int64))
    view = out.reshape(outer, n, inner)
    if reverse:
        view = view[:, ::-1, :]
    if exclusive:
        # exclusive[i] = inclusive[i-1]: shift the values one step along the axis first.
        view[:, 1:, :] = view[:, :-1, :].copy()
        view[:, 0, :] = identity
    with np.errstate(
        all="ignore"
    ):  # overflow, inf - inf and 0 * inf follow IEEE / wrap on purpose
        _inclusive_scan(ufunc, view, outer, n, inner)
    return out


def _inclusive_scan(ufunc, view: np.ndarray, outer: int, n: int, inner: int) -> None:
    """In-place inclusive scan of `view` (outer, n, inner) along axis 1, split over threads."""
    total = outer * n * inner
    if inner >= _ROW_LOOP_MIN_INNER:

        def rows(cols: slice) -> None:
            block = view[:, :, cols]
            for i in range(1, n):
                ufunc(block[:, i - 1, :], block[:, i, :], out=block[:, i, :])

        run_split(rows, inner, total)
    else:

        def accumulate(part: slice) -> None:
            block = view[part]
            ufunc.accumulate(block, axis=1, out=block)

        run_split(accumulate, outer, total)
