"""Record what the WebGPU plugin EP does with each case of cases.py: which EP ORT's assignment
record names for the node, and which int64 parameter inputs its kernel reads in CPU memory (see
cases.py for the method).

    import sys; sys.path.insert(0, "tools")
    from webgpu_lane import record as R
    rows = [R.record_case(c) for c in R.cases(["CumSum"])]
"""

from __future__ import annotations

import json
import os
import tempfile

import onnx

from .cases import KNOWN_CPU_INPUTS, OPS, SWEPT, cases, since_versions
from .single_op import DTYPES, MAX_OPSET, MIN_OPSET, WEBGPU, OpCase, type_str

__all__ = [
    "DTYPES",
    "KNOWN_CPU_INPUTS",
    "MAX_OPSET",
    "MIN_OPSET",
    "OPS",
    "SWEPT",
    "WEBGPU",
    "OpCase",
    "cases",
    "memcpy_count",
    "open_session",
    "placement",
    "record_case",
    "record_cpu_inputs",
    "since_versions",
]


def placement(session) -> dict:
    """{node name: EP} from ORT's assignment record (record_ep_graph_assignment_info)."""
    return {
        n.name: sg.ep_name
        for sg in session.get_provider_graph_assignment_info()
        for n in sg.get_nodes()
    }


def open_session(model: onnx.ModelProto, profile: bool = False):
    import onnxruntime as ort

    from ort_dml_ops.session import InferenceSession

    so = ort.SessionOptions()
    so.log_severity_level = 4
    so.add_session_config_entry("session.record_ep_graph_assignment_info", "1")
    if profile:
        so.enable_profiling = True
        so.profile_file_prefix = os.path.join(
            tempfile.gettempdir(), f"ort_dml_ops_webgpu_{os.getpid()}"
        )
    return InferenceSession(
        model, providers=["WebGpuExecutionProvider"], sess_options=so
    )


def memcpy_count(session) -> int:
    """Memcpy kernels in the profile of the runs so far (ends profiling; removes the file)."""
    path = session.end_profiling()
    try:
        with open(path) as f:
            events = json.load(f)
    finally:
        os.unlink(path)
    return sum(
        1
        for e in events
        if e.get("cat") == "Node"
        and e["name"].endswith("_kernel_time")
        and str(e.get("args", {}).get("op_name", "")).startswith("Memcpy")
    )


def record_case(case: OpCase) -> dict:
    """{"case", "op", "since", "opset", "dtype", "label", "ep" | "error", "cpu_inputs"}."""
    row = {
        "case": case.name,
        "op": case.op,
        "domain": case.domain,
        "since": case.since_version(),
        "opset": case.opset,
        "dtype": case.dtype,
        "label": case.label,
        "attrs": {k: v for k, v in case.attrs.items() if isinstance(v, (int, str))},
    }
    model = case.model()
    try:
        onnx.checker.check_model(model, full_check=True)
    except Exception as exc:  # noqa: BLE001 - an invalid combination is not a kernel fact
        row["error"] = f"invalid model: {str(exc).splitlines()[0]}"
        return row
    try:
        sess = open_session(model)
    except Exception as exc:  # noqa: BLE001 - recorded, e.g. no kernel on any EP
        row["error"] = " ".join(str(exc).split())[:200]
        return row
    where = placement(sess)
    row["ep"] = _node_ep(where, "op")
    # moved to NHWC by ORT's layout transformation (renamed: see _node_ep)
    row["nhwc"] = row["ep"] is not None and "op" not in where
    row["bindings"] = _bindings(case)
    return row


def _node_ep(where: dict, name: str) -> str | None:
    """The EP of node `name`. ORT's layout transformation gives a node it moves to NHWC for the
    plugin (Conv, pools, BatchNormalization...) a new name, `name_token_<n>`
    (SwapNodeOpTypeAndDomain: Graph::GenerateNodeName), between two Transposes of its own."""
    if name in where:
        return where[name]
    renamed = [ep for n, ep in where.items() if n.startswith(f"{name}_token_")]
    return renamed[0] if len(renamed) == 1 else None


def record_cpu_inputs(case: OpCase) -> list[int]:
    """Indices of the int64 parameter inputs the EP's kernel reads in CPU memory (see module doc)."""
    out = []
    for j, i in enumerate(case.inputs):
        if not i.param:
            continue
        model = case.model(feed_params_from_cpu=i.name)
        sess = open_session(model, profile=True)
        where = placement(sess)
        if _node_ep(where, "op") != WEBGPU or where.get("cpu_mul") == WEBGPU:
            sess.end_profiling()
            continue
        sess.run(None, case.feeds(feed_params_from_cpu=i.name))
        if memcpy_count(sess) == 0:
            out.append(j)
    return out


def _bindings(case: OpCase) -> dict:
    """constraint name -> type string of the node's arguments (schema formal parameters), from
    onnx's schema or, for a contrib op, ORT's (targets/schemas.py reads either spelling)."""
    from ort_dml_ops.targets import schemas

    version = 1 if case.domain else case.opset
    formals, _, out_formals, _ = schemas.bindings(case.op, case.domain, version)
    allowed = schemas.allowed_types(case.op, case.domain, version)
    out: dict[str, str] = {}
    for ts, i in zip(formals, case.inputs):
        if i.name and ts in allowed:
            out.setdefault(ts, type_str(i.elem))
    if case.op == "Cast":
        out["T2"] = type_str(case.attrs["to"])
    if case.op == "ConstantOfShape":
        out["T2"] = type_str(case.dtype)
    if case.op == "If":
        out["V"] = type_str(case.dtype)
    for ts in out_formals:
        # outputs bound to a constraint of their own (IsNaN's T2 bool, Shape's T1 int64, ArgMax...)
        fixed = allowed.get(ts, ())
        if ts not in out and ts in ("T1", "T2", "T") and len(fixed) == 1:
            out[ts] = next(iter(fixed))
    return out
