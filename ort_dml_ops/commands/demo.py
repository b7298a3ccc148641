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
import html
import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import UserError
from ..writes import Outputs, write_error

EXAMPLE = "examples:\n  ort-dml-ops demo\n  ort-dml-ops demo --model ddpm_step --out /tmp/ddpm.html --provider cpu"
DEFAULT_OUT = "ort-dml-ops-demo.html"
CPU = "CPUExecutionProvider"
FAMILIES = {"CumSum", "CumProd", "ScatterElements", "ScatterND", "Scatter"}


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
        0  # lowered scatters' run-time index guards (one flag to the host each)
    )

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
    with warnings.catch_warnings():
        warnings.simplefilter(
            "ignore"
        )  # provider warnings: the providers line says what ran
        for i, entry in enumerate(entries, 1):
            if not args.json and sys.stderr.isatty():
                print(
                    f"  [{i}/{len(entries)}] {entry.name} ...",
                    end="\r",
                    file=sys.stderr,
                    flush=True,
                )
            o = _demo_one(entry, args.provider)
            outcomes.append(o)
            if not args.json:
                print(_row(o), flush=True)

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
        "before": _graph(model, before, {}),
        "after": _graph(result.model, after, emitted),
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
        sum(n.name.endswith("/IndexOrSizeOutOfRange") for n in result.model.graph.node),
    )


def _one_line(exc) -> str:
    text = str(exc).strip().splitlines()
    text = text[0] if text else type(exc).__name__
    marker = "Status Message: "
    return text.split(marker, 1)[1] if marker in text else text


def _graph(model, report, emitted: dict) -> dict:
    """Nodes (name, op, provider, reason, emitted-for) and edges of the main graph."""
    where = {n.name: n for n in report.nodes}
    nodes, producer, edges = [], {}, []
    for i, n in enumerate(model.graph.node):
        name = n.name or f"{n.op_type}#{i}"
        r = where.get(name)
        nodes.append(
            {
                "name": name,
                "op": n.op_type,
                "provider": r.provider if r else None,
                "reason": r.reason if r else "",
                "family": n.op_type in FAMILIES,
                "for": emitted.get(name),
            }
        )
        for x in n.input:
            if x in producer:
                edges.append((producer[x], i))
        for y in n.output:
            producer[y] = i
    return {"nodes": nodes, "edges": sorted(set(edges)), "summary": report.summary}


# ---------------------------------------------------------------------------------- the text

_COLS = "{:<20} {:<22} {:>17} {:>17}  {:<10} {}"


def _header() -> str:
    return _COLS.format(
        "model",
        "families",
        "before GPU/CPU/cp",
        "after GPU/CPU/cp",
        "converted",
        "original",
    )


def _triple(s: dict) -> str:
    return f"{s['gpu_nodes']} / {s['cpu_nodes']} / {s['copies']}"


def _row(o: Outcome) -> str:
    conv = "ok" if o.converted == "ok" else "FAIL"
    orig = o.original if o.original == "ok" else o.original.split(":", 1)[0]
    line = _COLS.format(
        o.name, "+".join(o.families), _triple(o.before), _triple(o.after), conv, orig
    )
    notes = [f"    converted: {o.converted}"] if conv != "ok" else []
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
            f" (the {guards} scatter index guards: one flag to the host and two scalar CPU nodes each; "
            "--no-check-indices drops them)"
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

COLOURS = {"gpu": "#1a9850", "cpu": "#d73027", "folded": "#b8b8b8", "none": "#222222"}
BOX_W, BOX_H, COL_W, ROW_H, BAND_LAYERS, PAD = 64, 18, 80, 24, 14, 24


def _kind(node) -> str:
    p = node["provider"]
    if p is None:
        return "folded" if node["reason"].startswith("constant-folded") else "none"
    return "cpu" if p == CPU else "gpu"


