"""Ground truth for placement: ONNX Runtime's own record of where each node went, on the DML lane.

    from dml_lane.truth import record          # tools/ on sys.path (tools/record_placement.py)
    [t] = record([("xlmr", "model.onnx", None)])          # runs onnxruntime-directml 1.24.4 in Wine
    t["nodes"]      # {node name: "DmlExecutionProvider" | "CPUExecutionProvider"}, from
                    #   InferenceSession.get_provider_graph_assignment_info()
    t["memcpy"]     # the Memcpy nodes that ran (profile events), after one complete run
    t["memcpy_logged"]  # the copies ORT logged adding at session creation (also when run fails)

The session is created with ORT's default options (graph optimizations on, DML graph fusion on
unless ``fusion=False``) plus ``session.record_ep_graph_assignment_info`` = "1" and profiling;
the guest side is ``truth_guest.py``. ORT records the assignment when its graph partitioner
assigns nodes (after the level-1 optimizers, before the level-2/3 fusions), so the record names
the nodes a user's model has at that point, including nodes ORT added itself.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from .driver import guest_import_root

GUEST = Path(__file__).with_name("truth_guest.py")
_COPY_LOG = re.compile(
    r"\[I:onnxruntime:truth(\d+),[^\]]*\]\s*Add (Memcpy\w+) (after|before) (.*) for (\w+)\s*$"
)


def _model_bytes(model) -> bytes:
    import onnx

    from ort_dml_ops.modelio import fix_ir_version

    if isinstance(model, (str, os.PathLike)):
        proto = onnx.load(str(model))
    elif isinstance(model, (bytes, bytearray)):
        proto = onnx.ModelProto()
        proto.ParseFromString(bytes(model))
    else:
        proto = onnx.ModelProto()
        proto.CopyFrom(model)
    fix_ir_version(proto)
    return proto.SerializeToString()


def flatten(result: dict) -> dict:
    """{node name: EP} from a result's assignment record (subgraphs in ORT's order)."""
    out = {}
    for sg in result.get("assignment") or ():
        for n in sg["nodes"]:
            out[n["name"]] = sg["ep"]
    return out


def record(
    models,
    provider: str = "dml",
    *,
    fusion: bool = True,
    sessions_per_process: int | None = None,
    dynamic_dim: int = 2,
    optimization: str | None = None,
    use_fallback=None,
) -> list[dict]:
    """Record the truth for each (name, model, inputs-or-None); one dict per model, in order.

    `inputs`: {input name: array} (missing inputs get seeded random values with symbolic
    dimensions set to `dynamic_dim`). A model whose guest process dies is reported with
    ``stage="crash"``; the others of its batch are retried in a new process. `use_fallback`: one
    bool per model: create its session through ``ort_dml_ops.InferenceSession`` (models using the
    project's custom-op domain).
    """
    from ort_dml_ops.dml_lane import lane_available, lane_dir

    ready, why = lane_available()
    if not ready:
        raise RuntimeError(why)
    per = sessions_per_process or int(os.environ.get("DML_LANE_SESSIONS", "4"))
    config = {} if fusion else {"ep.dml.disable_graph_fusion": "1"}
    results: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="ortdmlops-truth-") as tmp:
        folder = Path(tmp)
        specs = []
        for i, (name, model, inputs) in enumerate(models):
            mid = f"{i:04d}"
            (folder / f"{mid}.onnx").write_bytes(_model_bytes(model))
            spec = {
                "id": mid,
                "name": name,
                "model": f"{mid}.onnx",
                "provider": provider,
                "config": config,
                "dynamic_dim": dynamic_dim,
                "graph_optimization_level": optimization,
                "use_fallback": bool(use_fallback[i]) if use_fallback else False,
            }
            if inputs:
                np.savez(
                    folder / f"{mid}.in.npz",
                    **{k: np.asarray(v) for k, v in inputs.items()},
                )
                spec["inputs"] = f"{mid}.in.npz"
            specs.append(spec)
        pending = specs
        while pending:
            chunk, pending = pending[:per], pending[per:]
            text = _run(lane_dir(), folder, chunk)
            tail = "\n".join(text.strip().splitlines()[-15:])
            logged: dict = {}
            for line in text.splitlines():
                m = _COPY_LOG.search(line)
                if m:
                    logged.setdefault(m.group(1), []).append(
                        {"op_type": m.group(2), "value": m.group(4)}
                    )
            done = []
            for spec in chunk:
                p = folder / f"{spec['id']}.truth.json"
                if p.exists():
                    r = json.loads(p.read_text())
                    r["nodes"] = flatten(r)
                    r["memcpy_logged"] = logged.get(spec["id"], [])
                    results[spec["id"]] = r
                    done.append(spec["id"])
            rest = [s for s in chunk if s["id"] not in done]
            if rest:  # the guest died on rest[0]; retry the others
                bad = rest[0]
                results[bad["id"]] = {
                    "name": bad["name"],
                    "ok": False,
                    "stage": "crash",
                    "error": f"guest process died:\n{tail}",
                    "nodes": {},
                }
                pending = rest[1:] + pending
    return [results[s["id"]] for s in specs]


def _run(lane: Path, folder: Path, chunk: list) -> str:
    manifest = folder / f"manifest_{chunk[0]['id']}.json"
    manifest.write_text(json.dumps({"models": chunk}))
    env = dict(os.environ)
    env["DML_LANE_PYTHONPATH"] = str(guest_import_root(folder))  # for use_fallback
    env.setdefault("DML_LANE_TIMEOUT", str(120 + 300 * len(chunk)))
    try:
        proc = subprocess.run(
            [str(lane / "run.sh"), str(GUEST), str(manifest)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=env,
            timeout=7200,
            check=False,
        )  # a failing guest is read from its result files
        out = proc.stdout
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout or b""
    return out.replace(b"\0", b"").decode("utf-8", "replace")
