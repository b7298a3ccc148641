"""Place and rewrite: for every CumSum / CumProd / scatter node of every graph (main graph,
If/Loop/Scan bodies, model-local functions) decide native / lowered / cast / cpu / fallback
(the Target in targets/ says which EP runs the node and why) and apply the rule; one
`NodeReport` per node."""

from __future__ import annotations

import dataclasses

import onnx_ir as ir
import onnx_ir.passes

from ..._domain import DOMAIN
from ...errors import UserError, node_label
from ...targets.dml_rules import scatter_fit
from .._common import known_dims, serde_reason, walk_graphs
from ..report import NodeReport
from ..rules import FAMILY_OPS, RULES, cost
from ..rules._base import Rewrite, RewriteContext, Rule, onnx_domain
from ..rules.emitter import Emitter
from ..rules.fallback import route_to_fallback
from ..rules.scatter_guard import drop_unread_views, guard_graph
from . import signature
from .state import ConvertState


class RewritePass(onnx_ir.passes.InPlacePass):
    """Decide and rewrite every family node; the reports go to `state.reports`."""

    def __init__(self, state: ConvertState):
        super().__init__()
        self.state = state

    def call(self, model: ir.Model) -> onnx_ir.passes.PassResult:
        s = self.state
        main_opset = model.opset_imports.get("", 0)
        memo = _Memo(tuple(sorted(model.opset_imports.items())))
        suffixes: dict[str, int] = {}  # RewriteContext.unique's, shared as names are
        model_opsets = dict(model.opset_imports)
        max_io_width = _max_io_width(s.target)
        for graph, where, opset in walk_graphs(model, main_opset):
            nodes = list(graph)
            positions = {n: i for i, n in enumerate(nodes)}
            for node in nodes:
                if (onnx_domain(node.domain), node.op_type) not in FAMILY_OPS:
                    continue
                strategy, only_rule = _node_strategy(node, s)
                ctx = RewriteContext(
                    opset=opset,
                    target=s.target,
                    names=s.names,
                    suffixes=suffixes,
                    check_indices=s.check_indices,
                    options={
                        "model_opsets": model_opsets,
                        "max_io_width": max_io_width,
                        "size_hints": s.size_hints,
                        "size_bounds": s.size_bounds,
                        "only_rule": only_rule,
                    },
                    graph=graph,
                    positions=positions,
                )
                try:
                    s.reports.append(
                        _convert_node(graph, node, where, ctx, strategy, memo)
                    )
                except UserError:
                    raise
                except Exception as exc:  # noqa: BLE001 - a rule that cannot handle this node: one line, not a traceback
                    raise UserError(
                        f"{node_label(node)}: cannot convert it ({serde_reason(exc)})"
                    ) from None
            _guard(graph, opset, s, suffixes)
        modified = any(r.rewritten for r in s.reports)
        return onnx_ir.passes.PassResult(model, modified=modified)


def _node_strategy(node: ir.Node, s: ConvertState) -> tuple[str, str | None]:
    """The node's strategy and the one rule it may use ("rule:NAME": strategy lower with that
    rule alone; None: any rule), from `state.node_strategies` by its first output's name."""
    first = node.outputs[0].name if node.outputs else None
    strategy = s.node_strategies.get(first or "", s.strategy)
    if strategy.startswith("rule:"):
        return "lower", strategy.removeprefix("rule:")
    return strategy, None


def _guard(graph, opset: int, s: ConvertState, suffixes: dict[str, int]) -> None:
    """The graph's one run-time guard over the flags its lowered scatters registered
    (rules/scatter_guard.guard_graph), appended after every other node."""
    ctx = RewriteContext(
        opset=opset, target=s.target, names=s.names, suffixes=suffixes, graph=graph
    )
    nodes = guard_graph(Emitter(ctx, "scatter_guard"), s.target == "webgpu")
    if nodes:
        graph.extend(nodes)
        drop_unread_views(graph)


def _max_io_width(target: str) -> int | None:
    """The target's cap on a node's inputs/outputs (targets/: WebGPU binds 8 storage buffers)."""
    from ...targets import get_target

    return get_target(target).max_io_width


class _Memo:
    """Per-key decisions of one pass over a model (keys: passes/signature.py)."""

    def __init__(self, opsets: tuple):
        self.opsets = opsets
        self.plans: dict = {}
        self.consts: dict = {}  # value -> signature of its constant content


