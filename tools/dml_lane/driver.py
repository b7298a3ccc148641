"""The DML lane's driver, host side: run models on the real DirectML EP (onnxruntime-directml
under Wine).

    from dml_lane.driver import lane_available, run_cases, Case, CaseResult   # tools/ on sys.path

    ok, why = lane_available()
    results = run_cases([Case("cumsum", model, {"x": x})])
    results[0].ok, results[0].outputs, results[0].placement   # {"node name": "DmlExecutionProvider"}

The lane itself is set up by `make dml-lane` (tools/dml_lane/setup.sh; docs/dml-lane.md): Wine 8
with Wine 10's Direct3D 12 stack (vkd3d 1.14, patched), `VKD3D_CONFIG` empty. Each batch of at
most `sessions_per_process` cases runs in one fresh Windows CPython process: every DML session
keeps ~0.5 GB of shared memory (lavapipe's device memory) until its process exits, so the
batch size bounds the memory. Cases and results travel as files (.onnx, .npz, .json) in a
temporary folder; the guest imports this very package (a folder linking to it is put first on its
sys.path), so a checkout's live working tree and an installed package both work.

This file and guest.py are not part of the installed package: `make dml-lane` (or
`make dml-lane-driver`) copies them into the lane (<lane>/driver/), where
`ort_dml_ops.dml_lane.load_driver()` finds them for `ort-dml-ops check`; tests and tools import
them from tools/dml_lane/. Finding the lane and judging it ready is `ort_dml_ops.dml_lane`'s job.

Placement comes from ONNX Runtime itself: its assignment record
(`session.record_ep_graph_assignment_info`, read with `get_provider_graph_assignment_info()`),
which names the original nodes, also those inside a `DmlFusedNode_*` partition (graph fusion is
on, as for users). Copies: the Memcpy nodes ORT logs when it inserts them, and the Memcpy
kernels that ran per ORT's profile. When there is no record (the session was not created), the
verbose "Node placements" log is read instead, attributed to the case by the session log id.
Sessions are created with graph_optimization_level ORT_DISABLE_ALL unless the case says
otherwise (single-op cases keep every node); `session_options={"graph_optimization_level":
"ORT_ENABLE_ALL"}` is what users get. See docs/dml-lane.md.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

import ort_dml_ops
from ort_dml_ops.dml_lane import lane_available, lane_dir

__all__ = [
    "Case",
    "CaseResult",
    "lane_available",
    "lane_dir",
    "parse_placements",
    "run_cases",
]

DML = "DmlExecutionProvider"
CPU = "CPUExecutionProvider"
_PROVIDERS = {"dml": "dml", DML.lower(): "dml", "cpu": "cpu", CPU.lower(): "cpu"}
_GUEST = Path(__file__).with_name("guest.py")
_PACKAGE = (
    Path(ort_dml_ops.__file__).resolve().parent
)  # the ort_dml_ops the guest must import
_MARK = "@@ortdmlops-lane"


@dataclass
class Case:
    """One (model, inputs) pair to run on the lane.

    provider: "dml" (DmlExecutionProvider, device 0) or "cpu" (the CPU EP of the same
    onnxruntime-directml build). use_fallback: create the session through
    `ort_dml_ops.InferenceSession` (the Python fallback custom ops registered).
    session_options: SessionOptions attributes by name (e.g. {"graph_optimization_level":
    "ORT_ENABLE_ALL"}), plus "config": {key: value} session config entries (e.g.
    {"ep.dml.disable_graph_fusion": "1"}), "provider_options": extra DML EP options, and
    "timed_runs": that many runs after the first, timed (`CaseResult.run_s`; set
    "enable_profiling": False with it, so that the profiler's events are not timed too).
    """

    name: str
    model: Any  # onnx.ModelProto | bytes
    inputs: dict[str, np.ndarray]
    provider: str = "dml"
    use_fallback: bool = False
    session_options: dict | None = None


@dataclass
class CaseResult:
    name: str
    ok: bool
    error: str | None
    outputs: list[np.ndarray] | None
    providers: list[str]
    placement: dict[
        str, str
    ]  # ORIGINAL node name -> DmlExecutionProvider | CPUExecutionProvider
    #: Memcpy nodes ORT inserted, as it logs them ("MemcpyFromHost after s for DmlExecutionProvider")
    copies: list[str] = field(default_factory=list)
    #: DmlFusedNode_* partitions ORT reported (its log, else the kernels that ran per its profile)
    fused: list[str] = field(default_factory=list)
    #: ORT's assignment record: (provider, node name, op_type, domain) for every node it placed,
    #: including nodes that graph optimizations created (empty when no session was created)
    assignment: list[tuple[str, str, str, str]] = field(default_factory=list)
    #: Memcpy nodes that ran, per ORT's profile (`*_kernel_time` events of Memcpy kernels)
    memcpy: list[str] = field(default_factory=list)
    #: original nodes whose placement could not be read (only possible with optimizations on)
    unresolved: list[str] = field(default_factory=list)
    #: where it failed: options | session | providers | run | crash | done
    stage: str = ""
    session_s: float | None = None
    run_s: float | None = None  # median of the timed runs (session_options timed_runs)
    log: str = ""  # this case's part of ORT's log (noise removed)

    def on(self, provider: str = DML) -> list[str]:
        """Original node names placed on `provider`."""
        return sorted(n for n, p in self.placement.items() if p == provider)


# --------------------------------------------------------------------------- array transport


def _save_arrays(path: Path, arrays: dict[str, np.ndarray]) -> dict[str, str]:
    tags, store = {}, {}
    for k, a in arrays.items():
        a = np.asarray(a)
        if a.dtype.kind == "V" or type(a.dtype).__module__.startswith("ml_dtypes"):
            tags[k] = a.dtype.name
            a = a.view(f"u{a.dtype.itemsize}")
        store[k] = a
    np.savez(path, **store)
    return tags


def _load_outputs(path: Path, tags: list) -> list[np.ndarray]:
    out = []
    with np.load(path, allow_pickle=False) as z:
        for i, tag in enumerate(tags):
            a = z[f"o{i}"]
            if tag:
                import ml_dtypes

                a = a.view(getattr(ml_dtypes, tag))
            out.append(a)
    return out


def _model_bytes(model: Any) -> tuple[bytes, list[str]]:
    """Serialized model (IR version made loadable) and its top-level node names."""
    import onnx

    if isinstance(model, (bytes, bytearray, memoryview)):
        proto = onnx.ModelProto()
        proto.ParseFromString(bytes(model))
    elif isinstance(model, onnx.ModelProto):
        proto = onnx.ModelProto()
        proto.CopyFrom(model)  # never touch the caller's model
    else:
        raise TypeError(
            f"Case.model must be an onnx.ModelProto or bytes, not {type(model).__name__}"
        )
    from ort_dml_ops.modelio import fix_ir_version

    fix_ir_version(proto)
    names = [n.name for n in proto.graph.node]
    return proto.SerializeToString(), names


# --------------------------------------------------------------------------- log parsing

_LINE = re.compile(r"\[([VIWEF]):onnxruntime:([^,\]]*),\s*([^\]]*)\]\s?(.*)$")
_PLACED = re.compile(
    r"^\s*(?:Node\(s\)|All nodes) placed on \[(\w+)\]\. Number of nodes: (\d+)"
)
_NODE = re.compile(r"^\s{2,}(\S+) \((.*)\)\s*$")
_COPY = re.compile(r"Add (Memcpy\w+ (?:after|before) .* for \w+)\s*$")
_NOISE = ("GraphTransformer ", "SaveMLValueNameIndexMapping", "Done saving OrtValue")


def parse_placements(log_lines: list[str]) -> tuple[dict[str, str], list[str], bool]:
    """ORT's "Node placements" block -> ({logged node name: provider}, copies, all_on_one).

    `log_lines` are the message parts of one session's log lines.
    """
    placed: dict[str, str] = {}
    copies: list[str] = []
    current = None
    all_on: str | None = None
    for msg in log_lines:
        m = _COPY.search(msg)
        if m:
            copies.append(m.group(1))
            continue
        m = _PLACED.match(msg)
        if m:
            current = m.group(1)
            if msg.lstrip().startswith("All nodes"):
                all_on = current
            continue
        if current is not None:
            m = _NODE.match(msg)
            if m:
                placed[m.group(2)] = current
                continue
            if msg.strip() and not msg.startswith("  "):
                current = None
    return placed, copies, all_on


def _split_log(text: str) -> dict[str, list[str]]:
    """Combined guest output -> {case id: [ORT log messages of that case's session]}."""
    per: dict[str, list[str]] = {}
    for line in text.splitlines():
        m = _LINE.search(line)
        if not m:
            continue
        logid = m.group(2).strip()
        if logid.startswith("case"):
            per.setdefault(logid[4:], []).append(m.group(4))
    return per


def _resolve(
    node_names: list[str],
    placed: dict[str, str],
    all_on: str | None,
    opt_disabled: bool,
):
    placement: dict[str, str] = {}
    unresolved: list[str] = []
    fused = sorted(n for n in placed if n.startswith("DmlFusedNode_"))
    for n in node_names:
        if n in placed:
            placement[n] = placed[n]
        elif all_on is not None and not placed:
            placement[n] = all_on
        elif fused and opt_disabled:
            # With graph optimizations off, DML graph fusion is the only transform that removes
            # an original node: it went into one of the DmlFusedNode_* partitions.
            placement[n] = DML
        else:
            unresolved.append(n)
    return placement, unresolved, fused


# --------------------------------------------------------------------------- running


def guest_import_root(folder: Path) -> Path:
    """A folder holding only `ort_dml_ops` (a link to this package): the guest's first sys.path
    entry. Never the package's parent, which for an installed package is the host's
    site-packages (Linux builds of numpy and onnxruntime the Windows guest must not import)."""
    root = folder / "guest_path"
    if not root.is_dir():
        root.mkdir()
        (root / "ort_dml_ops").symlink_to(_PACKAGE, target_is_directory=True)
    return root


def _run_chunk(w: Path, folder: Path, chunk: list[tuple[str, dict]]) -> tuple[str, int]:
    manifest = folder / f"manifest_{chunk[0][0]}.json"
    manifest.write_text(json.dumps({"cases": [c for _, c in chunk]}))
    env = dict(os.environ)
    env["DML_LANE_PYTHONPATH"] = str(guest_import_root(folder))
    per_process = 120 + 180 * len(chunk)
    env.setdefault("DML_LANE_TIMEOUT", str(per_process))
    try:
        proc = subprocess.run(
            [str(w / "run.sh"), str(_GUEST), str(manifest)],
            check=False,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=env,
            timeout=per_process + 3600,
        )  # the lock may make us wait for another run
        out, rc = proc.stdout, proc.returncode
    except subprocess.TimeoutExpired as exc:
        out, rc = exc.stdout or b"", 124
    return out.replace(b"\0", b"").decode("utf-8", "replace"), rc


def run_cases(cases: list[Case], *, sessions_per_process: int = 4) -> list[CaseResult]:
    """Run every case on the lane; results in the order of `cases`.

    A case fails (ok=False, with `error` and `stage`) when its session cannot be created, when
    the session did not get the requested EP first in get_providers(), when the run raises, or
    when the guest process dies under it (the rest of that batch is retried in a new process).
    """
    ready, why = lane_available()
    if not ready:
        raise RuntimeError(why)
    w = lane_dir()
    sessions_per_process = max(1, int(sessions_per_process))
    results: dict[str, CaseResult] = {}
    with tempfile.TemporaryDirectory(prefix="ortdmlops-lane-") as tmp:
        folder = Path(tmp)
        specs: list[tuple[str, dict]] = []
        meta: dict[str, tuple[Case, list[str], bool]] = {}
        for i, case in enumerate(cases):
            cid = f"{i:04d}"
            provider = _PROVIDERS.get(str(case.provider).lower())
            if provider is None:
                results[cid] = CaseResult(
                    case.name,
                    False,
                    f"unknown provider {case.provider!r}",
                    None,
                    [],
                    {},
                    stage="options",
                )
                continue
            try:
                data, names = _model_bytes(case.model)
            except Exception as exc:  # noqa: BLE001
                results[cid] = CaseResult(
                    case.name, False, f"bad model: {exc}", None, [], {}, stage="options"
                )
                continue
            (folder / f"{cid}.onnx").write_bytes(data)
            tags = _save_arrays(folder / f"{cid}.in.npz", case.inputs)
            opts = dict(case.session_options or {})
            level = opts.get("graph_optimization_level", "ORT_DISABLE_ALL")
            opt_disabled = level in ("ORT_DISABLE_ALL", 0)
            specs.append(
                (
                    cid,
                    {
                        "id": cid,
                        "name": case.name,
                        "model": f"{cid}.onnx",
                        "inputs": f"{cid}.in.npz",
                        "input_dtypes": tags,
                        "provider": provider,
                        "use_fallback": bool(case.use_fallback),
                        "session_options": opts,
                    },
                )
            )
            meta[cid] = (case, names, opt_disabled)

        pending = list(specs)
        start_retries = 1
        while pending:
            chunk, pending = (
                pending[:sessions_per_process],
                pending[sessions_per_process:],
            )
            text, rc = _run_chunk(w, folder, chunk)
            if (
                rc != 0
                and not text.strip()
                and start_retries
                and not any(
                    (folder / f"{cid}.result.json").exists() for cid, _ in chunk
                )
            ):
                # The guest died before it said anything: Wine did not start (seen once under
                # `make test`'s load, rc=1 with no output; the same cases passed alone), which
                # is no case's fault. Once per batch the chunk runs again; a second silent
                # death is blamed on its first case as below.
                start_retries -= 1
                pending = chunk + pending
                continue
            logs = _split_log(text)
            done_ids = []
            for cid, _ in chunk:
                rpath = folder / f"{cid}.result.json"
                case, names, opt_disabled = meta[cid]
                if not rpath.exists():
                    continue
                done_ids.append(cid)
                r = json.loads(rpath.read_text())
                msgs = logs.get(cid, [])
                placed, copies, all_on = parse_placements(msgs)
                placement, unresolved, fused = _resolve(
                    names, placed, all_on, opt_disabled
                )
                assignment = [tuple(a) for a in r.get("assignment") or []]
                kernels = r.get("kernels") or []
                fused = fused or sorted(
                    n for n, _ in kernels if n.startswith("DmlFusedNode_")
                )
                if assignment:  # ORT's own record wins over the log
                    recorded = {a[1]: a[0] for a in assignment}
                    placement = {n: recorded[n] for n in names if n in recorded}
                    unresolved = [n for n in names if n not in recorded]
                outputs = None
                if r.get("ok"):
                    outputs = _load_outputs(
                        folder / r["outputs_file"], r["output_dtypes"]
                    )
                error = r.get("error")
                if error and r.get("stage") == "session":
                    err_lines = [
                        m for m in msgs if "Exception" in m or "error" in m.lower()
                    ]
                    if err_lines:
                        error = error + "\n" + err_lines[-1][:2000]
                results[cid] = CaseResult(
                    name=case.name,
                    ok=bool(r.get("ok")),
                    error=error,
                    outputs=outputs,
                    providers=r.get("providers") or [],
                    placement=placement if r.get("ok") or placed else {},
                    copies=copies,
                    fused=fused,
                    unresolved=unresolved if r.get("ok") else [],
                    assignment=assignment,
                    memcpy=[n for n, op in kernels if op.startswith("Memcpy")],
                    stage=r.get("stage", ""),
                    session_s=r.get("session_s"),
                    run_s=r.get("run_s"),
                    log="\n".join(m for m in msgs if not m.startswith(_NOISE)),
                )
            if len(done_ids) < len(chunk):
                # The guest died: the first unfinished case is the culprit; retry the others.
                rest = [s for s in chunk if s[0] not in done_ids]
                bad, rest = rest[0], rest[1:]
                case = meta[bad[0]][0]
                tail = "\n".join(text.strip().splitlines()[-15:])
                results[bad[0]] = CaseResult(
                    case.name,
                    False,
                    f"guest process died while running this case (rc={rc}):\n{tail}",
                    None,
                    [],
                    {},
                    stage="crash",
                    log=tail,
                )
                pending = rest + pending
    return [results[f"{i:04d}"] for i in range(len(cases))]
