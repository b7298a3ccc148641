"""Parts (a)-(d) of the benchmark: one op on the CPU EP four ways, per case.

(a) native: ONNX Runtime's own CPU kernel (CumSum-14, CumProd-26, ScatterElements-18);
(b) fallback: the op in the project's domain through `ort_dml_ops.InferenceSession`;
(c) lowered: `convert(strategy="lower", target="dml")` of the model, run on the CPU EP;
(d) numpy: np.cumsum / np.cumprod / put_along_axis / ufunc.at.
A variant that cannot run is "n/a" with the reason; the others are timed interleaved.
"""

from __future__ import annotations

import gc
import warnings

import numpy as np
import onnxruntime as ort

from .._domain import DOMAIN
from . import models
from .timing import interleaved, once, quiet_session_options

VARIANTS = ("native", "fallback", "lowered", "numpy")
CPU = ["CPUExecutionProvider"]


def _short(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    text = (
        text.split("] : ")[-1] if "] : " in text else text
    )  # ORT's "[ONNXRuntimeError] : 9 : NOT_IMPLEMENTED : ..."
    return text[:160]


_KERNELS: dict | None = None


def cpu_kernel_types(op: str, opset: int) -> set[str]:
    """Element types the installed ORT's CPU EP has a kernel for, for `op` at `opset`."""
    global _KERNELS
    if _KERNELS is None:
        from onnxruntime.capi import _pybind_state as C

        _KERNELS = {}
        for k in C.get_all_opkernel_def():
            if k.provider == "CPUExecutionProvider" and k.domain in ("", "ai.onnx"):
                _KERNELS.setdefault(k.op_name, []).append(
                    (k.version_range, k.type_constraints.get("T", []))
                )
    out: set[str] = set()
    for (lo, hi), types in _KERNELS.get(op, []):
        if lo <= opset <= hi:
            out.update(t[len("tensor(") : -1] for t in types)
    return out


def _session(model):
    so = quiet_session_options(
        log_severity_level=4
    )  # a refusing kernel is reported as n/a with its reason, not logged
    return ort.InferenceSession(model.SerializeToString(), so, providers=CPU)


def _fallback_session(model):
    from ..session import InferenceSession

    so = quiet_session_options(log_severity_level=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return InferenceSession(model, providers=CPU, sess_options=so)


def build_variants(
    op: str, reduction: str | None, dtype: str, shape, axis: int, feeds: dict
):
    """{variant: callable} for those that can run, and {variant: reason} for those that cannot."""
    from ..conversion import convert

    fns, na = {}, {}
    if op == "ScatterElements":
        native_m = models.scatter_model(reduction, dtype, shape, axis)
        domain_m = models.scatter_model(reduction, dtype, shape, axis, domain=DOMAIN)
        lower_src = native_m  # opset 18: the DML EP has no kernel for it at all
    else:
        native_m = models.scan_model(op, dtype, shape, axis)
        domain_m = models.scan_model(op, dtype, shape, axis, domain=DOMAIN)
        lower_src = domain_m if op == "CumProd" else native_m
    # (a) native
    opset = models.NATIVE_OPSET[op]
    ort_type = "float16" if dtype == "float16" else "float"
    if ort_type not in cpu_kernel_types(op, opset):
        na["native"] = (
            f"onnxruntime {ort.__version__} has no CPU kernel for {dtype} {op}-{opset}"
        )
    elif op == "ScatterElements" and dtype == "float16" and reduction in ("add", "mul"):
        # Registered, but the kernel refuses float16 add/mul at run time, and in onnxruntime 1.31.1
        # that refusal crashes the process (SIGSEGV) from about 1e6 elements: never run it.
        na["native"] = (
            f"the CPU kernel refuses float16 reduction {reduction} (ORT error at 1e5 elements, "
            f"a segfault at 1e6 in onnxruntime 1.31.1)"
        )
    else:
        try:
            s = _session(native_m)
            s.run(None, feeds)
            fns["native"] = lambda s=s: s.run(None, feeds)[0]
        except Exception as exc:  # noqa: BLE001 - the reason is the result
            na["native"] = (
                f"the CPU kernel refuses {dtype} {reduction or ''}: {_short(exc)}".replace(
                    "  ", " "
                )
            )
    # (b) fallback
    try:
        s = _fallback_session(domain_m)
        fns["fallback"] = lambda s=s: s.run(None, feeds)[0]
    except Exception as exc:  # noqa: BLE001
        na["fallback"] = _short(exc)
    # (c) lowered
    try:
        res = convert(lower_src, "dml", strategy="lower")
        acts = [n for n in res.report.nodes if n.op_type == op]
        act = acts[0] if acts else None
        if act is None or act.action != "lowered":
            why = f"convert(strategy=lower, target=dml) leaves it {act.action if act else '?'}"
            na["lowered"] = f"{why}: {act.reason}" if act and act.reason else why
        else:
            s = _session(res.model)
            fns["lowered"] = lambda s=s: s.run(None, feeds)[0]
    except Exception as exc:  # noqa: BLE001
        na["lowered"] = _short(exc)
    # (d) numpy
    fns["numpy"] = models.numpy_fn(op, reduction, axis, feeds)
    return fns, na


def _agreement(out: np.ndarray, ref: np.ndarray) -> float:
    """max |out - ref| / max |ref| (normwise; 0 means identical)."""
    a, b = out.astype(np.float64), ref.astype(np.float64)
    scale = float(np.max(np.abs(b))) or 1.0
    return float(np.max(np.abs(a - b))) / scale


def tolerance(op: str, dtype: str, n: int) -> float:
    """Normwise agreement accepted between two implementations. CumProd: the documented bound of
    any association of n products, 2·(n+1)·u (docs/convert.md); float16 sums and scatters: 2e-2."""
    u = 2.0**-11 if dtype == "float16" else 2.0**-24
    if op == "CumProd":
        return 2 * (n + 1) * u
    return 2e-2 if dtype == "float16" else 1e-3


def run_case(
    op: str,
    reduction: str | None,
    dtype: str,
    size: int,
    axis: int,
    *,
    reps: int,
    budget_s: float,
    min_reps: int = 3,
) -> dict:
    shape = models.shape_for(size)
    feeds = models.feeds_for(op, reduction, dtype, shape, axis)
    fns, na = build_variants(op, reduction, dtype, shape, axis, feeds)
    outputs, first, failed = {}, {}, {}
    for name, fn in list(
        fns.items()
    ):  # warm-up call: outputs for the check, a time for the budget
        try:
            outputs[name], first[name] = once(fn)
        except Exception as exc:  # noqa: BLE001
            failed[name] = _short(exc)
            del fns[name]
    na.update(failed)
    timed = interleaved(fns, reps, budget_s=budget_s, min_reps=min_reps, first_s=first)
    ref_name = "native" if "native" in outputs else "numpy"
    tol = tolerance(op, dtype, shape[axis])
    variants = {}
    for name in VARIANTS:
        if name in timed:
            out = outputs[name]
            diff = _agreement(out, outputs[ref_name])
            variants[name] = {
                "status": "ok",
                "ms": round(timed[name]["median_s"] * 1e3, 4),
                "reps": timed[name]["reps"],
                "checksum": float(np.sum(out, dtype=np.float64)),
                "diff_vs_" + ref_name: diff,
                "agrees": bool(diff <= tol),
            }
        else:
            variants[name] = {"status": "n/a", "reason": na.get(name, "not run")}
    ratios = {}
    base = variants["native"].get("ms")
    for name in ("fallback", "lowered", "numpy"):
        ms = variants[name].get("ms")
        ratios[f"{name}/native"] = round(ms / base, 3) if ms and base else None
    del fns, outputs, feeds
    gc.collect()
    return {
        "name": models.case_name(op, reduction, dtype, size, axis),
        "op": op,
        "reduction": reduction,
        "dtype": dtype,
        "size": size,
        "shape": shape,
        "axis": "first" if axis == 0 else "last",
        "reference": ref_name,
        "variants": variants,
        "ratios": ratios,
    }