def _layout(g: dict):
    """Layered layout (layer = longest path from a source), wrapped into bands of BAND_LAYERS
    columns that snake left-right / right-left, so deep rewritten chains stay on screen."""
    n = len(g["nodes"])
    preds = [[] for _ in range(n)]
    for a, b in g["edges"]:
        preds[b].append(a)
    layer = [0] * n
    for i in range(n):  # ONNX graphs are topologically sorted
        layer[i] = 1 + max((layer[p] for p in preds[i]), default=-1)
    depth = max(layer, default=-1) + 1
    rows_in: dict[int, list[int]] = {}
    row = [0.0] * n
    for L in range(depth):
        members = [i for i in range(n) if layer[i] == L]
        members.sort(
            key=lambda i: (
                (sum(row[p] for p in preds[i]) / len(preds[i])) if preds[i] else i
            )
        )
        for r, i in enumerate(members):
            row[i] = r
        rows_in[L] = members
    bands = [
        list(range(s, min(s + BAND_LAYERS, depth)))
        for s in range(0, depth, BAND_LAYERS)
    ] or [[]]
    band_h = [max((len(rows_in[L]) for L in b), default=1) * ROW_H for b in bands]
    band_y = [sum(band_h[:k]) + 26 * k for k in range(len(bands))]
    cols = min(depth, BAND_LAYERS) or 1
    pos = {}
    for k, b in enumerate(bands):
        for j, L in enumerate(b):
            col = j if k % 2 == 0 else cols - 1 - j
            for i in rows_in[L]:
                pos[i] = (PAD + col * COL_W, PAD + band_y[k] + row[i] * ROW_H)
    width = PAD * 2 + (cols - 1) * COL_W + BOX_W
    height = PAD * 2 + band_y[-1] + band_h[-1]
    return pos, width, height


def _svg(g: dict) -> str:
    pos, w, h = _layout(g)
    nodes = g["nodes"]
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {w} {h}" width="{w}" height="{h}" '
        f'font-family="sans-serif" font-size="9">'
    ]
    for a, b in g["edges"]:
        (x1, y1), (x2, y2) = pos[a], pos[b]
        ka, kb = _kind(nodes[a]), _kind(nodes[b])
        copy = {ka, kb} == {"cpu", "gpu"}
        sx, sy = (
            (x1 + BOX_W, y1 + BOX_H / 2) if x2 > x1 else (x1 + BOX_W / 2, y1 + BOX_H)
        )
        ex, ey = (
            (x2, y2 + BOX_H / 2)
            if x2 > x1
            else (x2 + BOX_W / 2, y2)
            if y2 > y1
            else (x2 + BOX_W, y2 + BOX_H / 2)
        )
        style = (
            'stroke="#d73027" stroke-width="2.2" stroke-dasharray="4 2"'
            if copy
            else 'stroke="#9a9a9a" stroke-width="0.8"'
        )
        title = "<title>device&lt;-&gt;host copy</title>" if copy else ""
        if (
            abs(ey - sy) < 1 and abs(ex - sx) > COL_W
        ):  # a long edge along a row: bow it above the boxes
            sy, ey = sy - BOX_H / 2, ey - BOX_H / 2
            cy = sy - min(ROW_H * 0.9, 6 + abs(ex - sx) / COL_W * 3)
            parts.append(
                f'<path d="M{sx:.1f},{sy:.1f} C{sx:.1f},{cy:.1f} {ex:.1f},{cy:.1f} {ex:.1f},{ey:.1f}" '
                f'fill="none" {style}>{title}</path>'
            )
            continue
        parts.append(
            f'<line x1="{sx:.1f}" y1="{sy:.1f}" x2="{ex:.1f}" y2="{ey:.1f}" {style}>{title}</line>'
        )
    for i, node in enumerate(nodes):
        x, y = pos[i]
        k = _kind(node)
        stroke = (
            ' stroke="#111" stroke-width="2"' if node["family"] or node["for"] else ""
        )
        label = node["op"] if len(node["op"]) <= 11 else node["op"][:10] + "…"
        tip = f"{node['name']} ({node['op']})\n{node['provider'] or 'not run'}: {node['reason']}"
        if node["for"]:
            tip += f"\nemitted for {node['for']}"
        text_fill = "#222" if k == "folded" else "#fff"
        parts.append(
            f'<g><title>{html.escape(tip)}</title><rect x="{x}" y="{y}" width="{BOX_W}" height="{BOX_H}" rx="4" '
            f'fill="{COLOURS[k]}"{stroke}/><text x="{x + BOX_W / 2}" y="{y + 12.5}" text-anchor="middle" '
            f'fill="{text_fill}">{html.escape(label)}</text></g>'
        )
    parts.append("</svg>")
    return "".join(parts)


