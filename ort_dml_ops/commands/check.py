"""`ort-dml-ops check MODEL`: run a model on the real DirectML EP from Linux, through the DML lane.

The lane (optional; `make dml-lane` in a checkout, docs/dml-lane.md) runs the Windows build
onnxruntime-directml under Wine; its driver is installed in the lane, not in this package
(ort_dml_ops/dml_lane.py finds it). The model runs there as a user runs it (ORT's default session
options: graph optimizations and DML graph fusion on). Printed: where each node ran, per ONNX
Runtime's own assignment record (`session.record_ep_graph_assignment_info`); how many Memcpy
nodes ran, per ORT's profile; and every output against the CPU EP of this machine's onnxruntime
(a different build: an independent reference). Exit 0 when the model ran on the DML EP and every
output matches within the tolerance; 1 otherwise (one line on stderr says why).

A pass is evidence, not proof: the lane's Direct3D 12 is vkd3d on a CPU Vulkan driver, not a GPU
(docs/dml-lane.md, "What differs from hardware").
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from ..errors import UserError
from ..feeds import add_feed_arguments

EXAMPLE = "example: ort-dml-ops check model.onnx --random-inputs"
DML = "DmlExecutionProvider"
CPU = "CPUExecutionProvider"


def add_parser(sub) -> None:
    p = sub.add_parser(
        "check",
        help="run a model on the real DirectML EP through the DML lane (Linux)",
        description=__doc__,
        epilog=EXAMPLE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("model", help="path of the .onnx model")
    add_feed_arguments(p)
    p.add_argument(
        "--rtol",
        type=float,
        default=1e-3,
        help="relative tolerance against the CPU EP (default 1e-3)",
    )
    p.add_argument(
        "--atol",
        type=float,
        default=1e-4,
        help="absolute tolerance against the CPU EP (default 1e-4)",
    )
    p.add_argument("--json", action="store_true", help="print the record as JSON")
    p.set_defaults(func=check)


def check(args) -> int:
    from ..dml_lane import LaneUnavailable, load_driver

    try:
        lane = load_driver()
    except LaneUnavailable as exc:
        raise UserError(
            f"the DML lane is needed to run on the real DirectML EP: {exc}; see docs/dml-lane.md"
        ) from None
    model_path = Path(args.model)
    if not model_path.is_file():
        raise UserError(f"{args.model}: no such file")
    from ..progress import Progress

    with Progress(f"check {model_path.name}", json=args.json) as progress:
        progress.step("CPU reference")
        model, uses_domain = _load(model_path)
        feeds, reference, output_names = _cpu_reference(model_path, args)
        progress.step("running on the DML lane (Wine)")
        [r] = lane.run_cases(
            [
                lane.Case(
                    model_path.name,
                    model,
                    feeds,
                    use_fallback=uses_domain,
                    session_options={"graph_optimization_level": "ORT_ENABLE_ALL"},
                )
            ]
        )
    if not r.ok:
        first = next(
            (ln for ln in (r.error or "").splitlines() if ln.strip()), "no error text"
        )
        raise UserError(
            f"{args.model}: the DirectML EP failed ({r.stage}): {first[:300]}"
        )
    if not r.providers or r.providers[0] != DML:
        raise UserError(
            f"{args.model}: the session did not get the DirectML EP (providers {r.providers})"
        )
    rows = _compare(output_names, r.outputs, reference, args.rtol, args.atol)
    if args.json:
        print(
            json.dumps(
                {
                    "model": str(model_path),
                    "providers": r.providers,
                    "nodes": [
                        {"name": n, "op_type": op, "domain": d, "provider": ep}
                        for ep, n, op, d in r.assignment
                    ],
                    "memcpy": r.memcpy,
                    "fused_partitions": r.fused,
                    "outputs": rows,
                    "ok": all(row["ok"] for row in rows),
                }
            )
        )
    else:
        _print_report(model_path, r, rows, args)
    bad = [row["name"] for row in rows if not row["ok"]]
    if bad:
        raise UserError(
            f"{args.model}: outputs differ from the CPU EP beyond rtol {args.rtol}, atol {args.atol}: "
            f"{', '.join(bad)}"
        )
    return 0


def _load(path: Path):
    from .._domain import DOMAIN
    from ..modelio import load_model

    model = load_model(path)
    return model, any(i.domain == DOMAIN for i in model.opset_import)


def _cpu_reference(path: Path, args):
    """Feeds, the CPU EP's outputs and the output names, from this machine's onnxruntime."""
    import onnxruntime as ort

    from ..feeds import build_feeds, parse_input_args
    from ..session import InferenceSession

    so = ort.SessionOptions()
    so.log_severity_level = 4  # its exception says it all
    try:
        session = InferenceSession(str(path), providers=["cpu"], sess_options=so)
    except Exception as exc:  # noqa: BLE001 - an unloadable model is the user's problem, in one line
        raise UserError(
            f"{args.model}: ONNX Runtime cannot load it: {str(exc).splitlines()[0][:300]}"
        ) from None
    feeds = build_feeds(session, parse_input_args(args.input), args.random_inputs)
    try:
        outputs = session.run(None, feeds)
    except Exception as exc:  # noqa: BLE001
        raise UserError(
            f"{args.model}: the CPU EP reference run failed: {str(exc).splitlines()[0][:300]}"
        ) from None
    return feeds, outputs, [o.name for o in session.get_outputs()]


def _compare(names, got, want, rtol, atol) -> list[dict]:
    rows = []
    for name, g, w in zip(names, got, want):
        g, w = np.asarray(g), np.asarray(w)
        row = {
            "name": name,
            "dtype": str(g.dtype),
            "shape": list(g.shape),
            "max_abs_diff": None,
            "ok": False,
        }
        if g.shape == w.shape and g.dtype == w.dtype:
            if g.size:
                with np.errstate(invalid="ignore"):
                    diff = np.abs(g.astype(np.float64) - w.astype(np.float64))
                row["max_abs_diff"] = (
                    float(np.nanmax(diff)) if not np.isnan(diff).all() else 0.0
                )
            row["ok"] = bool(
                np.allclose(
                    g.astype(np.float64),
                    w.astype(np.float64),
                    rtol=rtol,
                    atol=atol,
                    equal_nan=True,
                )
            )
        else:
            row["problem"] = (
                f"got {g.dtype}{list(g.shape)}, the CPU EP {w.dtype}{list(w.shape)}"
            )
        rows.append(row)
    return rows


def _print_report(path, r, rows, args) -> None:
    import onnxruntime as ort

    by_ep: dict[str, list] = {}
    for ep, name, op, _ in r.assignment:
        by_ep.setdefault(ep, []).append(f"{op} ({name})")
    print(
        f"{path}: on the real DirectML EP (onnxruntime-directml in the DML lane; ORT's default options, "
        f"graph fusion on)"
    )
    print("where each node ran (ONNX Runtime's assignment record):")
    for ep in sorted(by_ep, key=lambda e: (e != DML, e)):
        nodes = by_ep[ep]
        listed = (
            ""
            if ep == DML
            else ": "
            + ", ".join(nodes[:20])
            + (f", ... {len(nodes) - 20} more" if len(nodes) > 20 else "")
        )
        print(f"  {ep}: {len(nodes)} node{'s' if len(nodes) != 1 else ''}{listed}")
    print(
        f"copies: {len(r.memcpy)} Memcpy node{'s' if len(r.memcpy) != 1 else ''} ran"
        + (f" ({', '.join(r.memcpy)})" if r.memcpy else "")
    )
    print(
        f"outputs vs the CPU EP (onnxruntime {ort.__version__} on this machine; rtol {args.rtol}, atol {args.atol}):"
    )
    for row in rows:
        diff = (
            ""
            if row["max_abs_diff"] is None
            else f"max |diff| {row['max_abs_diff']:.3g}"
        )
        print(
            f"  {row['name']}: {row['dtype']} {row['shape']} {row.get('problem', diff)}: "
            f"{'ok' if row['ok'] else 'DIFFERENT'}"
        )
