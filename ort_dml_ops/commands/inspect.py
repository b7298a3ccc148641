"""`ort-dml-ops inspect MODEL [--target dml|cuda|cpu] [--json]`."""

from __future__ import annotations

import argparse

EPILOG = """\
examples:
  ort-dml-ops inspect model.onnx                  # summary + the nodes that leave the DML EP, and why
  ort-dml-ops inspect model.onnx --all            # every node: provider, reason, what ORT removed
  ort-dml-ops inspect model.onnx --target cuda
  ort-dml-ops inspect model.onnx --json > placement.json

The JSON is {"target", "nodes": [{"name", "op_type", "domain", "since_version", "provider",
"reason", ...}, ...], "summary": {"gpu_nodes", "cpu_nodes", "copies", ...}, "copy_nodes"}; see
docs/inspect.md.
"""


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "inspect",
        help="predict where ONNX Runtime runs each node (DML, CUDA or CPU EP) and why",
        description="Predict, node by node, which execution provider ONNX Runtime gives each node of "
        "MODEL on the target, why a node leaves the GPU, and how many device<->host copies "
        "that costs. Works on any OS: no GPU or DirectML needed.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("model", metavar="MODEL", help="path to an .onnx model")
    p.add_argument(
        "--target",
        choices=("dml", "cuda", "webgpu", "cpu"),
        default="dml",
        help="execution provider to model (default: dml = onnxruntime-directml 1.24.4)",
    )
    p.add_argument(
        "--json", action="store_true", help="print the report as one JSON object"
    )
    p.add_argument(
        "--all",
        action="store_true",
        help="list every node (default: only the nodes off the GPU)",
    )
    p.set_defaults(func=run)


def run(args) -> int:
    from ..inspection import inspect

    report = inspect(args.model, target=args.target)
    print(report.to_json() if args.json else report.to_text(all_nodes=args.all))
    return 0