@dataclasses.dataclass(frozen=True)
class _Plan:
    """What `_convert_node` decides before it rewrites: the same for every node of one key."""

    native: bool
    native_why: str
    costs: dict
    #: (rule, Refusal) of each rule tried before `rule`, the first whose check passed (None: none)
    refused: tuple
    rule: Rule | None
    #: why the native kernel is the costlier choice (strategy auto, native nodes), or None
    costly: str | None
    #: why ORT's CPU kernel beats the lowering (strategy auto, cost.cheaper_on_cpu), or None
    cpu_cheaper: str | None


def _plan(node: ir.Node, ctx: RewriteContext, strategy: str, memo: _Memo) -> _Plan:
    key = signature.node_key(
        node,
        ctx.target,
        memo.opsets,
        ctx.opset,
        (
            strategy,
            ctx.options.get("only_rule"),
            ctx.check_indices,
            ctx.options.get("max_io_width"),
            _hinted_sizes(node, ctx),
        ),
        memo.consts,
    )
    plan = memo.plans.get(key) if key is not None else None
    if plan is None:
        native, native_why = _native(node, ctx)
        refused, passing = [], None
        only = ctx.options.get("only_rule")
        for rule in RULES:
            if not (rule.match(node) and rule.applies_to(ctx.target)):
                continue
            if only is not None and rule.name != only:
                continue
            why = rule.check(node, ctx)
            if why is None:
                passing = rule
                break
            refused.append((rule, why))
        costs = cost.for_node(node, ctx, native, lowerable=passing is not None)
        costly = _native_costlier(node, ctx) if strategy == "auto" and native else None
        cpu_cheaper = cost.cheaper_on_cpu(costs) if strategy == "auto" else None
        if passing is not None and passing.action == "cast":
            # a cast rule is the target's own kernel between two to four elementwise Casts:
            # no lowering's kernels or passes for the CPU path to beat
            cpu_cheaper = None
        if (
            cpu_cheaper
            and not _cpu_kernel_exists(node, ctx)
            and not _lowering_copies_more(costs)
        ):
            cpu_cheaper = None
        plan = _Plan(
            native, native_why, costs, tuple(refused), passing, costly, cpu_cheaper
        )
        if key is not None:
            memo.plans[key] = plan
    return plan


def _hinted_sizes(node: ir.Node, ctx: RewriteContext) -> tuple:
    """The hinted dims of the node's tensors (part of its memo key: two nodes alike but for
    their hinted sizes may cost differently)."""
    hints = ctx.options.get("size_hints") or {}
    bounds = ctx.options.get("size_bounds") or {}
    if not hints and not bounds:
        return ()
    values = [*node.inputs, *node.outputs]
    return tuple(
        (hints.get(v.name), bounds.get(v.name)) if v is not None and v.name else None
        for v in values
    )


