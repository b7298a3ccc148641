"""Many fallback sessions used from several threads at once give correct results.

onnxruntime-extensions calls the Python kernels with the GIL held; the project's hook keeps
per-session error lists under a lock (fallback/registry.py). Here 8 threads drive 6 sessions
(CumProd, CumSum, ScatterElements; several dtypes; one session shared by all threads, others
per thread) with different inputs, and every output is checked against the reference
kernels; an error from one session (a bad index) must reach that session's caller only.
The cost of the GIL is measured by tools/bench_concurrency.py (docs/performance.md).
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from onnxruntime.capi.onnxruntime_pybind11_state import InvalidArgument

import ort_dml_ops
from ort_dml_ops import DOMAIN, ops
from tests.bad_inputs.corpus import cumsum_model, scatter_model

THREADS = 8
ROUNDS = 40


def _sessions():
    cp = ort_dml_ops.InferenceSession(
        cumsum_model(domain=DOMAIN, op="CumProd"), providers=["CPUExecutionProvider"]
    )
    cs = ort_dml_ops.InferenceSession(
        cumsum_model(domain=DOMAIN, op="CumSum"), providers=["CPUExecutionProvider"]
    )
    sc = ort_dml_ops.InferenceSession(
        scatter_model(domain=DOMAIN, dshape=("A", "B"), ishape=("I", "J")),
        providers=["CPUExecutionProvider"],
    )
    return cp, cs, sc


def test_threads_share_and_own_fallback_sessions():
    shared = _sessions()
    barrier = threading.Barrier(THREADS)

    def worker(t: int) -> int:
        own = _sessions()
        rng = np.random.default_rng(t)
        barrier.wait()
        checked = 0
        for r in range(ROUNDS):
            cp, cs, sc = shared if (r + t) % 2 else own
            x = rng.uniform(0.5, 1.5, (int(rng.integers(1, 300)), 4)).astype(np.float32)
            axis = np.array(int(rng.integers(0, 2)), np.int64)
            assert np.array_equal(
                cp.run(None, {"x": x, "axis": axis})[0], ops.cumprod(x, int(axis))
            )
            assert np.array_equal(
                cs.run(None, {"x": x, "axis": axis})[0], ops.cumsum(x, int(axis))
            )
            data = rng.standard_normal((4, 5)).astype(np.float32)
            idx = rng.integers(-4, 4, (int(rng.integers(1, 50)), 5))
            upd = rng.standard_normal(idx.shape).astype(np.float32)
            if r % 10 == 3:  # an error in this call must reach this caller, and only it
                bad = idx.copy()
                bad[0, 0] = 4 + t
                with pytest.raises(
                    InvalidArgument, match=f"index {4 + t} is out of range"
                ):
                    sc.run(None, {"data": data, "indices": bad, "updates": upd})
            got = sc.run(None, {"data": data, "indices": idx, "updates": upd})[0]
            assert np.array_equal(got, ops.scatter_elements(data, idx, upd, 0, "add"))
            checked += 3
        return checked

    with ThreadPoolExecutor(THREADS) as pool:
        done = sum(pool.map(worker, range(THREADS)))
    assert done == THREADS * ROUNDS * 3


def test_errors_stay_with_their_caller_on_one_shared_session():
    """Threads share one session; every other call has a bad index. Each bad call must raise
    in its own thread, and no good call may raise (or lose) another thread's error."""
    sc = _sessions()[2]
    barrier = threading.Barrier(THREADS)

    def worker(t: int):
        rng = np.random.default_rng(100 + t)
        barrier.wait()
        wrong = []
        for r in range(ROUNDS * 2):
            data = np.zeros((4, 5), np.float32)
            idx = rng.integers(-4, 4, (int(rng.integers(1, 2000)), 5))
            bad = r % 2 == 0
            if bad:
                idx[-1, -1] = 4 + t
            try:
                got = sc.run(
                    None,
                    {
                        "data": data,
                        "indices": idx,
                        "updates": np.ones(idx.shape, np.float32),
                    },
                )[0]
                if bad:
                    wrong.append(f"round {r}: a bad index did not raise")
                elif not np.array_equal(
                    got,
                    ops.scatter_elements(
                        data, idx, np.ones(idx.shape, np.float32), 0, "add"
                    ),
                ):
                    wrong.append(f"round {r}: wrong result")
            except InvalidArgument as exc:
                if (
                    not bad
                    or f"index {4 + t} " not in str(exc)
                    or str(exc).count("out of range") != 1
                ):
                    wrong.append(f"round {r}: {exc}")
        return wrong

    with ThreadPoolExecutor(THREADS) as pool:
        problems = [p for w in pool.map(worker, range(THREADS)) for p in w]
    assert not problems, f"{len(problems)} problems, e.g. {problems[:3]}"
