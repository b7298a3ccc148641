"""The picture `ort-dml-ops demo` writes: one self-contained HTML page (inline CSS and SVG, no
script, no network) with every zoo graph before and after conversion, each node coloured by
where it runs (GPU, CPU, constant-folded). The run itself and the text table are demo.py.
"""

from __future__ import annotations

import html

CPU = "CPUExecutionProvider"
FAMILIES = {"CumSum", "CumProd", "ScatterElements", "ScatterND", "Scatter"}


def triple(s: dict) -> str:
    """`GPU nodes / CPU nodes / copies` of an inspect summary."""
    return f"{s['gpu_nodes']} / {s['cpu_nodes']} / {s['copies']}"


def graph_data(model, report, emitted: dict) -> dict:
    """Nodes (name, op, provider, reason, emitted-for) and edges of the main graph."""
    where = {n.name: n for n in report.nodes}
    nodes: list[dict] = []
    producer: dict[str, int] = {}
    edges: list[tuple[int, int]] = []
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
    preds: list[list[int]] = [[] for _ in range(n)]
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
        f"<tr><td><a href='#{o.name}'>{o.name}</a></td><td>{'+'.join(o.families)}</td><td>{triple(o.before)}</td>"
        f"<td>{triple(o.after)}</td><td>{_status(o.converted)}</td><td>{_status(o.original)}</td></tr>"
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
