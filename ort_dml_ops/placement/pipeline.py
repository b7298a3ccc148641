"""ONNX Runtime's session creation, as far as it decides where nodes run: the steps in order.

1. load (``load.py``, graph.cc): Constant nodes become initializers; then one
   DequantizeLinear per QDQ node unit (``qdq.py``), before any optimizer.
2. level-1 optimizers, repeated until nothing changes (``GraphTransformerManager``, at most
   ``STEPS`` rounds; each round runs, in this order, the rewrite rules (``rules.py``), constant
   sharing and common-subexpression elimination (``cse.py``), constant folding
   (``folding.py``), MatMulAddFusion (``matmul_add_fusion.py``), ReshapeFusion
   (``reshape_fusion.py``: Concat-built shapes, contiguous reshapes),
   QDQPropagationTransformer (``qdq_propagation.py``), EnsureUniqueDQForNodeUnit
   (``qdq.py``) and the
   TransposeOptimizer (``transpose_optimizer.py``: Transposes pushed through, merged, cancelled); on every graph
   level.
3. partitioning (``core/framework/graph_partitioner.cc``): the target EP's ``GetCapability``
   takes the nodes its kernels and support queries accept, minus ``GetCpuPreferredNodes``
   (``fallback_cpu.py``); for an EP whose kernels run in NHWC, ORT's layout transformation
   between its two GetCapability calls (``layout_transformation.py``); the CPU EP takes the
   rest. ORT's assignment record
   (``session.record_ep_graph_assignment_info``) is taken here.
4. copies (``memcpy.py``): the Memcpy nodes inserted between CPU and device values.

Per-node kernel rules (since-version, kernel lookup, DML support queries, types) are
``ort_dml_ops.targets``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from . import (
    cse,
    fallback_cpu,
    folding,
    layout_transformation,
    matmul_add_fusion,
    memcpy,
    qdq,
    qdq_propagation,
    reshape_fusion,
    rules,
    transpose_optimizer,
)
from .graph import Graph, implicit_inputs
from .load import build_graph

STEPS = 10
CPU = "CPUExecutionProvider"


@dataclass
class NodeReport:
    """Where one node runs and why: a row of `inspect`'s report (its JSON: to_dict)."""

    name: str
    op_type: str
    domain: str
    since_version: int | None
    provider: str | None
    reason: str
    # the ORT step that removed it before partitioning ("" when it runs)
    removed_by: str = ""
    # on the CPU by GetCpuPreferredNodes, although the GPU EP has a kernel
    cpu_preferred: bool = False
    # the ORT step that added it ("" for the model's own nodes)
    added_by: str = ""
    # "" for the main graph, "<node>/<attribute>" for a node of a subgraph
    graph: str = ""

    @property
    def folded(self) -> bool:
        return self.provider is None and bool(self.removed_by)

    def to_dict(self) -> dict:
        d = {
            "name": self.name,
            "op_type": self.op_type,
            "domain": self.domain,
            "since_version": self.since_version,
            "provider": self.provider,
            "reason": self.reason,
        }
        if self.removed_by:
            d["removed_by"] = self.removed_by
        if self.cpu_preferred:
            d["cpu_preferred"] = True
        if self.added_by:
            d["added_by"] = self.added_by
        if self.graph:
            d["graph"] = self.graph
        return d


@dataclass
class Result:
    nodes: list = field(default_factory=list)
    copies: list = field(default_factory=list)


def optimize(
    graph: Graph,
    types: dict,
    shapes: dict,
    opsets: dict,
    has_cpu_kernel,
    symbols: dict | None = None,
    reshape_by_names: bool = True,
    reshape_versions: frozenset[int] | None = None,
) -> None:
    """Level-1 optimizers on one graph level and its subgraphs, until a round changes nothing.

    A pass that changes nothing leaves the graph as it was, and each pass is a function of the
    graph: once every pass in a row has left it alone, the rest of the round and the next one
    would too, so they are not run (the graph ORT ends with is the same). `symbols`: value ->
    its dims' symbolic names, where ORT compares dims by them; `reshape_by_names`: ReshapeFusion
    compares them too (the target's ORT build, `Target.reshape_shapes_by_dim_names`);
    `reshape_versions`: the Reshape versions its ReshapeFusion takes (None: all,
    `Target.reshape_fusion_versions`)."""
    symbols = symbols or {}
    passes = (
        lambda: rules.apply(graph, types, shapes, opsets),
        lambda: cse.share_constants(graph),
        lambda: cse.eliminate(graph, opsets),
        lambda: folding.fold(graph, types, shapes, opsets, has_cpu_kernel),
        lambda: matmul_add_fusion.fuse(graph, types, shapes, opsets, symbols),
        lambda: reshape_fusion.fuse(
            graph,
            shapes,
            symbols if reshape_by_names else None,
            opsets,
            reshape_versions,
        ),
        lambda: qdq_propagation.propagate(graph, opsets),
        lambda: qdq.ensure_unique_dq(graph, types, shapes),
        lambda: transpose_optimizer.optimize(graph, types, shapes, opsets),
    )
    idle = 0  # passes run in a row that changed nothing
    for _ in range(STEPS):
        changed = False
        for step in passes:
            if idle == len(passes):
                break
            if step():
                changed, idle = True, 0
            else:
                idle += 1
        if not changed:
            break
    for node in graph.nodes:
        for _, sg in node.subgraphs:
            optimize(
                sg,
                types,
                shapes,
                opsets,
                has_cpu_kernel,
                symbols,
                reshape_by_names,
                reshape_versions,
            )


