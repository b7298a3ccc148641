"""The whole suite's hooks: which area each test exercises, and one summary line per area.

Areas: `dml` (marked `dml`: the real DirectML EP in the Wine lane), `webgpu` (marked `webgpu`:
ONNX Runtime's WebGPU plugin EP) and `cpu` (everything else: the CPU EP, the converter, the
command line). At the end of a run the terminal summary says, per area, how many tests
passed, failed and were skipped, and why they were skipped, so that a run that exercised no
lane says so in one line ("dml (real DirectML EP, Wine lane): skipped, all 28: DML lane
unavailable: ... (run `make dml-lane`)").

Under pytest-xdist (`make test` runs with `-n auto --dist loadgroup`) every test under
tests/dml/ goes to one worker (group "dml-lane", pytest_xdist_make_scheduler below): the lane
runs one Wine session at a time behind its lock (run.sh), a DML session holds ~0.5 GB, and the
module-scoped `lane_results` fixture of tests/dml batches a module's cases into one run;
spread over workers, each worker would re-run the whole batch. The counts are read from the reports (`terminalreporter.stats`),
which the controller receives from every worker, so they hold under xdist too.
"""

from __future__ import annotations

import os
from collections import Counter

import pytest

AREAS = {
    "cpu": "CPU EP",
    "dml": "real DirectML EP, Wine lane",
    "webgpu": "WebGPU plugin EP",
}
# what sets each lane up, for the line that says a whole area was skipped
FIX = {"dml": "run `make dml-lane`", "webgpu": "run `make webgpu-lane`"}


def _area_of_item(item: pytest.Item) -> str:
    for area in ("dml", "webgpu"):
        if item.get_closest_marker(area) is not None:
            return area
    return "cpu"


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    for item in items:
        # a user property travels with the report from an xdist worker to the controller
        item.user_properties.append(("area", _area_of_item(item)))


def pytest_xdist_make_scheduler(config, log):
    """`--dist loadgroup`, with every test under tests/dml/ in one group (one worker).

    Not by `xdist_group` marks: pytest-xdist 3.8 groups by a suffix it writes into
    `item._nodeid`, which pytest 9 no longer reads back into `nodeid` (measured: the marks were
    set, the lane's modules still ran on both workers). The controller sees only node ids, and
    every `dml` test lives in tests/dml/."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadGroupScheduling

    class LaneGroupScheduling(LoadGroupScheduling):
        def _split_scope(self, nodeid: str) -> str:
            if nodeid.replace(os.sep, "/").startswith("tests/dml/"):
                return "dml-lane"
            return super()._split_scope(nodeid)

    return LaneGroupScheduling(config, log)


def _area_of_report(report) -> str:
    for key, value in getattr(report, "user_properties", ()):
        if key == "area":
            return value
    # a module skipped at collection (pytest.importorskip) has no items: go by its folder
    path = report.nodeid.replace(os.sep, "/")
    for area in ("dml", "webgpu"):
        if path.startswith(f"tests/{area}/"):
            return area
    return "cpu"


def _skip_reason(report) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        reason = str(longrepr[2])
    else:
        reason = str(longrepr)
    return reason.removeprefix("Skipped: ")


def _count(stats) -> dict[str, dict]:
    areas: dict[str, dict] = {
        a: {"outcomes": Counter(), "skips": Counter()} for a in AREAS
    }
    for outcome in ("passed", "failed", "error", "skipped", "xfailed", "xpassed"):
        for report in stats.get(outcome, ()):
            area = areas[_area_of_report(report)]
            area["outcomes"][outcome] += 1
            if outcome == "skipped":
                area["skips"][_skip_reason(report)] += 1
    return areas


def area_line(area: str, outcomes: Counter, skips: Counter) -> str:
    ran = sum(n for o, n in outcomes.items() if o != "skipped")
    head = f"{area} ({AREAS[area]}):"
    if not ran and not outcomes["skipped"]:
        return f"{head} none selected"
    if not ran:
        reasons = "; ".join(r for r, _ in skips.most_common(2))
        fix = FIX.get(area)
        hint = f" ({fix})" if fix and fix not in reasons else ""
        return f"{head} skipped, all {outcomes['skipped']}: {reasons}{hint}"
    parts = [f"{ran} ran"]
    for o in ("passed", "failed", "error", "xfailed", "xpassed"):
        if outcomes[o]:
            parts.append(f"{outcomes[o]} {o}")
    line = f"{head} " + ", ".join(parts)
    if outcomes["skipped"]:
        why = "; ".join(f"{n} × {r}" for r, n in skips.most_common(3))
        more = len(skips) - 3
        line += f"; {outcomes['skipped']} skipped ({why}{f'; {more} more reasons, see above' if more > 0 else ''})"
    return line


@pytest.hookimpl(wrapper=True, tryfirst=True)  # outermost: after the `-ra` skip list
def pytest_terminal_summary(terminalreporter, exitstatus, config):
    yield
    if config.getoption("collectonly"):
        return
    if hasattr(config, "workerinput"):  # an xdist worker: the controller reports
        return
    areas = _count(terminalreporter.stats)
    terminalreporter.write_sep("=", "what ran, per area")
    for area, c in areas.items():
        terminalreporter.write_line(area_line(area, c["outcomes"], c["skips"]))
    markexpr = config.getoption("markexpr") or ""
    if markexpr.replace(" ", "") == "notfull":
        terminalreporter.write_line(
            "tier: `make test` (the exhaustive sweeps, marked `full`, run in `make test-full`; CI runs both)"
        )
    elif markexpr.strip() == "full":
        terminalreporter.write_line("tier: `make test-full` (the exhaustive sweeps)")
