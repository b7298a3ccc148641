#!/usr/bin/env python3
"""Record ONNX Runtime's real placement of a model on the DML lane, as JSON.

    python tools/record_placement.py MODEL.onnx [MODEL2.onnx ...] [--provider dml|cpu]
        [--inputs INPUTS.npz] [--no-fusion] [-o OUT.json]

For each model: onnxruntime-directml 1.24.4 (Wine lane, docs/dml-lane.md) creates a session with
``session.record_ep_graph_assignment_info`` = "1", and the tool prints ORT's assignment record
(``get_provider_graph_assignment_info()``: every node the partitioner assigned, with its EP) and
the Memcpy nodes that ran in one complete run (profile ``*_kernel_time`` events). Inputs come
from --inputs (an .npz by input name), else seeded random values (symbolic dimensions = 2).
Batches of DML_LANE_SESSIONS (default 4) models share one guest process.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("models", nargs="+", type=Path)
    ap.add_argument("--provider", choices=("dml", "cpu"), default="dml")
    ap.add_argument("--inputs", type=Path, help=".npz of input arrays (applies to every model)")
    ap.add_argument("--no-fusion", action="store_true", help="ep.dml.disable_graph_fusion=1")
    ap.add_argument("-o", "--out", type=Path)
    args = ap.parse_args(argv)
    import numpy as np

    from ort_dml_ops.placement.truth import record

    for m in args.models:
        if not m.is_file():
            print(f"record_placement: {m}: no such file", file=sys.stderr)
            return 2
    inputs = None
    if args.inputs:
        with np.load(args.inputs, allow_pickle=False) as z:
            inputs = {k: z[k] for k in z.files}
    try:
        results = record([(str(m), m, inputs) for m in args.models], args.provider, fusion=not args.no_fusion)
    except RuntimeError as exc:
        print(f"record_placement: {exc}", file=sys.stderr)
        return 1
    text = json.dumps(results if len(results) > 1 else results[0], indent=1)
    if args.out:
        tmp = args.out.with_suffix(args.out.suffix + ".tmp")
        tmp.write_text(text + "\n")
        tmp.replace(args.out)
    else:
        print(text)
    return 0 if all(r["ok"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
