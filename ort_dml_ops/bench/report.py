"""The benchmark's outputs: a text table, target verdicts, and a PNG chart (matplotlib, optional)."""

from __future__ import annotations

#: (key, variant, ops, limit, min size): the issue's targets on the CPU EP.
TARGETS = (
    ("fallback CumSum/CumProd <= 1.5x native", "fallback", ("CumSum", "CumProd"), 1.5),
    ("fallback ScatterElements <= 2x native", "fallback", ("ScatterElements",), 2.0),
    ("lowered CumProd <= 2x native", "lowered", ("CumProd",), 2.0),
    (
        "lowered ScatterElements reductions <= 3x native",
        "lowered",
        ("ScatterElements*",),
        3.0,
    ),
)
TARGET_MIN_SIZE = 100_000


def _matches(case: dict, ops) -> bool:
    for op in ops:
        if op == "ScatterElements*":
            if case["op"] == "ScatterElements" and case["reduction"] != "none":
                return True
        elif case["op"] == op:
            return True
    return False


def verdicts(result: dict) -> list[dict]:
    out = []
    for label, variant, ops, limit in TARGETS:
        ratios = [
            (c["ratios"][f"{variant}/native"], c["name"])
            for c in result["cases"]
            if _matches(c, ops)
            and c["size"] >= TARGET_MIN_SIZE
            and c["ratios"].get(f"{variant}/native")
        ]
        if not ratios:
            out.append({"target": label, "status": "not measured", "cases": 0})
            continue
        worst = max(ratios)
        out.append(
            {
                "target": label,
                "limit": limit,
                "cases": len(ratios),
                "worst": worst[0],
                "worst_case": worst[1],
                "best": min(ratios)[0],
                "met": sum(r <= limit for r, _ in ratios),
                "status": "met" if worst[0] <= limit else "missed",
            }
        )
    conv = result.get("convert")
    if conv and "convert/baseline" in conv:
        r = conv["convert/baseline"]
        out.append(
            {
                "target": f"convert <= 2x load+check+save ({conv['nodes_in']} nodes, {conv['strategy']})",
                "limit": 2.0,
                "worst": r,
                "status": "met" if r <= 2 else "missed",
            }
        )
        if "convert_native/baseline" in conv:
            r = conv["convert_native/baseline"]
            out.append(
                {
                    "target": "convert, nothing rewritten (strategy native) <= 2x load+check+save",
                    "limit": 2.0,
                    "worst": r,
                    "status": "met" if r <= 2 else "missed",
                }
            )
        out.append(
            {
                "target": f"inspect < 2 s ({conv['nodes_in']} nodes)",
                "limit": 2.0,
                "worst": conv["inspect_s"],
                "status": "met" if conv["inspect_s"] < 2 else "missed",
            }
        )
    if result.get("symbolic"):
        from .symbolic import verdict

        out.append(verdict(result["symbolic"]))
    mem = result.get("memory")
    if mem:
        from .memory import LIMIT

        label = f"lowered nucleus-sampling scatter: peak added by a run <= {LIMIT:g}x its input bytes"
        none = next((r for r in mem.get("rows", []) if "[none]" in r["case"]), None)
        if mem.get("status") != "ok" or none is None or "lowered/inputs" not in none:
            out.append(
                {
                    "target": label,
                    "status": "not measured",
                    "reason": mem.get("reason", ""),
                }
            )
        else:
            r = none["lowered/inputs"]
            out.append(
                {
                    "target": label,
                    "limit": LIMIT,
                    "worst": r,
                    "worst_case": none["case"],
                    "status": "met" if r <= LIMIT else "missed",
                }
            )
    gpu = result.get("gpu") or {}
    if gpu.get("status") != "ok":
        out.append(
            {
                "target": "GPU: lowered CumProd >= 10x the CPU-fallen model at >= 8M",
                "status": "not measured",
                "reason": gpu.get("reason", ""),
            }
        )
    else:
        big = [
            r
            for r in gpu["rows"]
            if r["case"].startswith("CumProd")
            and "speedup" in r
            and float(r["case"].split()[2]) >= 8e6
        ]
        speedup = min((r["speedup"] for r in big), default=None)
        out.append(
            {
                "target": "GPU: lowered CumProd >= 10x the CPU-fallen model at >= 8M",
                "limit": 10,
                "worst": speedup,
                "status": "not measured"
                if speedup is None
                else ("met" if speedup >= 10 else "missed"),
            }
        )
    return out


def _cell(case: dict, variant: str, notes: list) -> str:
    v = case["variants"][variant]
    if v["status"] != "ok":
        reason = v["reason"]
        if reason not in notes:
            notes.append(reason)
        return f"n/a[{notes.index(reason) + 1}]"
    ms = v["ms"]
    text = f"{ms:.3g}" if ms < 100 else f"{ms:.0f}"
    ratio = case["ratios"].get(f"{variant}/native")
    if ratio is not None:
        text += f" ({ratio:.2f}x)"
    if not v.get("agrees", True):
        text += "!"
    return text


