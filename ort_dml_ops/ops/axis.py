"""Read and validate the `axis` input of CumSum / CumProd."""

from __future__ import annotations

import numpy as np


def normalize_axis(axis, rank: int, op: str) -> int:
    """Return the axis in [0, rank) from an int or a 0-d / 1-element int32/int64 tensor.

    Raises ValueError naming the op and the problem (ONNX: axis in [-rank, rank-1]).
    """
    if isinstance(axis, (int, np.integer)) and not isinstance(axis, bool):
        value = int(axis)
    else:
        a = np.asarray(axis)
        if a.dtype not in (np.int32, np.int64):
            raise ValueError(
                f"{op}: axis must be an int32 or int64 tensor, got {a.dtype}"
            )
        if a.size != 1 or a.ndim > 1:
            raise ValueError(
                f"{op}: axis must be a scalar or a 1-element tensor, got shape {list(a.shape)}"
            )
        value = int(a.reshape(()))
    if rank == 0:
        raise ValueError(f"{op}: input must have rank >= 1, got a scalar")
    if not -rank <= value < rank:
        raise ValueError(
            f"{op}: axis {value} is out of range for rank {rank} (valid: [{-rank}, {rank - 1}])"
        )
    return value % rank
