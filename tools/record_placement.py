#!/usr/bin/env python3
"""Record ONNX Runtime's real placement of models on the DML lane, as JSON.

    python tools/record_placement.py [MODEL.onnx ...] [--zoo] [--provider dml|cpu]
        [--inputs INPUTS.npz] [--fusion] [-o OUT.json]

For each model: onnxruntime-directml 1.24.4 (Wine lane, docs/dml-lane.md) creates a session with
ORT's default options plus ``session.record_ep_graph_assignment_info`` = "1", and the tool writes
ORT's assignment record (``get_provider_graph_assignment_info()``: every node the partitioner
assigned, with its EP, as "nodes" and "assignment") and the Memcpy nodes that ran in one complete
run (profile ``*_kernel_time`` events, "memcpy"; the copies ORT logged adding at session
creation are "memcpy_logged"). Inputs come from --inputs (an .npz by input name), else seeded
random values (symbolic dimensions = 2). --zoo adds the zoo's unconverted models with their
example inputs (named zoo/<name>). DML graph fusion is off unless --fusion (the emulator
crashes on large fused graphs; fusion runs after partitioning). Batches of DML_LANE_SESSIONS
(default 4) models share one guest process.

Output: {"how": the command, "models": {name: record}}; a model's name is its path relative to
the output file's folder (or as given, without -o). Exit 1 when a model fails on the lane.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("models", nargs="*", type=Path)
    ap.add_argument(
        "--zoo", action="store_true", help="also record the zoo's unconverted models"
    )
    ap.add_argument("--provider", choices=("dml", "cpu"), default="dml")
    ap.add_argument(
        "--inputs", type=Path, help=".npz of input arrays (for every MODEL)"
    )
    ap.add_argument("--fusion", action="store_true", help="leave DML graph fusion on")
    ap.add_argument("-o", "--out", type=Path)
    args = ap.parse_args(argv)
    if not args.models and not args.zoo:
        ap.error("give a MODEL or --zoo")
    for m in args.models:
        if not m.is_file():
            print(f"record_placement: {m}: no such file", file=sys.stderr)
            return 2
    import numpy as np

    from ort_dml_ops import DOMAIN, zoo

    sys.path.insert(
        0, str(Path(__file__).resolve().parent)
    )  # tools/: the dml_lane package
    from dml_lane.truth import record

    inputs = None
    if args.inputs:
        try:
            with np.load(args.inputs, allow_pickle=False) as z:
                inputs = {k: z[k] for k in z.files}
        except (OSError, ValueError) as exc:
            print(
                f"record_placement: {args.inputs}: not an .npz of arrays ({exc})",
                file=sys.stderr,
            )
            return 2
    base = args.out.resolve().parent if args.out else None
    items, fallback = [], []
    for m in args.models:
        name = os.path.relpath(m.resolve(), base) if base else str(m)
        items.append((name, m, inputs))
        fallback.append(False)
    if args.zoo:
        for z in zoo.models():
            model = z.load_model()
            items.append((f"zoo/{z.name}", model, z.inputs()))
            fallback.append(any(i.domain == DOMAIN for i in model.opset_import))
    try:
        results = record(
            items, args.provider, fusion=args.fusion, use_fallback=fallback
        )
    except RuntimeError as exc:
        print(f"record_placement: {exc}", file=sys.stderr)
        return 1
    for r in results:
        r.pop("traceback", None)
    how = "python tools/record_placement.py " + " ".join(
        argv if argv is not None else sys.argv[1:]
    )
    text = json.dumps(
        {"how": how, "models": {name: r for (name, _, _), r in zip(items, results)}},
        indent=1,
    )
    if args.out:
        tmp = args.out.with_suffix(args.out.suffix + ".tmp")
        tmp.write_text(text + "\n")
        tmp.replace(args.out)
    else:
        print(text)
    bad = [name for (name, _, _), r in zip(items, results) if not r["ok"]]
    for name in bad:
        print(f"record_placement: {name}: failed on the lane", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
