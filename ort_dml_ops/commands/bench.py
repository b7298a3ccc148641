"""`ort-dml-ops bench [--quick|--full] [--json] [--chart FILE.png] ...`."""

from __future__ import annotations

import argparse
import json
import math
import sys

EPILOG = """\
examples:
  ort-dml-ops bench                               # quick grid (~2 min): table on stdout
  ort-dml-ops bench --full --json > bench.json    # the whole grid (long; run it under nice)
  ort-dml-ops bench --ops CumProd --sizes 1e6 --dtypes float32 --chart cumprod.png
  ort-dml-ops bench --target webgpu --quick       # WebGPU EP: native kernel / lowered / CPU path

Per case (op, dtype, size, axis first/last): median ms of ONNX Runtime's native CPU kernel, the
project's Python fallback, the lowered graph (convert strategy=lower, target=dml) on the CPU EP,
and numpy, timed interleaved in one run; ratios to native. Then the lowered model vs the op left
native on a GPU EP when one is present, and convert / inspect of a large model. Variants that
cannot run are "n/a" with the reason. --chart needs matplotlib (pip install 'ort-dml-ops[bench]').
"""


def _sizes(text: str) -> tuple:
    try:
        sizes = tuple(float(s) for s in text.split(",") if s)
    except ValueError:
        sizes = ()
    if not sizes or not all(math.isfinite(s) and 10 <= s <= 1e10 for s in sizes):
        raise argparse.ArgumentTypeError(
            f"sizes are element counts from 10 to 1e10 like 1e5,1e6, not {text!r}"
        )
    return tuple(int(s) for s in sizes)


def _lengths(text: str) -> tuple:
    try:
        lengths = tuple(int(float(s)) for s in text.split(",") if s)
    except ValueError:
        lengths = ()
    if lengths == (0,):
        return ()
    if not lengths or not all(2 <= n <= 10_000_000 for n in lengths):
        raise argparse.ArgumentTypeError(
            f"axis lengths from 2 to 1e7 like 10,1000, or 0, not {text!r}"
        )
    return lengths


def _at_least(low: float, kind=int):
    """An argparse type: a finite number >= low."""

    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            value = None
        if value is None or not math.isfinite(value) or value < low:
            raise argparse.ArgumentTypeError(
                f"expected a number >= {low:g}, not {text!r}"
            )
        return value

    return parse


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "bench",
        help="time native vs fallback vs lowered vs numpy for CumSum, CumProd and ScatterElements",
        description="Benchmark CumSum, CumProd and ScatterElements (every reduction): ONNX Runtime's native "
        "CPU kernel vs the Python fallback vs the lowered graph vs numpy, and convert/inspect costs.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    mode = p.add_mutually_exclusive_group()
    mode.add_argument(
        "--quick",
        dest="mode",
        action="store_const",
        const="quick",
        help="sizes 1e5 and 1e6, float32, 1,000-node convert model (the default; under 2 min)",
    )
    mode.add_argument(
        "--full",
        dest="mode",
        action="store_const",
        const="full",
        help="sizes 1e3..3e7, float32 and float16, 10,000-node convert model (long)",
    )
    p.set_defaults(mode="quick")
    p.add_argument(
        "--ops",
        help="comma list of CumSum, CumProd, ScatterElements or ScatterElements:<reduction> "
        "(reductions: none, add, mul, max, min)",
    )
    p.add_argument(
        "--sizes", type=_sizes, help="comma list of element counts, e.g. 1e5,1e6"
    )
    p.add_argument("--dtypes", help="comma list of float32, float16")
    p.add_argument(
        "--axes",
        choices=("first", "last", "both"),
        help="reduction axis (default both)",
    )
    p.add_argument(
        "--reps",
        type=_at_least(1),
        help="interleaved rounds per case (most; cut to the time budget)",
    )
    p.add_argument(
        "--budget",
        type=_at_least(0, float),
        help="seconds per case the rounds are cut to (at least 3 rounds)",
    )
    p.add_argument(
        "--nodes",
        type=_at_least(0),
        help="node count of the convert/inspect model (0 skips that part)",
    )
    p.add_argument(
        "--no-gpu",
        action="store_true",
        help="skip the GPU part even where a GPU EP is present",
    )
    p.add_argument(
        "--no-memory",
        action="store_true",
        help="skip the peak-memory part (lowered nucleus-sampling scatter, 50,000-entry vocabulary)",
    )
    p.add_argument(
        "--symbolic-lengths",
        type=_lengths,
        metavar="N,N,...",
        help="axis lengths of the CumProd symbolic-vs-static comparison (default 10,1000,100000, "
        "those up to the largest size; 0 skips it)",
    )
    p.add_argument(
        "--proto",
        action="store_true",
        help="also time the prototype CumProd construction (ort_dml_ops/bench/cumprod_proto.py)",
    )
    p.add_argument(
        "--target",
        choices=("cpu", "webgpu"),
        default="cpu",
        help="webgpu: per case the WebGPU EP's native kernel vs the lowered graph on WebGPU vs the op "
        "on the CPU EP with its copies (needs the webgpu extra and an adapter; "
        "--quick: 1e5 only, 3 rounds; default 1e5,1e6)",
    )
    p.add_argument(
        "--json",
        action="store_true",
        help="print the whole record as JSON instead of the table",
    )
    p.add_argument(
        "--chart",
        metavar="FILE.png",
        help="also draw the ratios as a PNG chart (needs matplotlib)",
    )
    p.add_argument(
        "--markdown",
        action="store_true",
        help="print Markdown tables (sizes as columns) instead of the table",
    )
    p.add_argument(
        "--from-json",
        metavar="FILE.json",
        help="measure nothing: render the table / Markdown / chart of a record saved with --json",
    )
    p.set_defaults(func=run)