def _on_every_level(graph: Graph, step) -> None:
    step(graph)
    for node in graph.nodes:
        for _, sg in node.subgraphs:
            _on_every_level(sg, step)


def run(
    work,
    tgt,
    opsets: dict,
    types: dict,
    shapes: dict,
    optimized: bool = True,
    symbols: dict | None = None,
) -> Result:
    """Place every node of `work` (an inlined, uniquely named ModelProto) on `tgt`."""
    graph = build_graph(work.graph)

    def has_cpu_kernel(node):
        d = tgt.explain(node, opsets, types)
        k, _ = (
            tgt.cpu_table.find(
                node.op_type, node.domain, d.since_version, lambda c: None
            )
            if d.since_version is not None
            else (None, None)
        )
        return d.provider is not None and (d.provider == CPU or k is not None)

    # QDQ node units made whole before any optimizer, at every level (qdq.py)
    _on_every_level(graph, lambda g: qdq.ensure_unique_dq(g, types, shapes))
    if optimized:
        optimize(
            graph,
            types,
            shapes,
            opsets,
            has_cpu_kernel,
            symbols,
            tgt.reshape_shapes_by_dim_names,
            tgt.reshape_fusion_versions,
        )
    result = Result()
    _place(graph, tgt, opsets, types, shapes, result, outer_implicit=(), label="")
    return result


def _capability(graph: Graph, tgt, opsets, types) -> dict:
    """{node: the target's decision}: its GetCapability (NHWC nodes as their ONNX op)."""
    return {
        n: tgt.explain(layout_transformation.as_looked_up(n), opsets, types)
        for n in graph.nodes
    }


def _place(
    graph: Graph, tgt, opsets, types, shapes, result: Result, outer_implicit, label
) -> None:
    decisions = _capability(graph, tgt, opsets, types)
    # an EP whose kernels run in NHWC: TransformLayoutForEP, then its second GetCapability
    nhwc = {n for n, d in decisions.items() if layout_transformation.runs_in_nhwc(d)}
    if nhwc and layout_transformation.transform(graph, nhwc, types, shapes, opsets):
        decisions = _capability(graph, tgt, opsets, types)
    order = graph.topological()
    preferred: set = set()
    # a plugin EP does not get ORT's GetCpuPreferredNodes pass (WebGPU: measured, docs/webgpu.md)
    if tgt.is_gpu and getattr(tgt, "cpu_preferred", True):
        tentative = {
            n: d.target_kernel
            for n, d in decisions.items()
            if d.target_lookup and d.target_kernel
        }
        preferred = fallback_cpu.cpu_preferred(graph, order, tentative, types)
    provider, kernel = {}, {}
    placed = {}
    for node in graph.nodes:
        d = decisions[node]
        prov, reason, k = d.provider, d.reason, d.kernel
        cpu_pref = False
        if node in preferred and d.on_target:
            ck, _ = tgt.cpu_table.find(
                node.op_type, node.domain, d.since_version, lambda c: None
            )
            if ck is not None:
                prov, k, cpu_pref = CPU, ck, True
                reason = (
                    "kept on the CPU by ORT's GetCpuPreferredNodes (fallback_cpu_capability.cc): "
                    "its inputs are CPU-side shape values or small constants"
                )
        provider[node], kernel[node] = prov, k
        placed[node.name] = NodeReport(
            node.name,
            node.op_type,
            node.domain,
            d.since_version,
            prov,
            reason,
            cpu_preferred=cpu_pref,
            added_by=node.origin,
            graph=label,
        )
    for stub, (step, why) in graph.removed.items():
        since = tgt.explain(
            layout_transformation.as_looked_up(stub), opsets, types
        ).since_version
        placed.setdefault(
            stub.name,
            NodeReport(
                stub.name,
                stub.op_type,
                stub.domain,
                since,
                None,
                why,
                removed_by=step,
                graph=label,
            ),
        )
    # report order: the model's order of this level, nodes of subgraphs after their parent
    for node in _model_order(graph):
        r = placed.get(node.name)
        if r is not None:
            result.nodes.append(r)
        if node in provider:
            for attr, sg in node.subgraphs:
                _place(
                    sg,
                    tgt,
                    opsets,
                    types,
                    shapes,
                    result,
                    implicit_inputs(node),
                    f"{node.name}/{attr}",
                )
    if tgt.is_gpu:
        result.copies.extend(
            memcpy.copies(graph, provider.get, kernel.get, CPU, outer_implicit)
        )


def _model_order(graph: Graph) -> list:
    pos = {name: i for i, name in enumerate(graph.model_order)}
    return sorted(
        list(graph.nodes) + list(graph.removed),
        key=lambda n: (pos.get(n.name, 1 << 30), n.index),
    )
