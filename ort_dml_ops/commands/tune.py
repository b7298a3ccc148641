"""`ort-dml-ops tune MODEL -o OUT [--input NAME=FILE.npy ... | --random-inputs] [--provider] [--json]`."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ..errors import UserError
from ..feeds import add_feed_arguments

EPILOG = """\
examples:
  ort-dml-ops tune model.onnx -o model.tuned.onnx --input x=x.npy --input index=index.npy
  ort-dml-ops tune model.onnx -o out.onnx --random-inputs --provider webgpu --json

For every CumSum / CumProd / Scatter node of the main graph, each option (the EP's kernel or
ONNX Runtime's CPU kernel with its copies, each lowering) is timed on the provider at the sizes
the given inputs produce; OUT gets the fastest, is checked against MODEL on the CPU EP with the
same inputs, and is timed whole against MODEL. See docs/tune.md.
"""


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "tune",
        help="pick, per node, the option measured fastest on the provider",
        description="Time every option of every CumSum / CumProd / Scatter node on the provider "
        "with real inputs and write MODEL converted with the fastest to OUT (never over MODEL).",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("model", metavar="MODEL", help="path to an .onnx model")
    p.add_argument(
        "-o",
        "--output",
        required=True,
        metavar="OUT",
        help="where to write the tuned model",
    )
    add_feed_arguments(p)
    p.add_argument(
        "--provider",
        default="dml",
        help="dml, webgpu, cuda or cpu: where the model will run and the options are timed (default dml)",
    )
    p.add_argument(
        "--repeats",
        type=int,
        default=15,
        help="interleaved rounds per measurement; the median is kept (default 15)",
    )
    p.add_argument(
        "--inputs-on",
        choices=("device", "host"),
        default="device",
        help="where the timed nodes' inputs live: device (as inside the whole model; default) "
        "or host (every option then pays its inputs' upload; the DML lane needs it)",
    )
    p.add_argument("--report", metavar="FILE.json", help="also write the report here")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=run)


def run(args) -> int:
    from ..feeds import build_feeds, parse_input_args
    from ..modelio import load_model, write_model
    from ..progress import Progress
    from ..session import InferenceSession
    from ..tuning import tune
    from ..writes import Outputs, write_text

    src, out = Path(args.model), Path(args.output)
    if args.repeats < 1:
        raise UserError(f"--repeats must be at least 1, got {args.repeats}")
    outputs = Outputs()
    outputs.protect(src, "the input model")
    outputs.add(out, "output")
    if args.report:
        outputs.add(Path(args.report), "report")
    files = parse_input_args(args.input)
    model = load_model(src)
    # the declared inputs, as a session sees them (types, dims) for random values
    feeds = build_feeds(
        InferenceSession(model, providers=["CPUExecutionProvider"]),
        files,
        args.random_inputs,
    )
    with outputs, Progress(f"tune {src.name}", json=args.json) as progress:
        result = tune(
            model,
            feeds,
            provider=args.provider,
            repeats=args.repeats,
            inputs_on=args.inputs_on,
            progress=progress.step,
        )
        progress.step(f"writing {out.name}")
        write_model(result.model, outputs.temp(out), out)
        text = json.dumps(result.report, indent=2) + "\n"
        if args.report:
            write_text(outputs.temp(args.report), Path(args.report), text)
        outputs.commit()
    if args.json:
        print(text, end="")
        return 0
    r = result.report
    print(
        f"{out}: tuned for {r['provider']} ({len(r['nodes'])} nodes timed, outputs checked)"
    )
    for node in r["nodes"]:
        print(f"  {node['name']} ({node['op_type']}): {node['choice']}")
        for o in node["options"]:
            if "error" in o:
                print(f"    {o['option']}: cannot run ({o['error']})")
                continue
            kernels = sum(o["kernels"].values())
            print(
                f"    {o['option']}: {o['median_us']:g} us, {kernels} kernels, "
                f"{o['copies']} copies"
            )
    w = r["whole"]
    if "original_error" in w:
        print(
            f"  whole model: tuned {w['tuned_us']:g} us; the original does not run on "
            f"{r['provider']} ({w['original_error']})"
        )
    else:
        print(
            f"  whole model: original {w['original_us']:g} us, tuned {w['tuned_us']:g} us "
            f"({w['speedup']:g}x)"
        )
    return 0
