"""What the GIL costs the Python fallback: throughput of N threads vs 1 thread.

Each thread runs its own session in a loop for a fixed time; throughput = calls per second
summed over threads. Compared: the fallback DOMAIN::CumProd (a Python kernel, GIL held while
it runs) and ONNX Runtime's native CumProd-26 (no Python), on a small and a large tensor.
Sessions use intra_op_num_threads=1 so N threads means N cores of work at most.

    python tools/bench_concurrency.py [--seconds 2] [--threads 1 2 4]
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import threading
import time

import numpy as np
import onnxruntime as ort

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import ort_dml_ops
from ort_dml_ops import DOMAIN
from ort_dml_ops.bench.timing import quiet_session_options
from tests.bad_inputs.corpus import cumsum_model


def _so():
    so = quiet_session_options(intra_op_num_threads=1, log_severity_level=3)
    return so


def make(kind: str):
    if kind == "fallback":
        return ort_dml_ops.InferenceSession(
            cumsum_model(domain=DOMAIN, op="CumProd"),
            providers=["CPUExecutionProvider"],
            sess_options=_so(),
        )
    m = cumsum_model(op="CumProd")
    m.opset_import[0].version = 26
    m.ir_version = 13
    return ort.InferenceSession(
        m.SerializeToString(), _so(), providers=["CPUExecutionProvider"]
    )


def throughput(kind: str, rows: int, threads: int, seconds: float) -> float:
    x = np.random.default_rng(0).uniform(0.9, 1.1, (rows, 4)).astype(np.float32)
    feeds = {"x": x, "axis": np.array(0, np.int64)}
    sessions = [make(kind) for _ in range(threads)]
    for s in sessions:
        s.run(None, feeds)
    counts = [0] * threads
    start = threading.Barrier(threads + 1)
    stop = threading.Event()

    def loop(i):
        s = sessions[i]
        start.wait()
        while not stop.is_set():
            s.run(None, feeds)
            counts[i] += 1

    ts = [threading.Thread(target=loop, args=(i,)) for i in range(threads)]
    for t in ts:
        t.start()
    start.wait()
    t0 = time.perf_counter()
    time.sleep(seconds)
    stop.set()
    for t in ts:
        t.join()
    return sum(counts) / (time.perf_counter() - t0)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2, 4])
    args = ap.parse_args()
    print(
        f"# {platform.machine()}, {os.cpu_count()} cores, onnxruntime {ort.__version__}, numpy {np.__version__}"
    )
    print(
        "| kernel | x | "
        + " | ".join(f"{n} thr calls/s (×1)" for n in args.threads)
        + " |"
    )
    print("|---|---|" + "---:|" * len(args.threads))
    for rows in (64, 250_000):
        for kind in ("fallback", "native"):
            rates = [throughput(kind, rows, n, args.seconds) for n in args.threads]
            cells = " | ".join(f"{r:,.0f} ({r / rates[0]:.2f})" for r in rates)
            print(f"| {kind} CumProd | [{rows}, 4] f32 | {cells} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
