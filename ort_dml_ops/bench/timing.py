"""Interleaved timing: every variant runs once per round, rounds repeat, medians compared.

All variants of a case see the same machine state (load from other jobs, thermal state), so
their ratio is meaningful even on a shared machine where absolute times drift.
"""

from __future__ import annotations

import time

import numpy as np


def interleaved(fns: dict, reps: int, *, budget_s: float | None = None, min_reps: int = 3,
                first_s: dict | None = None) -> dict:
    """Median seconds per call of each callable in `fns` over `reps` interleaved rounds.

    With `budget_s`, the rounds are cut to what fits (at least min(min_reps, reps)), judged
    from `first_s` (seconds of one warm-up call per variant)."""
    if budget_s is not None and first_s:
        per_round = max(sum(first_s.values()), 1e-9)
        reps = max(min(min_reps, reps), min(reps, int(budget_s / per_round)))
    times = {k: [] for k in fns}
    for _ in range(reps):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t0)
    return {k: {"median_s": float(np.median(v)), "reps": len(v), "min_s": float(np.min(v))} for k, v in times.items()}


def once(fn):
    """(result, seconds) of one call."""
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0
