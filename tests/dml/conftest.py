"""DML lane tests: run on the real DirectML EP (onnxruntime-directml under Wine).

Skipped, with the reason, when the lane is not set up (`make dml-lane`). Each test module lists
its cases in `LANE_CASES` (a list of dml_lane.driver.Case); the module-scoped `lane_results`
fixture runs them all in ONE `run_cases` call (Wine start-up is slow), then each parametrized
test asserts on its own case's result. DML_FULL=1 widens the corpus (see test_corpus.py).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

# The lane's driver and corpus live in tools/dml_lane/ (not in the installed package). The tests
# run the checkout's driver, also through `ort-dml-ops check`, not the copy installed in the lane.
_TOOLS = Path(__file__).resolve().parents[2] / "tools"
sys.path.insert(0, str(_TOOLS))
os.environ.setdefault("DML_LANE_DRIVER", str(_TOOLS / "dml_lane"))

from dml_lane.driver import lane_available, run_cases

_TIMINGS: list[tuple[str, int, float]] = []


def sessions_per_process() -> int:
    """DML sessions per guest process: each keeps ~0.5 GB of shared memory until its process
    exits (VKD3D_CONFIG empty, which fused graphs need), so 4 bound a batch to ~2 GB."""
    return int(os.environ.get("DML_LANE_SESSIONS", "4"))


@pytest.fixture(scope="session")
def lane_ready():
    ok, why = lane_available()
    if not ok:
        pytest.skip(f"DML lane unavailable: {why}")
    return True


@pytest.fixture(scope="module")
def lane_results(request, lane_ready):
    """{case name: CaseResult} for every case in the module's LANE_CASES, run in one batch."""
    cases = list(request.module.LANE_CASES)
    t0 = time.perf_counter()
    results = run_cases(cases, sessions_per_process=sessions_per_process())
    _TIMINGS.append((request.module.__name__, len(cases), time.perf_counter() - t0))
    return {c.name: r for c, r in zip(cases, results)}


def pytest_terminal_summary(terminalreporter):
    if _TIMINGS:
        terminalreporter.write_sep("-", "DML lane batches")
        for mod, n, secs in _TIMINGS:
            terminalreporter.write_line(
                f"{mod}: {n} cases on the real DML EP in {secs:.1f}s"
            )
