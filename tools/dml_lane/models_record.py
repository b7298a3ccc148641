"""Record of real models on the real DirectML EP, written into docs/dml-lane.md.

    .venv/bin/python tools/dml_lane/models_record.py [--out docs/dml-lane.md]

Runs the cases of tests/dml/test_models_dml.py (every zoo model and, when tests/real_models.py
exists, every real export; original and converted; ORT's default options, graph fusion on) on
the lane and writes one table row per run between the `models` markers: where ORT's assignment
record put the nodes, the Memcpy kernels that ran (profile), the fused partitions, and whether
the outputs match the expected ones. The tests assert; this only records.
"""

from __future__ import annotations

import argparse
import importlib.util
import re
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "tools")]

from dml_lane.driver import CPU, DML, lane_available, run_cases

BEGIN, END = "<!-- models:begin -->", "<!-- models:end -->"


def _test_module():
    spec = importlib.util.spec_from_file_location(
        "test_models_dml", ROOT / "tests" / "dml" / "test_models_dml.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules["test_models_dml"] = module
    spec.loader.exec_module(module)
    return module


def _failure(r) -> str:
    """One line: where it failed, the node ORT names, and the DML EP's source line and HRESULT."""
    text = r.error or ""
    node = re.search(r"running (\w+) node\. Name:'([^']+)'", text)
    where = re.search(
        r"(\w+\.cpp\(\d+\)).*?Exception\(\d+\) tid\(\w+\) (\w{8})", text, re.DOTALL
    )
    parts = [f"fails at {r.stage}"]
    if node:
        parts.append(f"{node.group(1)} `{node.group(2)}`")
    if where:
        parts.append(f"{where.group(1)} {where.group(2)}")
    if not node and not where:
        parts.append(text.strip().splitlines()[0][:100] if text.strip() else "")
    return ": ".join(parts[:2]) + (f" ({parts[2]})" if len(parts) > 2 else "")


def _ops(names) -> str:
    counts = Counter(names)
    return ", ".join(f"{op}×{n}" if n > 1 else op for op, n in sorted(counts.items()))


def _row(entry, version, r) -> str:
    if not r.ok:
        return f"| {entry.name} | {entry.source} | {version} | {_failure(r)} | | | |"
    on_dml = sum(1 for a in r.assignment if a[0] == DML)
    cpu = [op for ep, _, op, _ in r.assignment if ep == CPU]
    problems = entry.compare(r.outputs)
    verdict = "match" if not problems else "DIFFER: " + "; ".join(problems)[:120]
    return (
        f"| {entry.name} | {entry.source} | {version} | {verdict} | {on_dml} / {len(cpu)}"
        f"{' (' + _ops(cpu) + ')' if cpu else ''} | {len(r.memcpy)} | {len(r.fused)} |"
    )


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "docs" / "dml-lane.md"))
    args = ap.parse_args(argv)
    ok, why = lane_available()
    if not ok:
        print(f"models_record: {why}", file=sys.stderr)
        return 1
    t = _test_module()
    t0 = time.time()
    results = run_cases(t.LANE_CASES, sessions_per_process=4)
    elapsed = time.time() - t0
    rows = []
    for case, r in zip(t.LANE_CASES, results):
        name, version = case.name.rsplit(":", 1)
        rows.append(_row(t.ENTRIES[name], version, r))
    block = "\n".join(
        [
            BEGIN,
            "",
            (
                f"Recorded by `tools/dml_lane/models_record.py` ({len(results)} sessions, {elapsed:.0f} s on the lane; "
                "nodes as ORT's assignment record has them after its optimizations):"
            ),
            "",
            "| model | source | version | outputs vs expected | nodes on DML / CPU (CPU op types) | Memcpy ran | fused partitions |",
            "|---|---|---|---|---|---|---|",
            *rows,
            "",
            END,
        ]
    )
    out = Path(args.out)
    text = out.read_text()
    if BEGIN not in text or END not in text:
        print(f"models_record: {out} has no {BEGIN} ... {END} markers", file=sys.stderr)
        return 1
    out.write_text(
        text[: text.index(BEGIN)] + block + text[text.index(END) + len(END) :]
    )
    print(f"models_record: {len(rows)} rows -> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
