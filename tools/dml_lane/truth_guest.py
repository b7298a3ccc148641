"""Guest side of the placement recorder: runs under the DML lane's Windows CPython (Wine).

    run.sh truth_guest.py MANIFEST.json

For each model of the manifest: create an ONNX Runtime session with the session config entry
``session.record_ep_graph_assignment_info`` = "1" and profiling on, read
``InferenceSession.get_provider_graph_assignment_info()`` (ORT's own record of which EP the
graph partitioner gave each node), run the model once, and read from the profile every
``*_kernel_time`` event whose ``op_name`` starts with ``Memcpy`` (the copy nodes
``transformer_memcpy.cc`` inserted). The copies ORT logs at session creation ("Add MemcpyFromHost after X for ...", INFO) are read
by the host from the process output, for models whose run fails. Writes ``<id>.truth.json`` next to the manifest as soon as
the model is done, so a crash loses only the model in flight.

Standard library + numpy + onnxruntime only (``ort_dml_ops`` for models that use the project's
custom ops, which need its fallback kernels); importable on the host (which only passes its path).
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback

RECORD_KEY = "session.record_ep_graph_assignment_info"
_NUMPY = {
    "tensor(float)": "float32",
    "tensor(double)": "float64",
    "tensor(float16)": "float16",
    "tensor(int8)": "int8",
    "tensor(int16)": "int16",
    "tensor(int32)": "int32",
    "tensor(int64)": "int64",
    "tensor(uint8)": "uint8",
    "tensor(uint16)": "uint16",
    "tensor(uint32)": "uint32",
    "tensor(uint64)": "uint64",
    "tensor(bool)": "bool",
}


def _feeds(sess, path, dynamic_dim):
    """The model's inputs from `path` (.npz), random values (seed 0) for any input not in it."""
    import numpy as np

    given = {}
    if path:
        with np.load(path, allow_pickle=False) as z:
            given = {k: z[k] for k in z.files}
    rng = np.random.default_rng(0)
    feeds = {}
    for i in sess.get_inputs():
        if i.name in given:
            feeds[i.name] = given[i.name]
            continue
        dims = [
            d if isinstance(d, int) and d >= 0 else dynamic_dim for d in (i.shape or [])
        ]
        dtype = np.dtype(_NUMPY[i.type])
        if dtype.kind == "f":
            feeds[i.name] = rng.standard_normal(dims).astype(dtype)
        elif dtype.kind == "b":
            feeds[i.name] = rng.random(dims) < 0.5
        else:
            feeds[i.name] = rng.integers(0, 3, size=dims).astype(dtype)
    return feeds


def _memcpy_nodes(profile_path):
    """Names of the Memcpy nodes that ran (profile events `<node>_kernel_time`, op_name Memcpy*)."""
    with open(profile_path, encoding="utf-8") as f:
        events = json.load(f)
    names = []
    for e in events:
        args = e.get("args") or {}
        if (
            e.get("cat") == "Node"
            and str(e.get("name", "")).endswith("_kernel_time")
            and str(args.get("op_name", "")).startswith("Memcpy")
        ):
            names.append(
                {
                    "name": e["name"][: -len("_kernel_time")],
                    "op_type": args["op_name"],
                    "provider": args.get("provider"),
                }
            )
    return names


def record(spec: dict, folder: str) -> dict:
    import onnxruntime as ort

    out = {
        "id": spec["id"],
        "name": spec["name"],
        "ok": False,
        "stage": "options",
        "error": None,
        "ort_version": ort.__version__,
        "provider": spec["provider"],
    }
    t0 = time.perf_counter()
    try:
        so = ort.SessionOptions()
        so.enable_mem_pattern = False  # as ORT asks for DML
        so.add_session_config_entry(RECORD_KEY, "1")
        so.enable_profiling = True
        so.profile_file_prefix = os.path.join(folder, f"{spec['id']}.profile")
        so.log_severity_level = 1  # INFO: transformer_memcpy.cc logs each copy it adds
        so.logid = f"truth{spec['id']}"
        for key, value in (spec.get("config") or {}).items():
            so.add_session_config_entry(str(key), str(value))
        level = spec.get("graph_optimization_level")
        if level:
            so.graph_optimization_level = getattr(ort.GraphOptimizationLevel, level)
        if spec["provider"] == "dml":
            providers = [("DmlExecutionProvider", {"device_id": "0"})]
        else:
            providers = ["CPUExecutionProvider"]
        out["stage"] = "session"
        path = os.path.join(folder, spec["model"])
        if spec.get(
            "use_fallback"
        ):  # the project's custom ops: through ort_dml_ops (DML_LANE_PYTHONPATH)
            from ort_dml_ops import InferenceSession

            sess = InferenceSession(path, providers=providers, sess_options=so)
        else:
            sess = ort.InferenceSession(path, so, providers=providers)
        out["providers"] = list(sess.get_providers())
        out["assignment"] = [
            {
                "ep": sg.ep_name,
                "nodes": [
                    {"name": n.name, "op_type": n.op_type, "domain": n.domain}
                    for n in sg.get_nodes()
                ],
            }
            for sg in sess.get_provider_graph_assignment_info()
        ]
        out["stage"] = "run"
        feeds = _feeds(
            sess,
            os.path.join(folder, spec["inputs"]) if spec.get("inputs") else None,
            int(spec.get("dynamic_dim", 2)),
        )
        sess.run(None, feeds)
        out["memcpy"] = _memcpy_nodes(sess.end_profiling())
        out["ok"] = True
        out["stage"] = "done"
    except BaseException as exc:  # noqa: BLE001 - every failure is a result
        out["error"] = f"{type(exc).__name__}: {exc}".strip()[:4000]
        out["traceback"] = traceback.format_exc()[-4000:]
    out["seconds"] = round(time.perf_counter() - t0, 3)
    return out


def main(argv):
    manifest = argv[1]
    folder = os.path.dirname(os.path.abspath(manifest))
    with open(manifest, encoding="utf-8") as f:
        specs = json.load(f)["models"]
    for spec in specs:
        result = record(spec, folder)
        tmp = os.path.join(folder, f"{spec['id']}.truth.json.tmp")
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(result, f)
        os.replace(tmp, os.path.join(folder, f"{spec['id']}.truth.json"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
