"""ScatterElements (ONNX 11/13/16/18): write or reduce `updates` into a copy of `data`.

Matches ONNX Runtime's CPU kernel, which applies the updates one by one in the C order of
`indices`:
- "none": for duplicate indices the last update wins;
- "add" / "mul": accumulated in that order, in the data type (integers wrap around);
- "max" / "min": each step keeps the current value only if it compares strictly greater
  (max) or smaller (min) than the update, so any comparison with NaN takes the update:
  a NaN update replaces the value, and the next update replaces the NaN.
Negative indices count from the end of the axis; an index outside [-n, n-1] raises
ScatterIndexError naming the index, the axis and the valid range.
"""

from __future__ import annotations

import numpy as np

REDUCTIONS = ("none", "add", "mul", "max", "min")
_OP = "ScatterElements"


class ScatterIndexError(IndexError):
    """An index outside the valid range of its axis."""


def scatter_elements(
    data,
    indices,
    updates,
    axis: int = 0,
    reduction: str = "none",
    *,
    inplace: bool = False,
) -> np.ndarray:
    """ONNX ScatterElements. With inplace=True a C-contiguous writable `data` holds the result."""
    data, indices, updates = np.asarray(data), np.asarray(indices), np.asarray(updates)
    axis = _validate(data, indices, updates, axis, reduction)
    out = (
        data
        if inplace and data.flags.c_contiguous and data.flags.writeable
        else np.array(data, order="C", copy=True)
    )
    if indices.size == 0:
        return out
    flat = out.reshape(-1)
    targets = _flat_targets(indices, data.shape, axis)
    values = updates.reshape(-1)
    with np.errstate(
        all="ignore"
    ):  # integer wrap-around and IEEE specials are the semantics
        _apply(flat, targets, values, reduction)
    return out


def _apply(flat, targets, values, reduction) -> None:
    if reduction == "none":
        flat[targets] = (
            values  # numpy assigns repeated indices in order: the last one wins
        )
    elif reduction == "add":
        np.add.at(flat, targets, values)
    elif reduction == "mul":
        np.multiply.at(flat, targets, values)
    else:
        _max_min_at(
            flat, targets, values, np.maximum if reduction == "max" else np.minimum
        )


def _validate(data, indices, updates, axis, reduction) -> int:
    if reduction not in REDUCTIONS:
        raise ValueError(
            f"{_OP}: unknown reduction {reduction!r} (expected one of {', '.join(REDUCTIONS)})"
        )
    if indices.dtype not in (np.int32, np.int64):
        raise TypeError(f"{_OP}: indices must be int32 or int64, got {indices.dtype}")
    if updates.dtype != data.dtype:
        raise TypeError(
            f"{_OP}: updates type {updates.dtype} differs from data type {data.dtype}"
        )
    r = data.ndim
    if r == 0:
        raise ValueError(f"{_OP}: data must have rank >= 1")
    if indices.ndim != r or updates.shape != indices.shape:
        raise ValueError(
            f"{_OP}: indices {list(indices.shape)} and updates {list(updates.shape)} must have one shape, of rank {r}"
        )
    if not -r <= axis < r:
        raise ValueError(
            f"{_OP}: axis {axis} is out of range for rank {r} (valid: [{-r}, {r - 1}])"
        )
    axis %= r
    for d in range(r):
        if d != axis and indices.shape[d] > data.shape[d]:
            raise ValueError(
                f"{_OP}: indices dimension {d} is {indices.shape[d]}, larger than data's {data.shape[d]}"
            )
    return axis


def _flat_targets(indices: np.ndarray, shape: tuple, axis: int) -> np.ndarray:
    """Flat position in `data` of every update, in the C order of `indices`."""
    n = shape[axis]
    lo, hi = int(indices.min()), int(indices.max())
    if lo < -n or hi >= n:
        bad = (indices < -n) | (indices >= n)
        first = int(indices[bad].flat[0])
        raise ScatterIndexError(
            f"{_OP}: index {first} is out of range for axis {axis} of size {n} (valid: [{-n}, {n - 1}])"
        )
    idx = indices.astype(np.int64, copy=False)
    if lo < 0:
        idx = np.where(idx < 0, idx + n, idx)
    strides = np.cumprod((shape[1:] + (1,))[::-1])[
        ::-1
    ]  # element strides of C-contiguous data
    # Offset of every update's position on the other axes: a small broadcast sum of aranges.
    base = np.zeros((1,) * len(shape), np.int64)
    coord: np.ndarray
    for d, coord in enumerate(np.indices(indices.shape, sparse=True)):
        if d != axis and indices.shape[d] > 1:
            base = base + coord.astype(np.int64) * int(strides[d])
    flat = idx * int(strides[axis]) if strides[axis] != 1 else idx
    return (flat + base if base.size > 1 or base.any() else flat).reshape(-1)


def _max_min_at(
    flat: np.ndarray, targets: np.ndarray, values: np.ndarray, ufunc
) -> None:
    is_float = flat.dtype.kind == "f" or flat.dtype.name == "bfloat16"
    if not is_float:
        ufunc.at(flat, targets, values)
        return
    if np.isnan(values).any() or np.isnan(flat[targets]).any():
        # A NaN (in data or an update) is replaced by whatever comes next at its position; so
        # only the updates after a position's last NaN count, and a position whose last item is
        # NaN is NaN.
        order = np.arange(targets.size)
        last_nan = np.where(
            np.isnan(flat), -1, -2
        )  # -1: data itself is NaN; -2: no NaN yet
        is_nan = np.isnan(values)
        np.maximum.at(last_nan, targets[is_nan], order[is_nan])
        counts = order > last_nan[targets]
        restart = np.unique(targets[last_nan[targets] >= -1])
        has_valid = np.zeros(flat.size, bool)
        has_valid[targets[counts]] = True
        start = -np.inf if ufunc is np.maximum else np.inf
        flat[restart] = np.where(has_valid[restart], start, np.nan).astype(flat.dtype)
        targets, values = targets[counts], values[counts]
    ufunc.at(flat, targets, values)
    _zero_ties_go_to_the_later(flat, targets, values)


def _zero_ties_go_to_the_later(
    flat: np.ndarray, targets: np.ndarray, values: np.ndarray
) -> None:
    """+0.0 and -0.0 compare equal, and ORT keeps the current value only when it is strictly
    greater (smaller), so where the result is a zero it is the last zero item at that position.
    np.maximum / np.minimum may return either zero (it depends on the dtype's SIMD path:
    float16 kept the earlier one where ORT takes the later, found by the property test)."""
    zero = values == 0
    if not zero.any():
        return
    t, v = targets[zero][::-1], values[zero][::-1]
    _, first = np.unique(
        t, return_index=True
    )  # first in reversed order = last in order
    t, v = t[first], v[first]
    won = flat[t] == 0
    flat[t[won]] = v[won]
