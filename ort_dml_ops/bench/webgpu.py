"""`ort-dml-ops bench --target webgpu`: the three ways to run each op with ONNX Runtime's WebGPU EP.

Per case (CumSum, CumProd, ScatterElements none/add/max; float32; [1000, n/1000]; axis 0 and 1)
the model is ``x -> Neg -> op -> Neg`` (Neg on every float input), so that the data lives on the
device before and after the op, as in a real model. Three variants, timed interleaved in one run:

* ``native``: the op left to the WebGPU EP's own kernel (CumSum-14, ScatterElements-18; CumProd
  has none: n/a);
* ``lowered``: ``convert(target="webgpu", strategy="lower")`` of the model, on the WebGPU EP;
* ``cpu``: what users get where the EP does not take the op: the native model with that node
  forced onto the CPU EP (the plugin's ``forceCpuNodeNames`` option; ONNX CumProd-26 for CumProd,
  which no GPU EP has), with the device<->host copies ORT inserts around it.

Every variant's output is checked against numpy in the same run. For each variant the record
also holds ORT's placement (nodes per EP, from its assignment record) and the Memcpy kernels of
one profiled run (the copies). The adapter is named from Vulkan (what Dawn's adapter wraps on
Linux); on lavapipe the figures count work (passes over the data), not GPU time.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
import warnings

import numpy as np
import onnx
from onnx import helper

from . import models
from .timing import interleaved, quiet_session_options

CASES: tuple[tuple[str, str | None], ...] = (
    ("CumSum", None),
    ("CumProd", None),
    ("ScatterElements", "none"),
    ("ScatterElements", "add"),
    ("ScatterElements", "max"),
)
VARIANTS = ("native", "lowered", "cpu")
WEBGPU = "WebGpuExecutionProvider"
OP_NODE = "op"


def sandwich(model: onnx.ModelProto) -> onnx.ModelProto:
    """x -> Neg -> op -> Neg: every float input and the output pass through a Neg on the device."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    g = m.graph
    g.node[0].name = OP_NODE
    floats = [
        i.name
        for i in g.input
        if i.type.tensor_type.elem_type == onnx.TensorProto.FLOAT
    ]
    pre = []
    for name in floats:
        pre.append(helper.make_node("Neg", [name], [f"{name}_neg"], name=f"neg_{name}"))
        for n in g.node:
            n.input[:] = [f"{name}_neg" if x == name else x for x in n.input]
    out = g.output[0].name
    for n in g.node:
        n.output[:] = [f"{out}_pre" if x == out else x for x in n.output]
    post = helper.make_node("Neg", [f"{out}_pre"], [out], name="neg_out")
    nodes = pre + list(g.node) + [post]
    del g.node[:]
    g.node.extend(nodes)
    return m


def reference(op: str, reduction: str | None, axis: int, feeds: dict) -> np.ndarray:
    negated = {k: (-v if v.dtype == np.float32 else v) for k, v in feeds.items()}
    return -models.numpy_fn(op, reduction, axis, negated)()


def adapter_name() -> str:
    """The Vulkan physical device the WebGPU EP runs on (Dawn wraps it), e.g. 'llvmpipe (LLVM 19...)'."""
    try:
        return _vulkan_device_names()[0]
    except Exception as exc:  # noqa: BLE001 - named, never fatal
        return f"unknown ({type(exc).__name__}: {exc})"


