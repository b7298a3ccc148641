"""Full-size passes of a graph, counted from ONNX Runtime's own profile of one run.

The work a lowering adds is memory traffic: on a GPU each node reads and writes its tensors
once, so a graph's cost is about the bytes its nodes write. ONNX Runtime's profiler records,
for every kernel it ran, the bytes of the outputs (`args.output_size` of each `*_kernel_time`
event; onnxruntime/core/framework/sequential_executor.cc). The sum divided by the bytes of
the tensor the op produces (the scatter's data, the scan's input) is the number of full-size
write passes — reads are about as many again. Memcpy nodes are counted apart: each one is a
host↔device transfer on a GPU EP.
"""

from __future__ import annotations

import dataclasses
import json
import os
import tempfile

import onnx
import onnxruntime as ort

from ..converter.rules._base import VIEW_OPS

#: kernels that only change a tensor's shape, which a pass count may leave out (`PassCount.passes`)
VIEWS = VIEW_OPS


@dataclasses.dataclass
class PassCount:
    written_bytes: int  # every kernel's outputs in one run
    kernels: int  # kernels that ran
    copies: int  # Memcpy kernels among them
    view_bytes: int = 0  # the part of written_bytes that VIEWS kernels wrote

    def passes(self, full_size_bytes: int, views: bool = True) -> float:
        written = self.written_bytes - (0 if views else self.view_bytes)
        return written / max(full_size_bytes, 1)


def count_passes(
    model: onnx.ModelProto,
    feeds: dict,
    providers=None,
    sess_options: ort.SessionOptions | None = None,
) -> PassCount:
    """Run `model` once with ORT's profiler on and add up what its kernels wrote."""
    so = sess_options or ort.SessionOptions()
    so.log_severity_level = 3
    with tempfile.TemporaryDirectory() as tmp:
        so.enable_profiling = True
        so.profile_file_prefix = os.path.join(tmp, "passes")
        sess = ort.InferenceSession(
            model.SerializeToString(),
            so,
            providers=providers or ["CPUExecutionProvider"],
        )
        sess.run(
            None, feeds
        )  # the first run is the one profiled below (no warm-up needed: bytes, not time)
        path = sess.end_profiling()
        with open(path) as f:
            events = json.load(f)
    written = kernels = copies = views = 0
    seen = set()
    for ev in events:
        if ev.get("cat") != "Node" or not ev.get("name", "").endswith("_kernel_time"):
            continue
        key = ev["name"]
        if key in seen:  # one run only
            continue
        seen.add(key)
        args = ev.get("args", {})
        kernels += 1
        written += int(args.get("output_size", 0))
        if args.get("op_name") in VIEWS:
            views += int(args.get("output_size", 0))
        if str(args.get("op_name", "")).startswith("Memcpy"):
            copies += 1
    return PassCount(written, kernels, copies, views)
