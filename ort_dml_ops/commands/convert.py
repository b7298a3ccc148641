"""`ort-dml-ops convert IN -o OUT [--target] [--strategy] [--report FILE.json] [--json] [--verify] [--no-check-indices]`."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from ..errors import UserError
from ..feeds import random_model_feeds

EPILOG = """\
examples:
  ort-dml-ops convert model.onnx -o model.dml.onnx                 # auto: native, else lowered, else fallback
  ort-dml-ops convert model.onnx -o out.onnx --strategy lower --verify
  ort-dml-ops convert model.onnx -o out.onnx --target cuda --report report.json
  ort-dml-ops convert model.onnx -o out.onnx --json                 # print the report as JSON

The report lists, for every CumSum / CumProd / Scatter* node, what was done (native / lowered /
cast / fallback) and why, and the nodes emitted for it; the JSON report (--json, --report) also
carries the inspect report of the converted model; see docs/convert.md.
"""


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "convert",
        help="rewrite a model so its CumSum, CumProd and ScatterElements run on the target EP",
        description="Rewrite MODEL so that every CumSum, CumProd and ScatterElements/ScatterND node runs "
        "on the target execution provider, and write the result to OUT (never over MODEL).",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("model", metavar="IN", help="path to an .onnx model")
    p.add_argument(
        "-o",
        "--output",
        metavar="OUT",
        required=True,
        help="where to write the converted model",
    )
    p.add_argument(
        "--target",
        choices=("dml", "cuda", "webgpu", "cpu"),
        default="dml",
        help="execution provider (default dml)",
    )
    p.add_argument(
        "--strategy",
        choices=("auto", "native", "lower", "fallback"),
        default="auto",
        help="auto (default): native where the EP has a kernel, else lower, else fallback",
    )
    p.add_argument(
        "--report",
        metavar="FILE.json",
        help="also write the report as JSON to FILE.json (with the inspect report of the "
        "converted model under 'inspect')",
    )
    p.add_argument(
        "--json",
        action="store_true",
        help="print the report as one JSON object (with the inspect report of the converted "
        "model under 'inspect')",
    )
    p.add_argument(
        "--verify",
        action="store_true",
        help="run original and converted model on random inputs (ONNX Runtime CPU) and fail on a difference",
    )
    p.add_argument(
        "--check-indices",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="lowered scatters fail at run time on an out-of-range index, as ONNX Runtime's kernel "
        "does (default); --no-check-indices drops the check (two reductions over the indices "
        "and a few scalar copies per scatter) and a bad index then writes a wrong element",
    )
    p.add_argument(
        "--input-shape",
        metavar="NAME=DIMS",
        action="append",
        default=[],
        help="the size an input takes at run time where the model leaves it symbolic, e.g. "
        "x=8,1024 (repeatable): strategy auto then weighs each lowering against ONNX Runtime's "
        "CPU kernel at those sizes; the converted model keeps its own declarations",
    )
    p.set_defaults(func=run)


def run(args) -> int:
    from ..conversion import convert
    from ..converter.size_hints import parse_hint
    from ..modelio import data_path_for, external_data_files, load_model, write_model
    from ..progress import Progress
    from ..writes import Outputs, write_text

    src = Path(args.model)
    out = Path(args.output)
    # every target is checked against every input file and against each other before
    # anything is converted or written (writes.py); the input's external-data files are known
    # once its graph is read
    outputs = Outputs()
    outputs.protect(src, "the input model")
    outputs.add(out, "output")
    outputs.add(data_path_for(out), "output's external data")
    if args.report:
        outputs.add(Path(args.report), "report")
    graph = load_model(src, load_external_data=False)
    for f in external_data_files(graph, src.parent):
        outputs.protect(f, "the input's external data")
    del graph
    with outputs, Progress(f"convert {src.name}", json=args.json) as progress:
        progress.step(f"converting for {args.target}")
        # external data stays on disk: convert reads the graph only, the output gets its own copy
        result = convert(
            src,
            args.target,
            strategy=args.strategy,
            check_indices=args.check_indices,
            input_shapes=dict(parse_hint(h) for h in args.input_shape),
            keep_external_data=True,
            # the text output never shows the inspect report of the output (on a 50k-node
            # model it costs more than the conversion): only the JSON report carries it
            with_inspect=bool(args.json or args.report),
        )
        if args.verify:
            progress.step("verifying on random inputs")
            model = load_model(src, load_external_data=False)
            problems = verify(model, result.model, base_dir=result.external_data_dir)
            if problems:
                raise UserError("verify failed: " + "; ".join(problems))
        progress.step(f"writing {out.name}")
        data = data_path_for(out)
        external = result.external_data_dir is not None
        write_model(
            result.model,
            outputs.temp(out),
            out,
            result.external_data_dir,
            outputs.temp(data) if external else None,
        )
        if not external:
            outputs.discard(data)
        report = result.report.to_dict() if args.json or args.report else {}
        if args.verify:
            report["verify"] = "ok"
        if args.report:
            write_text(
                outputs.temp(args.report),
                Path(args.report),
                json.dumps(report, indent=2) + "\n",
            )
        outputs.commit()
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        s = result.report.summary()
        parts = (
            ", ".join(f"{v} {k}" for k, v in sorted(s.items()))
            or "no CumSum/CumProd/Scatter nodes"
        )
        print(
            f"{out}: {parts} (target {result.report.target}, strategy {result.report.strategy})"
            + ("; verified" if args.verify else "")
        )
        for n in result.report.nodes:
            print(f"  {n.name or n.op_type}: {n.action} - {n.reason}", file=sys.stdout)
            if n.cost:
                print("    cost: " + _costs_line(n.cost), file=sys.stdout)
        for line in (
            result.report.normalized
        ):  # whole-graph fixes (If folded, output declaration, allowzero)
            print(f"  graph: {line}", file=sys.stdout)
    return 0


# --------------------------------------------------------------------------------------
def _session(model_bytes: bytes, uses_domain: bool):
    if uses_domain:
        try:
            from ..session import InferenceSession
        except ImportError:
            raise UserError(
                "--verify: the model uses the project's fallback ops and ort_dml_ops.InferenceSession is not available"
            ) from None
        return InferenceSession(model_bytes, providers=["CPUExecutionProvider"])
    import onnxruntime as ort

    return ort.InferenceSession(model_bytes, providers=["CPUExecutionProvider"])


def verify(
    original,
    converted,
    feeds: dict | None = None,
    rtol: float = 1e-3,
    atol: float = 1e-5,
    base_dir=None,
) -> list[str]:
    """Run both models on the CPU EP; return one line per output that differs (empty = ok).

    `base_dir`: the folder the models' external data is relative to (loaded for the run)."""
    from .._domain import DOMAIN
    from ..modelio import external_data_bytes, fix_ir_version

    def uses(m):
        return any(o.domain == DOMAIN for o in m.opset_import)

    import onnx

    o = onnx.ModelProto()
    o.CopyFrom(original)
    fix_ir_version(o)
    if base_dir is not None and (
        external_data_bytes(o) or external_data_bytes(converted)
    ):
        if max(external_data_bytes(o), external_data_bytes(converted)) >= 1 << 31:
            raise UserError(
                "--verify: the model's external data is over 2 GB; it cannot be verified in memory"
            )
        c = onnx.ModelProto()
        c.CopyFrom(converted)
        onnx.external_data_helper.load_external_data_for_model(o, str(base_dir))
        onnx.external_data_helper.load_external_data_for_model(c, str(base_dir))
        converted = c
    feeds = feeds or random_model_feeds(original)
    try:
        a = _session(o.SerializeToString(), uses(o)).run(None, feeds)
    except UserError:
        raise
    except Exception as exc:  # noqa: BLE001 - ORT's own error, reported in one line
        raise UserError(
            f"--verify: the original model does not run on the CPU EP ({str(exc).splitlines()[0]})"
        ) from None
    b = _session(converted.SerializeToString(), uses(converted)).run(None, feeds)
    names = [o.name for o in original.graph.output]
    return compare_outputs(names, a, b, rtol, atol)