def _convert_node(
    graph,
    node: ir.Node,
    where: str,
    ctx: RewriteContext,
    strategy: str,
    memo: _Memo | None = None,
) -> NodeReport:
    memo = memo or _Memo(tuple(sorted(ctx.options.get("model_opsets", {}).items())))
    rep = NodeReport(node.name or "", node.op_type, node.domain, where, "native", "")
    plan = _plan(node, ctx, strategy, memo)
    native, native_why = plan.native, plan.native_why
    costs = plan.costs
    rep.cost = cost.report(costs)
    if strategy == "native":
        rep.reason = "strategy native: " + native_why
        return rep
    if strategy == "fallback":
        if node.domain == DOMAIN:
            rep.action, rep.reason = "fallback", "already a fallback op"
            return rep
        return _apply_fallback(graph, node, ctx, rep, "strategy fallback")
    costly = plan.costly
    if strategy == "auto" and native and costly is None:
        rep.reason = native_why
        return rep
    if costly:
        native_why = f"{native_why}, but {costly}"
    refusals = []
    refused, passing = plan.refused, plan.rule
    message = plan.cpu_cheaper
    if strategy == "auto" and passing is not None and passing.action == "cast":
        message = _cast_copies_more(node, ctx)
    if message:
        refusals.append(f"cost: {message}")
        rep.refusals.append(
            {"rule": "cost", "code": "cpu-path-cheaper", "message": message}
        )
        refused, passing = (), None
    for rule, why in refused:
        refusals.append(f"{rule.name}: {why}")
        rep.refusals.append({"rule": rule.name, **why.to_dict()})
    if passing is not None:
        rule = passing
        ctx.anchor = node
        _read_past_identities(node)
        rw = _own_outputs(rule.rewrite(node, ctx), node, ctx)
        _replace(graph, node, rw)
        rep.action = rule.action
        rep.reason = (
            f"{native_why}; " if not native or costly else "strategy lower; "
        ) + rule.describe()
        rep.emitted = [n.name or "" for n in rw.nodes]
        rep.note = rw.note
        return rep
    refused_text = "; ".join(refusals) if refusals else "no rule rewrites this node"
    if native:
        rep.reason = f"{native_why} (not lowered: {refused_text})"
        return rep
    if (
        ctx.target == "webgpu"
        and node.domain != DOMAIN
        and _decision(node, ctx).provider == "CPUExecutionProvider"
    ):
        # The CPU EP's own kernel beats the Python fallback (both on the CPU); what the WebGPU EP
        # leaves to the CPU (int64 / float64 data) takes its neighbours of that type along.
        rep.reason = f"{native_why}; not lowered: {refused_text}; stays on the CPU EP's native kernel"
        return rep
    if node.domain == DOMAIN:
        rep.action, rep.reason = (
            "fallback",
            f"{native_why}; not lowered: {refused_text}; stays on the Python fallback",
        )
        return rep
    # ONNX Runtime's own C++ kernel on the CPU beats the Python fallback, and leaving the node
    # untouched keeps the model loadable in plain onnxruntime: the fallback is for nodes no
    # execution provider of the session can run (e.g. float16 scatter add/mul on the CPU EP).
    on_cpu, cpu_why = _native(node, dataclasses.replace(ctx, target="cpu"))
    if on_cpu:
        rep.action = "cpu"
        rep.reason = (
            f"{native_why}; not lowered: {refused_text}; left to ONNX Runtime's CPU kernel "
            f"({cpu_why.removeprefix('the cpu EP has a kernel').strip(' ()') or 'it has one'}); "
            "the model still loads in plain onnxruntime"
        )
        return rep
    return _apply_fallback(
        graph, node, ctx, rep, f"{native_why}; not lowered: {refused_text}"
    )


def _read_past_identities(node: ir.Node) -> None:
    """Point the node's inputs past the Identity nodes before it, and drop an Identity nothing
    reads any more. An If that fold_if inlines leaves one Identity per branch output, so the
    four scatters of scatter_reduce_torchscript read x, index and src through four Identities
    each: the emitter's memo keys on values, so each lowering computed its sizes and guard
    checks again, and ORT merged 184 of those nodes only after removing the Identities
    (EliminateIdentity, then CommonSubexpressionElimination). An unread Identity would also
    leave the DML EP's graph fusion a partition with an unused output (tests'
    test_no_dead_nodes)."""
    for i, value in enumerate(node.inputs):
        source = value
        while source is not None:
            producer = source.producer()
            if (
                producer is None
                or producer.op_type != "Identity"
                or producer.domain != ""
            ):
                break
            source = producer.inputs[0]
        if value is None or source is None or source is value:
            continue
        node.replace_input_with(i, source)
        graph = node.graph  # a function's nodes too: its own graph
        dead = value.producer()
        while (
            graph is not None
            and dead is not None
            and dead.op_type == "Identity"
            and dead.graph is graph
            and not dead.outputs[0].uses()
            and not dead.outputs[0].is_graph_output()
        ):
            upstream = dead.inputs[0]
            graph.remove(dead, safe=True)
            dead = upstream.producer() if upstream is not None else None


def _cpu_kernel_exists(node: ir.Node, ctx: RewriteContext) -> bool:
    """Would the node, left untouched, run on ONNX Runtime's own CPU kernel? Not where the CPU
    EP has no kernel (float16 scatter add / mul, the custom CumProd: the Python fallback, which
    no estimate covers), nor where the target EP claims the node and then fails on it (DML's
    ScatterElements with indices smaller than the data off the axis: `_native` says why)."""
    if ctx.target == "cpu" or node.domain == DOMAIN:
        return False
    on_cpu, _ = _native(node, dataclasses.replace(ctx, target="cpu"))
    return on_cpu and _decision(node, ctx).provider == "CPUExecutionProvider"