def _vulkan_device_names() -> list[str]:
    import ctypes

    vk = ctypes.CDLL("libvulkan.so.1")

    class AppInfo(ctypes.Structure):
        _fields_ = [
            ("sType", ctypes.c_int),
            ("pNext", ctypes.c_void_p),
            ("pApplicationName", ctypes.c_char_p),
            ("applicationVersion", ctypes.c_uint32),
            ("pEngineName", ctypes.c_char_p),
            ("engineVersion", ctypes.c_uint32),
            ("apiVersion", ctypes.c_uint32),
        ]

    class CreateInfo(ctypes.Structure):
        _fields_ = [
            ("sType", ctypes.c_int),
            ("pNext", ctypes.c_void_p),
            ("flags", ctypes.c_uint32),
            ("pApplicationInfo", ctypes.POINTER(AppInfo)),
            ("enabledLayerCount", ctypes.c_uint32),
            ("ppEnabledLayerNames", ctypes.c_void_p),
            ("enabledExtensionCount", ctypes.c_uint32),
            ("ppEnabledExtensionNames", ctypes.c_void_p),
        ]

    app = AppInfo(
        0, None, b"ort-dml-ops", 1, None, 0, (1 << 22)
    )  # VK_STRUCTURE_TYPE_APPLICATION_INFO, 1.0
    info = CreateInfo(
        1, None, 0, ctypes.pointer(app), 0, None, 0, None
    )  # ..._INSTANCE_CREATE_INFO
    inst = ctypes.c_void_p()
    if vk.vkCreateInstance(ctypes.byref(info), None, ctypes.byref(inst)) != 0:
        raise RuntimeError("vkCreateInstance failed")
    try:
        n = ctypes.c_uint32(0)
        vk.vkEnumeratePhysicalDevices(inst, ctypes.byref(n), None)
        devs = (ctypes.c_void_p * n.value)()
        vk.vkEnumeratePhysicalDevices(inst, ctypes.byref(n), devs)
        names = []
        for d in devs:
            props = ctypes.create_string_buffer(
                1024
            )  # VkPhysicalDeviceProperties: name at byte 20
            vk.vkGetPhysicalDeviceProperties(ctypes.c_void_p(d), props)
            names.append(props.raw[20:276].split(b"\0")[0].decode(errors="replace"))
        return names or ["no Vulkan device"]
    finally:
        vk.vkDestroyInstance(inst, None)


