"""Part (e): on a GPU EP (CUDA or DirectML) when this onnxruntime build has one.

For CumProd (the op neither GPU EP has a kernel for) and the ScatterElements reductions (the
DML EP rejects them): the lowered model (convert target=cuda|dml, strategy=lower) on the GPU
vs the same model with the op left native, so that ORT runs that node on the CPU with copies
around it (CUDA: ONNX CumProd-26 / ScatterElements-18; DML: the Python fallback for CumProd).
ORT's profiling names the provider of every node that ran: both counts are reported.
"""

from __future__ import annotations

import json
import os
import tempfile
import warnings
from functools import partial
from typing import Any

import onnxruntime as ort

from .._domain import DOMAIN
from . import models
from .timing import interleaved, quiet_session_options

GPU_EPS = ("CUDAExecutionProvider", "DmlExecutionProvider")


def gpu_provider() -> str | None:
    available = ort.get_available_providers()
    return next((p for p in GPU_EPS if p in available), None)


def _providers(ep: str) -> list:
    first = (ep, {"device_id": "0"}) if ep == "DmlExecutionProvider" else ep
    return [first] if ep == "CPUExecutionProvider" else [first, "CPUExecutionProvider"]


def _session(model, ep: str, profile_dir: str, fallback: bool = False):
    so = quiet_session_options(log_severity_level=3)
    so.enable_profiling = True
    so.profile_file_prefix = os.path.join(profile_dir, "p")
    if fallback:
        from ..session import InferenceSession

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return InferenceSession(model, providers=_providers(ep), sess_options=so)
    if ep == "DmlExecutionProvider":
        so.enable_mem_pattern = False
        so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    return ort.InferenceSession(model.SerializeToString(), so, providers=_providers(ep))


def placements(session) -> dict:
    """{provider: [op types that ran there]} from ORT's profile (ends profiling)."""
    path = session.end_profiling()
    with open(path) as f:
        events = json.load(f)
    os.unlink(path)
    out: dict = {}
    for e in events:
        args = e.get("args") or {}
        if (
            e.get("cat") == "Node"
            and "provider" in args
            and e.get("name", "").endswith("_kernel_time")
        ):
            out.setdefault(args["provider"], set()).add(args.get("op_name", "?"))
    return {k: sorted(v) for k, v in out.items()}


def run_gpu(sizes, reps: int, dtype: str = "float32") -> dict:
    from ..conversion import convert

    ep = gpu_provider()
    if ep is None:
        return {
            "status": "n/a",
            "reason": f"no GPU execution provider in this onnxruntime build "
            f"({', '.join(ort.get_available_providers())})",
        }
    target = "cuda" if ep == "CUDAExecutionProvider" else "dml"
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for op, reduction in (
            ("CumProd", None),
            ("ScatterElements", "add"),
            ("ScatterElements", "max"),
        ):
            for size in sizes:
                shape, axis = models.shape_for(size), 1
                feeds = models.feeds_for(op, reduction, dtype, shape, axis)
                if op == "CumProd":
                    domain_m = models.scan_model(op, dtype, shape, axis, domain=DOMAIN)
                    left = (
                        models.scan_model(op, dtype, shape, axis)
                        if target == "cuda"
                        else domain_m
                    )
                    src = domain_m
                else:
                    left = src = models.scatter_model(reduction, dtype, shape, axis)
                row: dict[str, Any] = {
                    "case": models.case_name(op, reduction, dtype, size, axis),
                    "provider": ep,
                }
                try:
                    lowered = convert(src, target, strategy="lower").model
                    s_low = _session(lowered, ep, tmp)
                    s_left = _session(
                        left,
                        ep,
                        tmp,
                        fallback=left is domain_m if op == "CumProd" else False,
                    )
                    fns = {
                        "lowered_gpu": partial(s_low.run, None, feeds),
                        "left_native": partial(s_left.run, None, feeds),
                    }
                    for fn in fns.values():
                        fn()
                    t = interleaved(fns, reps)
                    row.update({k: round(v["median_s"] * 1e3, 3) for k, v in t.items()})
                    row["speedup"] = round(row["left_native"] / row["lowered_gpu"], 2)
                    row["placement_lowered"] = placements(s_low)
                    row["placement_left_native"] = placements(s_left)
                except Exception as exc:  # noqa: BLE001
                    row["error"] = str(exc).splitlines()[0][:200]
                rows.append(row)
    return {"status": "ok", "provider": ep, "target": target, "rows": rows}
