"""Split numpy work over the machine's cores.

numpy releases the GIL inside its loops, so a few threads each working on a disjoint slice
run truly in parallel. ONNX Runtime's own CPU kernels use every core; without this a Python
fallback could never come close to them.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

#: Below this many elements per call, a thread hand-off costs more than it saves.
MIN_PARALLEL_ELEMENTS = 1 << 16

_POOL: ThreadPoolExecutor | None = None


def workers() -> int:
    return max(1, min(8, os.cpu_count() or 1))


def _pool() -> ThreadPoolExecutor:
    global _POOL
    if _POOL is None:
        _POOL = ThreadPoolExecutor(
            max_workers=workers(), thread_name_prefix="ort_dml_ops"
        )
    return _POOL


def run_split(work: Callable[[slice], None], length: int, total_elements: int) -> None:
    """Call `work(slice)` over disjoint slices covering range(length), in parallel if worth it."""
    n = min(workers(), length)
    if n <= 1 or total_elements < MIN_PARALLEL_ELEMENTS:
        work(slice(0, length))
        return
    bounds = [length * i // n for i in range(n + 1)]
    slices = [slice(bounds[i], bounds[i + 1]) for i in range(n)]
    # The calling thread takes the first slice itself; errors surface from .result().
    futures = [_pool().submit(work, s) for s in slices[1:]]
    work(slices[0])
    for f in futures:
        f.result()
