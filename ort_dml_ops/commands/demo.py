"""`ort-dml-ops demo`: convert every model of the bundled zoo for DirectML, show where each
node runs before and after (inspect: GPU nodes, CPU nodes, Memcpy copies), verify the
outputs of the converted and of the original model against the zoo's expected outputs on the
best execution provider available, and write a picture (HTML with inline SVG: every graph
with its nodes coloured by where they run, before and after).

Exit code 0 when every converted model reproduces its expected outputs (and every original
does, or fails only with the ONNX Runtime limitation the zoo records for it), else 1.
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import UserError
from ..writes import Outputs, write_error
from .demo_html import graph_data, render_html, triple

EXAMPLE = "examples:\n  ort-dml-ops demo\n  ort-dml-ops demo --model ddpm_step --out /tmp/ddpm.html --provider cpu"
DEFAULT_OUT = "ort-dml-ops-demo.html"


def add_parser(sub) -> None:
    p = sub.add_parser(
        "demo",
        help="convert the bundled model zoo for DirectML, verify it, draw before/after",
        description=__doc__,
        epilog=EXAMPLE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--out",
        type=Path,
        default=Path(DEFAULT_OUT),
        metavar="FILE.html",
        help=f"where to write the picture (default ./{DEFAULT_OUT})",
    )
    p.add_argument(
        "--model",
        action="append",
        metavar="NAME",
        help="only this zoo model (repeatable; default: all)",
    )
    p.add_argument(
        "--provider",
        action="append",
        metavar="NAME",
        help="dml, cuda, cpu or ONNX Runtime's full name to verify on (default: best available)",
    )
    p.add_argument(
        "--json",
        action="store_true",
        help="print the results as JSON instead of the table",
    )
    p.set_defaults(func=run)


@dataclass
class Outcome:
    name: str
    families: list
    before: dict
    after: dict
    converted: str  # "ok" | "FAIL: ..."
    original: str  # "ok" | "n/a: ..." (a recorded ORT limitation) | "FAIL: ..."
    providers: list
    seconds: float
    graphs: dict = field(default_factory=dict)  # for the picture
    guards: int = (
        0  # 1 where the model's lowered scatters have their run-time index guard
    )
    #: scatters auto left on ONNX Runtime's CPU kernel because its estimate says that is faster
    kept_for_cost: int = 0

    @property
    def ok(self) -> bool:
        return self.converted == "ok" and not self.original.startswith("FAIL")


def run(args) -> int:
    from .. import zoo

    wanted = args.model or zoo.names()
    unknown = [n for n in wanted if n not in zoo.names()]
    if unknown:
        raise UserError(
            f"no zoo model named {unknown[0]!r} (have: {', '.join(zoo.names())})"
        )
    out = args.out.expanduser()
    outputs = Outputs()
    outputs.add(out, "picture")
    with outputs:  # checked (a temporary file made) before the models run
        result = _run(args, wanted, out, outputs)
    return result


def _run(args, wanted, out: Path, outputs) -> int:
    import warnings

    from .. import zoo

    t0 = time.perf_counter()
    entries = [zoo.get(n) for n in wanted]
    outcomes = []
    if not args.json:
        print(
            f"ort-dml-ops demo: {len(entries)} zoo models, converted for target dml (strategy auto)"
        )
        print(_header())
    from ..progress import Progress

    with (
        warnings.catch_warnings(),
        Progress("demo", json=args.json, total=len(entries)) as progress,
    ):
        warnings.simplefilter(
            "ignore"
        )  # provider warnings: the providers line says what ran
        for i, entry in enumerate(entries, 1):
            progress.step(entry.name, done=i)
            o = _demo_one(entry, args.provider)
            outcomes.append(o)
            if not args.json:
                print(_row(o, i, len(entries)), flush=True)

    try:
        with open(outputs.temp(out), "w", encoding="utf-8") as f:
            f.write(render_html(outcomes))
    except OSError as exc:
        raise write_error(out, "picture", exc) from None
    outputs.commit()
    elapsed = time.perf_counter() - t0
    if args.json:
        print(
            json.dumps(
                {
                    "models": [
                        {k: v for k, v in o.__dict__.items() if k != "graphs"}
                        | {"ok": o.ok}
                        for o in outcomes
                    ],
                    "picture": str(out),
                    "ok": all(o.ok for o in outcomes),
                    "seconds": round(elapsed, 2),
                },
                indent=1,
            )
        )
    else:
        for line in _summary(outcomes, elapsed):
            print(line)
        print(f"picture: {out}")
    return 0 if all(o.ok for o in outcomes) else 1


# ---------------------------------------------------------------------------------- the work


def _demo_one(entry, providers) -> Outcome:
    import onnxruntime as ort

    from ..conversion import convert
    from ..inspection import inspect
    from ..session import InferenceSession

    t = time.perf_counter()
    model = entry.load_model()
    before = inspect(model, "dml")
    result = convert(model, "dml", strategy="auto")
    after = result.report.inspect
    feeds = entry.inputs()
    so = ort.SessionOptions()
    so.log_severity_level = 4  # failures are reported below, once, in one line

    def check(m):
        try:
            s = InferenceSession(m, providers=providers, sess_options=so)
            outs = s.run(None, feeds)
        except Exception as exc:  # noqa: BLE001 - any ORT failure is a result here
            return None, _one_line(exc)
        problems = entry.compare(outs)
        return s.get_providers(), ("ok" if not problems else "FAIL: " + problems[0])

    used, converted = check(result.model)
    converted = (
        converted
        if converted == "ok" or converted.startswith("FAIL")
        else "FAIL: " + converted
    )
    _, original = check(model)
    if original != "ok" and not original.startswith("FAIL"):
        known = entry.native_cpu_error
        original = (
            f"n/a: {original}" if known and known in original else f"FAIL: {original}"
        )
    emitted = {e: n.name for n in result.report.nodes for e in n.emitted}
    graphs = {
        "before": graph_data(model, before, {}),
        "after": graph_data(result.model, after, emitted),
    }
    return Outcome(
        entry.name,
        list(entry.families),
        before.summary,
        after.summary,
        converted,
        original,
        used or [],
        time.perf_counter() - t,
        graphs,
        int(
            any(
                n.name.startswith("scatter_guard/IndexOrSizeOutOfRange")
                for n in result.model.graph.node
            )
        ),
        sum(
            any(r.get("code") == "cpu-path-cheaper" for r in n.refusals)
            for n in result.report.nodes
        ),
    )


def _one_line(exc) -> str:
    lines = str(exc).strip().splitlines()
    text = lines[0] if lines else type(exc).__name__
    marker = "Status Message: "
    return text.split(marker, 1)[1] if marker in text else text


_COLS = "{:<8} {:<20} {:<22} {:>17} {:>17}  {:<10} {:<9} {}"


def _header() -> str:
    return _COLS.format(
        "",
        "model",
        "families",
        "before GPU/CPU/cp",
        "after GPU/CPU/cp",
        "converted",
        "original",
        "time",
    )


def _row(o: Outcome, i: int, n: int) -> str:
    """One model's line, printed as soon as it is done: `[i/n]` and its seconds say how far
    the demo has got."""
    conv = "ok" if o.converted == "ok" else "FAIL"
    orig = o.original if o.original == "ok" else o.original.split(":", 1)[0]
    line = _COLS.format(
        f"[{i}/{n}]",
        o.name,
        "+".join(o.families),
        triple(o.before),
        triple(o.after),
        conv,
        orig,
        f"{o.seconds:.1f} s",
    ).rstrip()
    notes = [f"    converted: {o.converted}"] if conv != "ok" else []
    if o.kept_for_cost:
        notes.append(
            f"    auto kept {o.kept_for_cost} scatter(s) on ONNX Runtime's CPU kernel: faster at "
            "these sizes than the lowering's kernels (cost model; --strategy lower moves them)"
        )
    if orig != "ok":
        notes.append(f"    original: {o.original}")
    return "\n".join([line, *notes])


def _summary(outcomes, elapsed) -> list[str]:
    n = len(outcomes)
    off_before = [o for o in outcomes if o.before["cpu_nodes"]]
    cpu_b = sum(o.before["cpu_nodes"] for o in outcomes)
    cp_b = sum(o.before["copies"] for o in outcomes)
    cpu_a = sum(o.after["cpu_nodes"] for o in outcomes)
    cp_a = sum(o.after["copies"] for o in outcomes)
    guards = sum(o.guards for o in outcomes)
    kept = sum(o.kept_for_cost for o in outcomes)
    provs = sorted({p for o in outcomes for p in o.providers[:1]}) or ["(no session)"]
    conv_ok = sum(o.converted == "ok" for o in outcomes)
    orig_ok = sum(o.original == "ok" for o in outcomes)
    orig_na = sum(o.original.startswith("n/a") for o in outcomes)
    verdict = "all verified" if all(o.ok for o in outcomes) else "FAILED"
    return [
        "",
        f"summary: {n} models. Before: {len(off_before)} of them leave the DirectML GPU "
        f"({cpu_b} nodes on the CPU, {cp_b} device<->host copies per run).",
        f"         After convert(target='dml'): {cpu_a} nodes on the CPU, {cp_a} copies"
        + (
            f" ({kept} scatters kept on ONNX Runtime's CPU kernel, faster at the zoo's sizes)"
            if kept
            else ""
        )
        + (
            f"; {guards} models' index guard: one flag to the host per run and scalar CPU "
            "nodes (--no-check-indices drops it)"
            if guards
            else ""
        )
        + ".",
        f"         Outputs vs expected on {', '.join(provs)}: converted {conv_ok}/{n} ok; original {orig_ok}/{n} ok"
        + (
            f", {orig_na} that ONNX Runtime cannot run there (recorded limitation)"
            if orig_na
            else ""
        )
        + ".",
        f"         {verdict} in {elapsed:.1f}s.",
    ]


# ---------------------------------------------------------------------------------- the picture
