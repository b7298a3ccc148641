"""Guest side of the DML lane: executed by the Windows CPython 3.11 inside Wine.

    run.sh guest.py MANIFEST.json

The manifest lists cases (a model file, an inputs .npz, provider, options). For each case this
script creates one ONNX Runtime session with a session log id unique to the case (so the host
can attribute ORT's verbose log lines to it), with ORT's own record of where each node went
(session config `session.record_ep_graph_assignment_info`, read back with
`get_provider_graph_assignment_info()`) and with profiling on (the `*_kernel_time` events of
Memcpy nodes count the copies ORT inserted), runs it once, and writes
`<id>.result.json` (+ `<id>.out.npz`) next to the manifest *as soon as the case is done*, so a
crash loses at most the case in flight. Standard library + numpy + onnxruntime only (numpy < 2
here); `ort_dml_ops` is imported only for use_fallback cases.

This file must stay importable on the host too (the host never runs it; it only passes its path).
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback

MARK = "@@ortdmlops-lane"


def _emit(event: str, case_id: str) -> None:
    # The host splits the combined output on these markers (ORT writes its log to stderr).
    sys.stdout.flush()
    sys.stderr.write(f"\n{MARK} {event} {case_id}\n")
    sys.stderr.flush()


def _load_arrays(path: str, dtypes: dict) -> dict:
    import numpy as np

    out = {}
    with np.load(path, allow_pickle=False) as z:
        for k in z.files:
            a = z[k]
            tag = dtypes.get(k)
            if tag:  # an ml_dtypes type stored as raw bits
                import ml_dtypes

                a = a.view(getattr(ml_dtypes, tag))
            out[k] = a
    return out


def _save_arrays(path: str, arrays: list) -> list:
    import numpy as np

    tags, store = [], {}
    for i, a in enumerate(arrays):
        a = np.asarray(a)
        tag = None
        if (
            a.dtype.kind == "V"
            or type(a.dtype).__module__.startswith("ml_dtypes")
            or a.dtype.name
            in (
                "bfloat16",
                "float8_e4m3fn",
                "float8_e5m2",
                "float8_e4m3fnuz",
                "float8_e5m2fnuz",
                "int4",
                "uint4",
            )
        ):
            tag = a.dtype.name
            a = a.view(f"u{a.dtype.itemsize}")
        tags.append(tag)
        store[f"o{i}"] = a
    np.savez(path, **store)
    return tags


def _session_options(opts: dict, logid: str):
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.enable_mem_pattern = False  # as ORT asks for DML
    so.log_severity_level = 0  # verbose: ORT prints its "Node placements" section
    so.logid = logid
    so.add_session_config_entry("session.record_ep_graph_assignment_info", "1")
    so.enable_profiling = True
    level = opts.get("graph_optimization_level", "ORT_DISABLE_ALL")
    if isinstance(level, str):
        level = getattr(ort.GraphOptimizationLevel, level)
    elif isinstance(level, int):
        level = {
            0: ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
            1: ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
            2: ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
            99: ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
        }[level]
    so.graph_optimization_level = level
    for key, value in opts.items():
        if key in (
            "graph_optimization_level",
            "config",
            "provider_options",
            "timed_runs",
        ):
            continue
        setattr(so, key, value)
    for key, value in (opts.get("config") or {}).items():
        so.add_session_config_entry(str(key), str(value))
    return so


def _assignment(sess) -> list:
    """ORT's own record: [[ep, node name, op_type, domain], ...] for every node of the graph
    it partitioned (original names, also inside DmlFusedNode_* partitions)."""
    return [
        [entry.ep_name, n.name, n.op_type, n.domain]
        for entry in sess.get_provider_graph_assignment_info()
        for n in entry.get_nodes()
    ]


def _kernels(profile_path: str) -> list:
    """[[node name, op name], ...] of the kernels that ran, from the profile's `*_kernel_time`
    events (a DmlFusedNode_* partition is one kernel; Memcpy nodes are the copies)."""
    with open(profile_path, encoding="utf-8") as f:
        events = json.load(f)
    os.remove(profile_path)
    ran = {
        (
            e["name"][: -len("_kernel_time")],
            str((e.get("args") or {}).get("op_name", "")),
        )
        for e in events
        if e.get("cat") == "Node" and e.get("name", "").endswith("_kernel_time")
    }
    return sorted([name, op] for name, op in ran)


def run_case(case: dict, folder: str) -> dict:
    import numpy as np  # noqa: F401
    import onnxruntime as ort

    cid = case["id"]
    opts = dict(case.get("session_options") or {})
    result = {
        "id": cid,
        "ok": False,
        "error": None,
        "providers": [],
        "output_dtypes": [],
        "ort_version": ort.__version__,
        "stage": "options",
    }
    t0 = time.perf_counter()
    try:
        so = _session_options(opts, logid=f"case{cid}")
        so.profile_file_prefix = os.path.join(folder, f"{cid}.profile")
        if case["provider"] == "dml":
            po = {"device_id": "0"}
            po.update(
                {
                    str(k): str(v)
                    for k, v in (opts.get("provider_options") or {}).items()
                }
            )
            providers = [("DmlExecutionProvider", po)]
            want = "DmlExecutionProvider"
        else:
            providers = ["CPUExecutionProvider"]
            want = "CPUExecutionProvider"
        model_path = os.path.join(folder, case["model"])
        feeds = _load_arrays(
            os.path.join(folder, case["inputs"]), case.get("input_dtypes") or {}
        )
        result["stage"] = "session"
        if case.get("use_fallback"):
            # this package as the host has it (DML_LANE_PYTHONPATH)
            from ort_dml_ops import InferenceSession

            sess = InferenceSession(model_path, providers=providers, sess_options=so)
        else:
            sess = ort.InferenceSession(model_path, so, providers=providers)
        result["providers"] = list(sess.get_providers())
        result["assignment"] = _assignment(sess)
        result["session_s"] = round(time.perf_counter() - t0, 3)
        if not result["providers"] or result["providers"][0] != want:
            result["stage"] = "providers"
            raise RuntimeError(
                f"session did not get {want} first: {result['providers']}"
            )
        result["stage"] = "run"
        outs = sess.run(None, feeds)
        result["output_names"] = [o.name for o in sess.get_outputs()]
        result["output_dtypes"] = _save_arrays(
            os.path.join(folder, f"{cid}.out.npz"), outs
        )
        result["outputs_file"] = f"{cid}.out.npz"
        # timed_runs: that many more runs, timed one by one (the bench; profiling off there)
        runs = []
        for _ in range(int(opts.get("timed_runs") or 0)):
            t_run = time.perf_counter()
            sess.run(None, feeds)
            runs.append(time.perf_counter() - t_run)
        if runs:
            result["run_s"] = round(sorted(runs)[len(runs) // 2], 6)
        result["kernels"] = (
            _kernels(sess.end_profiling()) if so.enable_profiling else []
        )
        result["ok"] = True
        result["stage"] = "done"
    except BaseException as exc:  # noqa: BLE001 - every failure is a result
        msg = f"{type(exc).__name__}: {exc}"
        result["error"] = msg.strip()
        result["traceback"] = traceback.format_exc()[-4000:]
    result["total_s"] = round(time.perf_counter() - t0, 3)
    return result


def main(argv: list[str]) -> int:
    manifest_path = argv[1]
    folder = os.path.dirname(os.path.abspath(manifest_path))
    with open(manifest_path, encoding="utf-8") as f:
        manifest = json.load(f)
    for case in manifest["cases"]:
        cid = case["id"]
        _emit("BEGIN", cid)
        result = run_case(case, folder)
        tmp = os.path.join(folder, f"{cid}.result.json.tmp")
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(result, f)
        os.replace(tmp, os.path.join(folder, f"{cid}.result.json"))
        _emit("END", cid)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
