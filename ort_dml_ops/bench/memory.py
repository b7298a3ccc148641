"""Peak memory of one run: the lowered scatter vs ONNX Runtime's kernel (nucleus sampling).

Issue 5's bound: a nucleus-sampling scatter over a 50,000-entry vocabulary, once lowered, must
stay within 4x the bytes of its inputs (nothing may grow as indices x axis length). Each
variant runs once in a fresh Python process, so one variant's peak cannot hide another's,
with ONNX Runtime's CPU arena and memory-pattern planning off, so every tensor is its own
allocation, freed after its last use. The child resets the kernel's peak-RSS mark
(/proc/self/clear_refs) after building the session and the inputs, runs once, and reports
VmHWM minus the resident size just before the run: the memory the run itself added, output
included. The child's glibc keeps a fixed mmap threshold (MALLOC_MMAP_THRESHOLD_), so every
tensor of 128 KiB or more is its own mapping, returned to the system when freed: without it,
glibc raises the threshold after the first large free and keeps freed tensors resident, and
the peak would measure the allocator rather than the graph. Linux only (elsewhere n/a).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from typing import Any

import numpy as np

VOCAB = 50_000
BATCH = 32
REDUCTIONS = ("none", "add", "max")
LIMIT = 4.0  # peak added by the run / bytes of its inputs


def available() -> str | None:
    """None when the measurement works here, else why not."""
    if not sys.platform.startswith("linux"):
        return "peak-RSS reset (/proc/self/clear_refs) is Linux only"
    if not os.path.exists("/proc/self/clear_refs"):
        return "/proc/self/clear_refs is missing"
    return None


def nucleus_feeds(batch: int, vocab: int, seed: int = 0) -> dict:
    """Nucleus sampling's last step: each row's probabilities, sorted, written back to their
    token ids (a permutation of the vocabulary per row) in a zeroed [batch, vocab] tensor."""
    rng = np.random.default_rng(seed)
    probs = rng.dirichlet(np.ones(vocab), size=batch).astype(np.float32)
    order = np.argsort(-probs, axis=1)
    return {
        "data": np.zeros((batch, vocab), np.float32),
        "indices": order.astype(np.int64),
        "updates": np.take_along_axis(probs, order, axis=1),
    }


def run_memory(vocab: int = VOCAB, batch: int = BATCH, reductions=REDUCTIONS) -> dict:
    from ..conversion import convert
    from . import models

    why = available()
    if why:
        return {"status": "n/a", "reason": why}
    feeds = nucleus_feeds(batch, vocab)
    in_bytes = sum(a.nbytes for a in feeds.values())
    shape = [batch, vocab]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        np.savez(os.path.join(tmp, "feeds.npz"), **feeds)
        for red in reductions:
            native = models.scatter_model(red, "float32", shape, 1)
            variants = {
                "native": native,
                "lowered": convert(native, "dml", strategy="lower").model,
            }
            row: dict[str, Any] = {
                "case": f"ScatterElements[{red}] float32 {shape} (K = {batch * vocab:,} updates)"
            }
            for name, model in variants.items():
                path = os.path.join(tmp, f"{red}-{name}.onnx")
                with open(path, "wb") as f:
                    f.write(model.SerializeToString())
                peak = _child(path, os.path.join(tmp, "feeds.npz"))
                row[name] = peak
                if "added_bytes" in peak:
                    row[f"{name}/inputs"] = round(peak["added_bytes"] / in_bytes, 2)
            if (
                "output_checksum" in row["native"]
                and "output_checksum" in row["lowered"]
            ):
                a, b = (
                    row["native"]["output_checksum"],
                    row["lowered"]["output_checksum"],
                )
                row["outputs_agree"] = abs(a - b) <= 1e-4 * max(abs(a), 1.0)
            rows.append(row)
    worst = max(
        (r["lowered/inputs"] for r in rows if "lowered/inputs" in r), default=None
    )
    return {
        "status": "ok",
        "input_bytes": in_bytes,
        "output_bytes": batch * vocab * 4,
        "vocab": vocab,
        "batch": batch,
        "limit": LIMIT,
        "worst_lowered/inputs": worst,
        "rows": rows,
    }


def _child(model_path: str, feeds_path: str) -> dict:
    env = dict(os.environ, MALLOC_MMAP_THRESHOLD_="131072")
    proc = subprocess.run(
        [sys.executable, "-m", "ort_dml_ops.bench.memory", model_path, feeds_path],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    if proc.returncode != 0:
        return {
            "error": (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[
                -1
            ]
        }
    return json.loads(proc.stdout)


def _status_kb(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/self/status")


def _measure(model_path: str, feeds_path: str) -> dict:
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.enable_cpu_mem_arena = (
        False  # every tensor its own allocation, freed after last use
    )
    so.enable_mem_pattern = False
    so.log_severity_level = 3
    sess = ort.InferenceSession(model_path, so, providers=["CPUExecutionProvider"])
    feeds = dict(np.load(feeds_path))
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # reset VmHWM to the current resident size
    before = _status_kb("VmRSS")
    (out,) = sess.run(None, feeds)
    peak = _status_kb("VmHWM")
    return {
        "rss_before_bytes": before * 1024,
        "peak_bytes": peak * 1024,
        "added_bytes": (peak - before) * 1024,
        "output_checksum": float(np.float64(out.sum())),
    }


if __name__ == "__main__":  # the child process: one model, one run
    print(json.dumps(_measure(sys.argv[1], sys.argv[2])))