def compare_outputs(
    names: list[str], a: list, b: list, rtol: float = 1e-3, atol: float = 1e-5
) -> list[str]:
    """One line per output of `b` that differs from `a` (`verify`'s rule: integers and bools
    equal, floats within rtol / atol, float16 within 1e-2, NaN equal to NaN)."""
    problems = []
    for name, x, y in zip(names, a, b):
        x, y = np.asarray(x), np.asarray(y)
        if x.shape != y.shape or x.dtype != y.dtype:
            problems.append(
                f"{name}: {x.dtype}{list(x.shape)} vs {y.dtype}{list(y.shape)}"
            )
            continue
        if np.issubdtype(x.dtype, np.floating):
            tol = rtol if x.dtype != np.float16 else 1e-2
            ok = np.allclose(x, y, rtol=tol, atol=atol, equal_nan=True)
        else:
            ok = np.array_equal(x, y)
        if not ok:
            d = np.max(np.abs(x.astype(np.float64) - y.astype(np.float64)))
            problems.append(f"{name}: max abs difference {d:.3g}")
    return problems


def _costs_line(costs: dict) -> str:
    """One line of a node's options: kernels, passes, copies, DeviceModel's estimate where the
    sizes are known, and where they are not, the size above which the lowering would win."""
    parts = []
    for option, c in costs.items():
        text = f"{option} "
        if "kernels" in c:
            text += _count(c["kernels"], "kernel") + ", "
        text += f"{c['passes']:g} passes, " + _count(c["copies"], "copy", "copies")
        if "estimate_us" in c:
            most = "at most" if c.get("estimate_is_upper_bound") else "about"
            text += f", {most} {c['estimate_us']:g} µs"
        if "wins_above_elements" in c:
            text += (
                f" (sizes unknown: faster than the CPU path above about "
                f"{c['wins_above_elements']:,} elements; --input-shape weighs it)"
            )
        parts.append(text)
    return "; ".join(parts)


def _count(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else many or one + 's'}"