def table(result: dict) -> str:
    notes: list[str] = []
    head = f"{'case':46} {'native ms':>10} {'fallback ms':>16} {'lowered ms':>18} {'numpy ms':>16}"
    lines = [f"# {result['meta']['summary']}", head, "-" * len(head)]
    for c in result["cases"]:
        lines.append(
            f"{c['name']:46} "
            + " ".join(
                f"{_cell(c, v, notes):>{w}}"
                for v, w in (
                    ("native", 10),
                    ("fallback", 16),
                    ("lowered", 18),
                    ("numpy", 16),
                )
            )
        )
    lines.append(
        "(x) = time / native time, medians of interleaved runs; '!' = output outside the agreement bound"
    )
    lines += [f"[{i + 1}] {n}" for i, n in enumerate(notes)]
    conv = result.get("convert")
    if conv:
        ms = conv["ms"]
        lines.append(
            f"\nconvert ({conv['strategy']}, target {conv['target']}) of a {conv['nodes_in']}-node model "
            f"({conv['nodes_out']} nodes out, {conv['summary']}): {ms['convert_save']:.0f} ms vs load+check+save "
            f"{ms['load_check_save']:.0f} ms = {conv['convert/baseline']}x; inspect {ms['inspect']:.0f} ms"
        )
        if "convert_native/baseline" in conv:
            lines.append(
                f"convert --strategy native (nothing rewritten) of the same model: {ms['convert_save_native']:.0f} ms"
                f" = {conv['convert_native/baseline']}x"
            )
    from .convert_floor import table_lines

    lines += table_lines(result.get("convert_floor"), result.get("convert_memory"))
    for r in result.get("cumprod_proto", []):
        lines.append(
            f"CumProd prototype {r['shape']} axis {r['axis']}: native {r['ms']['native']} ms, lowered "
            f"{r['lowered/native']}x, prototype {r['proto/native']}x ({r['nodes']['proto']} nodes)"
        )
    if result.get("symbolic"):
        from .symbolic import table as symbolic_table

        lines += symbolic_table(result["symbolic"])
    mem = result.get("memory")
    if mem:
        if mem.get("status") != "ok":
            lines.append(f"\nmemory: n/a ({mem.get('reason')})")
        else:
            lines.append(
                f"\npeak memory added by one run (inputs {mem['input_bytes'] / 1e6:.1f} MB, output "
                f"{mem['output_bytes'] / 1e6:.1f} MB):"
            )
            for r in mem["rows"]:
                cells = [
                    f"{v} {r[v]['added_bytes'] / 1e6:.1f} MB ({r[f'{v}/inputs']}x inputs)"
                    if "added_bytes" in r[v]
                    else f"{v} error: {r[v].get('error')}"
                    for v in ("native", "lowered")
                ]
                lines.append(
                    f"  {r['case']}: "
                    + ", ".join(cells)
                    + ("" if r.get("outputs_agree", True) else " (outputs differ!)")
                )
    gpu = result.get("gpu")
    if gpu:
        if gpu.get("status") != "ok":
            lines.append(f"\nGPU: n/a ({gpu.get('reason')})")
        else:
            lines.append(
                f"\nGPU ({gpu['provider']}): lowered on the GPU vs op left native (falls to the CPU)"
            )
            for r in gpu["rows"]:
                if "error" in r:
                    lines.append(f"  {r['case']:40} error: {r['error']}")
                else:
                    lines.append(
                        f"  {r['case']:40} lowered {r['lowered_gpu']} ms, left native {r['left_native']} ms, "
                        f"speedup {r['speedup']}x; placement lowered {r['placement_lowered']}, "
                        f"left native {r['placement_left_native']}"
                    )
    lines.append("\ntargets (sizes >= 1e5):")
    for v in result.get("verdicts", []):
        extra = (
            f" worst {v['worst']} (limit {v['limit']})"
            if v.get("worst") is not None
            else ""
        )
        extra += f" at {v['worst_case']}" if v.get("worst_case") else ""
        lines.append(f"  {v['status']:12} {v['target']}{extra}")
    return "\n".join(lines)


class MissingMatplotlib(RuntimeError):
    pass


