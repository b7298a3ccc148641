"""Interleaved timing: every variant runs once per round, rounds repeat, medians compared.

All variants of a case see the same machine state (load from other jobs, thermal state), so
their ratio is meaningful even on a shared machine where absolute times drift.

Every session timed this way must be built with `quiet_session_options()`: by default an ORT
session's intra-op threads spin for a while after each run, so with sessions interleaved the
idle ones steal cores from the one being timed (on 2 cores native CumProd ran 6x slower).
"""

from __future__ import annotations

import time

import numpy as np
import onnxruntime as ort


def interleaved(
    fns: dict,
    reps: int,
    *,
    budget_s: float | None = None,
    min_reps: int = 3,
    first_s: dict | None = None,
) -> dict:
    """Median seconds per call of each callable in `fns`, over up to `reps` interleaved rounds.

    With `budget_s` (and `first_s`, the seconds of one warm-up call per variant), each variant
    gets its share of the budget: a variant whose calls take seconds runs in the first rounds
    only (at least once), the cheap ones in every round (at least min(min_reps, reps) times)."""
    counts = {k: reps for k in fns}
    if budget_s is not None and first_s:
        share = budget_s / max(len(fns), 1)
        for k in fns:
            t = max(first_s.get(k, 0.0), 1e-9)
            n = min(reps, max(1, int(share / t)))
            counts[k] = max(n, min(min_reps, reps)) if t * min_reps <= 2 * share else n
    times: dict[str, list[float]] = {k: [] for k in fns}
    for r in range(max(counts.values(), default=0)):
        for name, fn in fns.items():
            if r < counts[name]:
                t0 = time.perf_counter()
                fn()
                times[name].append(time.perf_counter() - t0)
    return {
        k: {"median_s": float(np.median(v)), "reps": len(v), "min_s": float(np.min(v))}
        for k, v in times.items()
    }


def quiet_session_options(**attrs) -> ort.SessionOptions:
    """SessionOptions whose thread pools sleep between runs (see the module docstring)."""
    so = ort.SessionOptions()
    so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    so.add_session_config_entry("session.inter_op.allow_spinning", "0")
    for k, v in attrs.items():
        setattr(so, k, v)
    return so


def once(fn):
    """(result, seconds) of one call."""
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0