def _kinds(text: str | None):
    from ..bench import models
    from ..bench.runner import KINDS
    from ..errors import UserError

    if not text:
        return None
    out = []
    for item in text.split(","):
        op, _, red = item.strip().partition(":")
        if op not in models.OPS or (
            red and (op != "ScatterElements" or red not in models.REDUCTIONS)
        ):
            raise UserError(
                f"unknown --ops item {item!r} (CumSum, CumProd, ScatterElements[:none|add|mul|max|min])"
            )
        out += [k for k in KINDS if k[0] == op and (not red or k[1] == red)]
    return tuple(out)


def _run_webgpu(args) -> int:
    from ..bench import webgpu
    from ..errors import UserError

    quick = args.mode == "quick" and args.sizes is None and args.reps is None
    sizes = args.sizes or ((100_000,) if quick else (100_000, 1_000_000))
    if min(sizes) < 1000:
        raise UserError("--sizes must be at least 1000 elements for --target webgpu")
    cases = webgpu.CASES
    if args.ops:
        wanted = set(_kinds(args.ops))
        cases = tuple(c for c in webgpu.CASES if c in wanted)
        if not cases:
            raise UserError(
                "--target webgpu benches CumSum, CumProd and ScatterElements:none|add|max"
            )
    axes = {"first": (0,), "last": (1,), "both": (0, 1), None: (0, 1)}[args.axes]
    from ..progress import Progress

    with Progress("bench webgpu", json=args.json) as progress:  # stderr, TTY only
        result = webgpu.run_webgpu(
            sizes,
            reps=args.reps or (3 if quick else 7),
            axes=axes,
            cases=cases,
            budget_s=args.budget,
            progress=progress.step,
        )
    if args.json:
        json.dump(result, sys.stdout, indent=1)
        print()
    else:
        print(webgpu.table(result))
    return 0


def run(args) -> int:
    from ..bench import report
    from ..bench.runner import Config
    from ..bench.runner import run as run_bench
    from ..errors import UserError
    from ..progress import Progress
    from ..writes import Outputs

    if args.chart:  # fail before minutes of measuring, in one line
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            raise UserError(
                "--chart needs matplotlib, which is not installed: pip install 'ort-dml-ops[bench]'"
            ) from None
    if args.target == "webgpu":
        return _run_webgpu(args)
    dtypes = tuple(args.dtypes.split(",")) if args.dtypes else None
    if dtypes and not set(dtypes) <= {"float32", "float16"}:
        raise UserError(f"--dtypes takes float32 and/or float16, not {args.dtypes!r}")
    axes = {"first": (0,), "last": (1,), "both": (0, 1), None: None}[args.axes]
    config = Config.preset(
        args.mode,
        sizes=args.sizes,
        dtypes=dtypes,
        axes=axes,
        kinds=_kinds(args.ops),
        reps=args.reps,
        budget_s=args.budget,
        nodes=args.nodes,
    )
    config.gpu = not args.no_gpu
    config.memory = not args.no_memory
    config.proto = args.proto
    if args.symbolic_lengths is not None:
        config.symbolic_lengths = args.symbolic_lengths
    outputs = Outputs()
    if args.from_json:
        outputs.protect(args.from_json, "the --from-json record")
    if args.chart:
        outputs.add(args.chart, "chart")
    with outputs:  # the chart's folder is checked before minutes of measuring
        if args.from_json:
            try:
                with open(args.from_json, encoding="utf-8") as f:
                    result = json.load(f)
            except (OSError, ValueError) as exc:
                raise UserError(f"cannot read {args.from_json}: {exc}") from None
        else:
            cases = (
                len(config.sizes)
                * len(config.dtypes)
                * len(config.kinds)
                * len(config.axes)
            )
            with Progress(
                "bench", json=args.json, total=cases
            ) as progress:  # stderr, TTY only
                result = run_bench(config, progress=_case_counter(progress))
        try:
            if args.chart:
                report.chart(result, outputs.temp(args.chart))
                result["meta"]["chart"] = args.chart
            text = (
                json.dumps(result, indent=1)
                if args.json
                else report.markdown(result)
                if args.markdown
                else report.table(result)
                + (f"\nchart: {args.chart}" if args.chart else "")
            )
        except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
            if not args.from_json:
                raise
            raise UserError(
                f"{args.from_json}: not a record saved with `bench --json` "
                f"({type(exc).__name__}: {exc})"
            ) from None
        outputs.commit()
    print(text)
    return 0


def _case_counter(progress):
    """bench.runner's per-case callback -> one progress line: the case done, how many of how many."""
    done = 0

    def on_case(case: dict) -> None:
        nonlocal done
        done += 1
        cells = ", ".join(
            f"{k} {v['ms']:.3g} ms" if v["status"] == "ok" else f"{k} n/a"
            for k, v in case["variants"].items()
        )
        progress.step(f"{case['name']}: {cells}", done=done)

    return on_case