def _session(
    model: onnx.ModelProto, force_cpu: bool = False, profile_dir: str | None = None
):
    from ..session import InferenceSession

    so = quiet_session_options(log_severity_level=3)
    so.add_session_config_entry("session.record_ep_graph_assignment_info", "1")
    if profile_dir:
        so.enable_profiling = True
        so.profile_file_prefix = os.path.join(profile_dir, "p")
    options = {"forceCpuNodeNames": OP_NODE} if force_cpu else {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return InferenceSession(
            model, providers=[("WebGpuExecutionProvider", options)], sess_options=so
        )


def _placement(session) -> dict:
    """{EP: node count} from ORT's assignment record."""
    out: dict = {}
    for sg in session.get_provider_graph_assignment_info():
        out[sg.ep_name] = out.get(sg.ep_name, 0) + len(sg.get_nodes())
    return out


def _copies(model, force_cpu: bool, feeds: dict) -> tuple[int, int]:
    """(Memcpy kernels, bytes every other kernel wrote) in one profiled run — the copies and the
    full-size passes' numerator (bench/passes.py; the sandwich's own two Neg included)."""
    with tempfile.TemporaryDirectory() as tmp:
        s = _session(model, force_cpu, profile_dir=tmp)
        s.run(None, feeds)
        path = s.end_profiling()
        with open(path) as f:
            events = json.load(f)
    copies = written = 0
    seen = set()
    for e in events:
        if (
            e.get("cat") != "Node"
            or not e.get("name", "").endswith("_kernel_time")
            or e["name"] in seen
        ):
            continue
        seen.add(e["name"])
        args = e.get("args") or {}
        if str(args.get("op_name", "")).startswith("Memcpy"):
            copies += 1
        else:
            written += int(args.get("output_size", 0) or 0)
    return copies, written


def _models(op: str, reduction: str | None, shape, axis: int) -> dict:
    """variant -> (model, force the op onto the CPU) or a reason string (n/a)."""
    from ..conversion import convert

    if op == "ScatterElements":
        native = sandwich(models.scatter_model(reduction, "float32", shape, axis))
    else:
        native = sandwich(models.scan_model(op, "float32", shape, axis))
    out = {
        "native": (native, False)
        if op != "CumProd"
        else "the WebGPU EP has no CumProd kernel",
        "cpu": (native, True),
    }
    src = native
    if (
        op == "CumProd"
    ):  # lower the project's domain op (the ONNX-26 model does not load below opset 26 elsewhere)
        from .._domain import DOMAIN

        src = sandwich(models.scan_model(op, "float32", shape, axis, domain=DOMAIN))
    try:
        out["lowered"] = (
            convert(src, "webgpu", strategy="lower", with_inspect=False).model,
            False,
        )
    except Exception as exc:  # noqa: BLE001 - reported as n/a
        out["lowered"] = f"convert failed: {str(exc).splitlines()[0][:160]}"
    return out


def run_webgpu(
    sizes,
    reps: int = 5,
    axes=(0, 1),
    cases=CASES,
    budget_s: float | None = None,
    progress=None,
) -> dict:
    """The record: {"adapter", "rows": [{case, size, axis, <variant>: ms | n/a, ...}]}."""
    from ..session import webgpu_devices

    webgpu_devices()  # a clear error before any work when the EP or an adapter is missing
    rows = []
    for op, reduction in cases:
        for size in sizes:
            for axis in axes:
                shape = models.shape_for(size)
                row = {
                    "case": models.case_name(op, reduction, "float32", size, axis),
                    "op": op,
                    "reduction": reduction,
                    "size": int(np.prod(shape)),
                    "shape": shape,
                    "axis": axis,
                }
                if progress:
                    progress(row["case"])
                feeds = models.feeds_for(op, reduction, "float32", shape, axis)
                want = reference(op, reduction, axis, feeds)
                fns, sessions = {}, {}
                for v, spec in _models(op, reduction, shape, axis).items():
                    if isinstance(spec, str):
                        row[v] = f"n/a: {spec}"
                        continue
                    model, force = spec
                    try:
                        s = _session(model, force)
                        got = s.run(None, feeds)[0]
                    except Exception as exc:  # noqa: BLE001 - e.g. a binding limit of the device
                        row[v] = f"n/a: {' '.join(str(exc).split())[:200]}"
                        continue
                    err = (
                        float(np.max(np.abs(got - want) / (1 + np.abs(want))))
                        if want.size
                        else 0.0
                    )
                    row[f"{v}_max_rel_err"] = err
                    row[f"{v}_nodes"] = _placement(s)
                    row[f"{v}_copies"], written = _copies(model, force, feeds)
                    row[f"{v}_passes"] = round(written / max(want.nbytes, 1), 1)
                    sessions[v] = s
                    fns[v] = lambda s=s, feeds=feeds: s.run(None, feeds)
                first = {}
                for v, fn in fns.items():
                    t0 = time.perf_counter()
                    fn()
                    first[v] = time.perf_counter() - t0
                t = interleaved(fns, reps, budget_s=budget_s, first_s=first)
                for v, r in t.items():
                    row[v] = round(r["median_s"] * 1e3, 3)
                    row[f"{v}_reps"] = r["reps"]
                rows.append(row)
    return {
        "target": "webgpu",
        "adapter": adapter_name(),
        "provider": WEBGPU,
        "software_adapter": os.environ.get("ORT_WEBGPU_EP_ALLOW_SOFTWARE_ADAPTER")
        == "1",
        "reps": reps,
        "rows": rows,
    }


def table(result: dict) -> str:
    """A Markdown table: ms per variant, ratios to the CPU path, copies and max relative error."""
    soft = (
        " (software GPU: counts work, not GPU time)"
        if "llvmpipe" in result["adapter"]
        else ""
    )
    lines = [
        f"adapter: {result['adapter']}{soft}",
        "",
        (
            "| case | native WebGPU ms | lowered on WebGPU ms | CPU path ms | native / CPU | lowered / CPU "
            "| lowered / native | passes native / lowered / CPU | copies native / lowered / CPU "
            "| nodes on CPU (lowered) | max rel err |"
        ),
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]

    def ms(v):
        return f"{v:.2f}" if isinstance(v, (int, float)) else "n/a"

    def ratio(a, b):
        return (
            f"{a / b:.2f}×"
            if isinstance(a, (int, float)) and isinstance(b, (int, float)) and b
            else "—"
        )

    for r in result["rows"]:
        copies = " / ".join(str(r.get(f"{v}_copies", "—")) for v in VARIANTS)
        passes = " / ".join(str(r.get(f"{v}_passes", "—")) for v in VARIANTS)
        cpu_nodes = (
            r.get("lowered_nodes", {}).get("CPUExecutionProvider", 0)
            if "lowered_nodes" in r
            else "—"
        )
        err = max((r[k] for k in r if k.endswith("_max_rel_err")), default=None)
        lines.append(
            f"| {r['case']} | {ms(r.get('native'))} | {ms(r.get('lowered'))} | {ms(r.get('cpu'))} | "
            f"{ratio(r.get('native'), r.get('cpu'))} | {ratio(r.get('lowered'), r.get('cpu'))} | "
            f"{ratio(r.get('lowered'), r.get('native'))} | {passes} | {copies} | "
            f"{cpu_nodes} | {'' if err is None else f'{err:.1e}'} |"
        )
    notes = [
        f"- {r['case']} {v}: {r[v]}"
        for r in result["rows"]
        for v in VARIANTS
        if isinstance(r.get(v), str)
    ]
    return "\n".join(lines + ([""] + notes if notes else []))