def _cast_copies_more(node: ir.Node, ctx: RewriteContext) -> str | None:
    """Why a cast rule's move of `node` onto the target copies more a run than ORT's CPU kernel
    where it stands, or None. A cast rule runs the target's own kernel between Casts, so no
    estimate weighs it; what decides is where its neighbours run. Counted at its edges: each
    input made on the other side of the node's place costs a copy (up to the target, or down to
    the CPU), and so does an output read on the other side. Inputs made on the CPU and read
    back there — a bool scatter between two bool Transposes the WebGPU plugin does not run, an
    int64 scatter-add fed by int64 Reshapes — make the move a loss: four copies where the CPU
    kernel had none (hf_top_p's export on WebGPU: 4 → 7 copies a run for the whole model).
    Graph inputs and outputs count on neither side (a caller may bind them on the device),
    constants neither (ORT places an initializer where its reader runs). Neighbours are placed
    by the capability model (`_in_device_memory`); a producer rewritten before (a cast rule's
    last Cast) is on the target."""
    seen: set[int] = set()
    on_target = on_cpu = 0
    for v in node.inputs:
        if v is None or id(v) in seen or v.is_graph_input() or v.is_initializer():
            continue
        seen.add(id(v))
        producer = v.producer()
        if producer is None or producer.op_type == "Constant":
            continue
        if _in_device_memory(producer, v.index(), ctx, output=True):
            on_cpu += 1
        else:
            on_target += 1
    for out in node.outputs:
        sides = {_in_device_memory(r, j, ctx, output=False) for r, j in out.uses()}
        on_cpu += True in sides
        on_target += False in sides
    if on_target <= on_cpu:
        return None
    return (
        f"its neighbours run on the CPU: on {ctx.target} it copies {on_target} time(s) a run "
        f"at its edges, on ORT's CPU kernel {on_cpu}"
    )


def _in_device_memory(
    node: ir.Node, index: int | None, ctx: RewriteContext, output: bool
) -> bool:
    """Is `node`'s output (`output`) or input `index` in device memory? Where the target EP runs
    the node (`_native`) and its kernel does not declare that argument in CPU memory (the kernel
    tables' cpu_outputs / cpu_inputs: Shape and Size write host memory, Reshape reads its shape
    there) — ORT's rule for its copies, which placement/memcpy.py models for `inspect`."""
    if not _native(node, ctx)[0]:
        return False
    kernel = _decision(node, ctx).kernel
    if kernel is None:
        return True
    return index not in (kernel.cpu_outputs if output else kernel.cpu_inputs)


def _lowering_copies_more(costs: dict[str, cost.OptionCost]) -> bool:
    """Does the lowering copy more per run than the CPU path between its copies? Where that
    path is the Python fallback (no ORT CPU kernel: the custom CumProd), no estimate weighs it,
    but a lowering that leaves the device this often loses anyway (DML's float64 CumProd: 18
    copies a run, 62 at run-time sizes, where the fallback's node copies its input and output:
    cost.DML_OFF_DEVICE_CUMPROD), so the node is left as it is."""
    low, cpu = costs.get("lowered"), costs.get("cpu")
    return low is not None and cpu is not None and low.copies > cpu.copies


def _native_costlier(node: ir.Node, ctx: RewriteContext) -> str | None:
    """Why the target's native kernel is the costlier choice (rules/cost.py), or None."""
    return cost.native_costlier(node, ctx)


def _apply_fallback(graph, node, ctx, rep: NodeReport, why: str) -> NodeReport:
    rw = route_to_fallback(node, ctx)
    if rw is not None:
        rw = _own_outputs(rw, node, ctx)
    if rw is None:
        rep.action, rep.reason = "refused", f"{why}; the fallback has no {node.op_type}"
        rep.code = "no-fallback-kernel"
        return rep
    _replace(graph, node, rw)
    rep.action, rep.reason, rep.emitted, rep.note = (
        "fallback",
        why,
        [n.name or "" for n in rw.nodes],
        rw.note,
    )
    return rep


def _own_outputs(rw: Rewrite, node: ir.Node, ctx: RewriteContext) -> Rewrite:
    """Each new output produced by the rewrite's own nodes, else through an Identity.

    The emitter shares what the graph's earlier rewrites made (rules/emitter.Emitter), so a node
    identical to an earlier one (same op, inputs and attributes) gets the earlier node's output
    value back; `_replace` would then rename that value, and the earlier node's output (a graph
    output, say) would lose its name. Likewise an output that is one of the node's own inputs."""
    mine = {id(n) for n in rw.nodes}
    outputs, extra = [], []
    for v in rw.outputs:
        producer = v.producer()
        if producer is not None and id(producer) in mine:
            outputs.append(v)
            continue
        name = ctx.unique(f"{node.name or node.op_type}/Identity")
        out = ir.Value(name=ctx.unique(f"{name}:0"))
        extra.append(ir.Node("", "Identity", [v], outputs=[out], name=name))
        outputs.append(out)
    if not extra:
        return rw
    return Rewrite([*rw.nodes, *extra], outputs, rw.note)