def chart(result: dict, path: str) -> str:
    """Ratios to the native kernel vs size, one panel per op (float32), axis last solid / first dashed."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise MissingMatplotlib(
            "--chart needs matplotlib: pip install 'ort-dml-ops[bench]'"
        ) from exc
    kinds = []
    for c in result["cases"]:
        k = (c["op"], c["reduction"])
        if k not in kinds:
            kinds.append(k)
    cols = min(4, len(kinds)) or 1
    rows = (len(kinds) + cols - 1) // cols
    fig, axes = plt.subplots(
        rows, cols, figsize=(3.2 * cols, 2.6 * rows), squeeze=False, sharey=True
    )
    colours = {"fallback": "tab:orange", "lowered": "tab:green", "numpy": "tab:blue"}
    for ax, (op, red) in zip(axes.flat, kinds):
        for variant, colour in colours.items():
            for axis, style in (("last", "-"), ("first", "--")):
                pts = sorted(
                    (c["size"], c["ratios"][f"{variant}/native"])
                    for c in result["cases"]
                    if (c["op"], c["reduction"]) == (op, red)
                    and c["axis"] == axis
                    and c["dtype"] == "float32"
                    and c["ratios"].get(f"{variant}/native")
                )
                if pts:
                    ax.plot(
                        *zip(*pts),
                        style,
                        color=colour,
                        marker=".",
                        lw=1,
                        label=f"{variant} ({axis})",
                    )
        ax.axhline(1, color="black", lw=0.6)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(f"{op}[{red}]" if red else op, fontsize=9)
        ax.tick_params(labelsize=7)
        ax.grid(True, which="major", lw=0.3)
    for ax in axes.flat[len(kinds) :]:
        ax.axis("off")
    for ax in axes[:, 0]:
        ax.set_ylabel("time / native CPU kernel", fontsize=8)
    for ax in axes[-1, :]:
        ax.set_xlabel("elements", fontsize=8)
    seen: dict = {}
    for ax in axes.flat:  # one legend entry per line style, from whichever panel has it
        for h, lab in zip(*ax.get_legend_handles_labels()):
            seen.setdefault(lab, h)
    fig.legend(list(seen.values()), list(seen), loc="lower right", fontsize=7, ncol=3)
    fig.suptitle(f"float32 on the CPU EP — {result['meta']['summary']}", fontsize=8)
    fig.tight_layout(rect=(0, 0.04, 1, 0.95))
    fig.savefig(
        path, dpi=72, format="png"
    )  # `path` may be a temporary name (writes.py)
    plt.close(fig)
    return path


def _fmt_ms(ms: float) -> str:
    return f"{ms:.3g}" if ms < 1000 else f"{ms:,.0f}"


def markdown(result: dict) -> str:
    """Markdown tables (rows: op, dtype, axis; columns: sizes): native ms, then each variant's
    ratio to native; where native is n/a, the variant's own time in ms, in italics."""
    cases = result["cases"]
    sizes = sorted({c["size"] for c in cases})
    rows: list = []
    for c in cases:
        key = (c["op"], c["reduction"], c["dtype"], c["axis"])
        if key not in rows:
            rows.append(key)
    by = {(c["op"], c["reduction"], c["dtype"], c["axis"], c["size"]): c for c in cases}
    notes: list[str] = []

    def note(reason: str) -> str:
        if reason not in notes:
            notes.append(reason)
        return f"n/a[{notes.index(reason) + 1}]"

    head = (
        "| case | " + " | ".join(f"{s:.0e}".replace("e+0", "e") for s in sizes) + " |"
    )
    sep = "|---|" + "---:|" * len(sizes)
    out = []
    for variant, title in (
        ("native", "ONNX Runtime's native CPU kernel, ms per run"),
        ("fallback", "Python fallback / native"),
        ("lowered", "lowered graph on the CPU EP / native"),
        ("numpy", "numpy / native"),
    ):
        out += [f"**{title}**", "", head, sep]
        for op, red, dtype, axis in rows:
            cells = []
            for s in sizes:
                c = by.get((op, red, dtype, axis, s))
                if c is None:
                    cells.append("")
                    continue
                v = c["variants"][variant]
                if v["status"] != "ok":
                    cells.append(note(v["reason"]))
                elif variant == "native":
                    cells.append(_fmt_ms(v["ms"]))
                elif c["ratios"].get(f"{variant}/native") is not None:
                    cells.append(
                        f"{c['ratios'][f'{variant}/native']:.2f}"
                        + ("" if v.get("agrees", True) else " !")
                    )
                else:
                    cells.append(
                        f"*{_fmt_ms(v['ms'])} ms*"
                        + ("" if v.get("agrees", True) else " !")
                    )
            label = f"{op}[{red}]" if red else op
            out.append(
                f"| {label} {'f16' if dtype == 'float16' else 'f32'} {axis} | "
                + " | ".join(cells)
                + " |"
            )
        out.append("")
    out += [f"[{i + 1}] {n}" for i, n in enumerate(notes)]
    if result.get("symbolic"):
        from .symbolic import markdown as symbolic_markdown

        out += ["", *symbolic_markdown(result["symbolic"])]
    return "\n".join(out)