_CSS = """
body{font-family:system-ui,sans-serif;margin:24px;color:#222;background:#fafafa}
h1{font-size:22px;margin:0 0 4px} .sub{color:#555;margin:0 0 14px}
.legend span{display:inline-block;margin-right:16px;font-size:13px}
.sw{display:inline-block;width:14px;height:14px;border-radius:3px;vertical-align:-2px;margin-right:5px}
.card{background:#fff;border:1px solid #ddd;border-radius:8px;padding:12px 16px;margin:14px 0}
.card h2{font-size:17px;margin:0} .use{color:#555;font-size:13px;margin:2px 0 8px}
.pair{display:flex;gap:18px;align-items:flex-start;flex-wrap:wrap}
.side{flex:1 1 420px;min-width:0} .side h3{font-size:13px;margin:4px 0}
.scroll{overflow:auto;max-height:560px;border:1px solid #eee;border-radius:4px;background:#fcfcfc}
.scroll svg{display:block;max-width:100%;height:auto}
.ok{color:#1a9850;font-weight:600} .bad{color:#d73027;font-weight:600} .na{color:#a66;font-weight:600}
table{border-collapse:collapse;font-size:13px;margin:8px 0 4px} td,th{padding:3px 10px;border-bottom:1px solid #eee;text-align:left}
"""


def _status(text: str) -> str:
    cls = "ok" if text == "ok" else "na" if text.startswith("n/a") else "bad"
    return f'<span class="{cls}" title="{html.escape(text)}">{html.escape(text.split(":", 1)[0])}</span>'


def render_html(outcomes) -> str:
    """A self-contained page (inline CSS and SVG, no script, no network)."""
    rows = "".join(
        f"<tr><td><a href='#{o.name}'>{o.name}</a></td><td>{'+'.join(o.families)}</td><td>{_triple(o.before)}</td>"
        f"<td>{_triple(o.after)}</td><td>{_status(o.converted)}</td><td>{_status(o.original)}</td></tr>"
        for o in outcomes
    )
    cards = []
    from .. import zoo

    for o in outcomes:
        e = zoo.get(o.name)
        sides = "".join(
            f"<div class='side'><h3>{label} — GPU {s['gpu_nodes']}, CPU {s['cpu_nodes']}, copies {s['copies']}</h3>"
            f"<div class='scroll'>{_svg(o.graphs[key])}</div></div>"
            for key, label, s in (
                ("before", "before", o.before),
                ("after", "after convert", o.after),
            )
        )
        cards.append(
            f"<div class='card' id='{o.name}'><h2>{html.escape(e.title)} <small>({o.name})</small></h2>"
            f"<div class='use'>{html.escape(e.use)} · opset {e.opset} · {', '.join(e.dtypes)} · "
            f"converted {_status(o.converted)} · original {_status(o.original)}</div>"
            f"<div class='pair'>{sides}</div></div>"
        )
    legend = "".join(
        f"<span><i class='sw' style='background:{c}'></i>{t}</span>"
        for t, c in (
            ("DirectML GPU", COLOURS["gpu"]),
            ("CPU (leaves the GPU)", COLOURS["cpu"]),
            ("constant-folded at load", COLOURS["folded"]),
            ("no kernel", COLOURS["none"]),
        )
    )
    legend += (
        "<span><i class='sw' style='border:2px solid #111;background:#fff'></i>CumSum/CumProd/Scatter, or emitted for one</span>"
        "<span><i class='sw' style='border-top:3px dashed #d73027;height:0;border-radius:0'></i>device↔host copy</span>"
    )
    return (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>ort-dml-ops demo</title><style>{_CSS}</style></head><body>"
        f"<h1>ort-dml-ops: where each node runs on the DirectML EP, before and after convert</h1>"
        f"<p class='sub'>Placement as predicted by <code>ort_dml_ops.inspect</code> for onnxruntime-directml 1.24.4; "
        f"hover a node for its op, provider and reason.</p><div class='legend'>{legend}</div>"
        f"<table><tr><th>model</th><th>families</th><th>before GPU / CPU / copies</th><th>after</th><th>converted</th>"
        f"<th>original</th></tr>{rows}</table>{''.join(cards)}</body></html>"
    )