def _replace(graph, node: ir.Node, rw) -> None:
    old_outputs = list(node.outputs)
    new_outputs = rw.outputs
    for o, n in zip(old_outputs, new_outputs):
        o_name = o.name
        n.type = o.type if o.type is not None else n.type
        n.shape = o.shape if o.shape is not None else n.shape
        ir.convenience.replace_all_uses_with(o, n, replace_graph_outputs=True)
        # keep the original output name (graph outputs, readers of the report)
        o.name = None
        n.name = o_name
    inputs = [v for v in node.inputs if v is not None]
    graph.insert_before(node, rw.nodes)
    graph.remove(node, safe=True)
    # drop initializers / Constant nodes only the old node read (the axis, mostly), and a
    # ConstantOfShape the rewrite made on the device instead (rules/scatter.py made_on_device)
    for v in inputs:
        if v.uses() or v.is_graph_output() or v.is_graph_input():
            continue
        inits = getattr(graph, "initializers", None)
        if inits is not None and v.name in inits and v.is_initializer():
            del inits[v.name]
        elif (
            (producer := v.producer()) is not None
            and producer.domain == ""
            and producer.op_type in ("Constant", "ConstantOfShape")
            and not producer.outputs[0].uses()
        ):
            graph.remove(producer, safe=True)
    for n in [
        n for n in rw.nodes if n.op_type == "Constant" and not n.outputs[0].uses()
    ]:
        graph.remove(n, safe=True)


def _decision(node: ir.Node, ctx: RewriteContext):
    """The capability model's Decision for `node` on the target (targets/target.py; the
    Target remembers it per signature)."""
    from ...targets import get_target

    proto = ir.serde.serialize_node(node)
    types = {}
    for v in list(node.inputs) + list(node.outputs):
        if v is not None and v.name and v.type is not None and v.dtype is not None:
            types[v.name] = int(v.dtype)
    return get_target(ctx.target).explain(
        proto, ctx.options.get("model_opsets", {"": ctx.opset}), types
    )


def _native(node: ir.Node, ctx: RewriteContext) -> tuple[bool, str]:
    """Does the target EP itself run this node (the capability model in targets/)?"""
    if node.domain == DOMAIN:
        return False, f"{DOMAIN}::{node.op_type} is a Python fallback op (CPU)"
    try:
        from ...targets import get_target

        t = get_target(ctx.target)
        d = _decision(node, ctx)
        provider = getattr(d, "provider", None)
        reason = getattr(d, "reason", "") or ""
        on_target = getattr(d, "on_target", provider == t.provider)
        short = {
            "DmlExecutionProvider": "DML",
            "CUDAExecutionProvider": "CUDA",
            "CPUExecutionProvider": "CPU",
            "WebGpuExecutionProvider": "WebGPU",
        }
        if on_target:
            mismatch = (
                _dml_scatter_shape_mismatch(node) if ctx.target == "dml" else None
            )
            if mismatch:
                return False, mismatch
            if getattr(d, "fails_at_run", None):
                return False, f"the {ctx.target} EP claims it but {d.fails_at_run}"
            return (
                True,
                f"the {ctx.target} EP has a kernel ({reason})"
                if reason
                else f"the {ctx.target} EP has a kernel",
            )
        where = short.get(provider, "no EP") if provider else "no EP"
        return False, f"not on {ctx.target}: runs on {where}" + (
            f" ({reason})" if reason else ""
        )
    except UserError:
        raise
    except Exception as exc:  # noqa: BLE001  # pragma: no cover - capability model missing or failing
        return False, f"capability model unavailable ({type(exc).__name__}: {exc})"


def _dml_scatter_shape_mismatch(node: ir.Node) -> str | None:
    """Why DirectML refuses the scatter's shapes, where static dims prove it
    (targets/dml_rules.py `scatter_fit`): the node is then not native; unknown dims cannot be
    told."""
    if node.op_type not in ("ScatterElements", "Scatter") or len(node.inputs) < 2:
        return None
    data, indices = known_dims(node.inputs[0]), known_dims(node.inputs[1])
    if data is None or indices is None:
        return None
    fit, why = scatter_fit(data, indices, node.attributes.get_int("axis", 0))
    if fit != "refused":
        return None
    return f"the DML EP claims it but {why}; the session would fail"
