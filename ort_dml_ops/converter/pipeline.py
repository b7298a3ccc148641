"""`convert`: rewrite a model so its CumSum, CumProd and scatter nodes run on the target EP.

Data flows one way: load → bring the opset to one the target serves (rules/opset.py) →
infer shapes → for every node of the three families in every graph (main graph, If/Loop/Scan
bodies, model-local functions) decide native / lowered / cast / fallback (targets/ says what
the EP runs natively) and apply the rule → validate (checker full_check, shape inference,
graph I/O unchanged) → report, with the `inspect` report of the converted model embedded.

Strategies: `native` leaves the nodes to the EP; `lower` rewrites every node a rule can
rewrite (leaving it native, else routing it to the fallback, when no rule can); `fallback`
routes the nodes to the project's Python custom ops; `auto` keeps a node native where the
target EP has a kernel for it, else lowers it, else routes it to the fallback.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from pathlib import Path
from typing import Any, Iterator

import onnx
import onnx_ir as ir

from .._domain import DOMAIN, DOMAIN_VERSION
from ..errors import UserError
from .rules import FAMILY_OPS, RULES, opset as opset_rule
from .rules._base import RewriteContext, attr_str, const_array, onnx_domain, static_shape
from .rules.fallback import route_to_fallback
from .rules.reshape_allowzero import drop_allowzero
from ..modelio import (attach_detached, detach_large_initializers, external_data_bytes, fix_ir_version, graphs,
                      load_model, without_external_data)
from ..runnable import check_fallback_types, check_original

STRATEGIES = ("native", "lower", "fallback", "auto")
#: external data up to this size is loaded into a converted model (the API's result is then
#: self-contained); above it, the result keeps referring to the data beside the input
INLINE_LIMIT = 1 << 30
TARGETS = ("dml", "cuda", "webgpu", "cpu")


@dataclasses.dataclass
class NodeReport:
    name: str
    op_type: str
    domain: str
    graph: str
    action: str  # native / lowered / cast / cpu (ORT's CPU kernel, node untouched) / fallback / refused
    reason: str
    emitted: list[str] = dataclasses.field(default_factory=list)
    note: str = ""
    #: why the node was refused (action "refused"), as a stable code; "" otherwise
    code: str = ""
    #: each rule that matched but did not rewrite the node: {"rule", "code", "message"}
    refusals: list[dict] = dataclasses.field(default_factory=list)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


@dataclasses.dataclass
class ConvertReport:
    target: str
    strategy: str
    nodes: list[NodeReport]
    opset: dict
    inspect: Any = None  # the inspect report of the converted model (has .to_dict())
    #: whole-graph fixes made before the rules (e.g. Reshape allowzero=1 for DML), one line each
    normalized: list[str] = dataclasses.field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.normalized) or any(n.action not in ("native", "cpu") for n in self.nodes) or self.opset.get("from") != self.opset.get("to")

    def summary(self) -> dict:
        out: dict[str, int] = {}
        for n in self.nodes:
            out[n.action] = out.get(n.action, 0) + 1
        return out

    def to_dict(self) -> dict:
        d = {
            "target": self.target,
            "strategy": self.strategy,
            "opset": self.opset,
            "normalized": self.normalized,
            "summary": self.summary(),
            "nodes": [n.to_dict() for n in self.nodes],
        }
        if self.inspect is not None:
            d["inspect"] = self.inspect.to_dict() if hasattr(self.inspect, "to_dict") else self.inspect
        return d


@dataclasses.dataclass
class ConvertResult:
    model: onnx.ModelProto
    report: ConvertReport
    #: where `model`'s external tensors live (their locations are relative to it) when the
    #: output keeps its data external; None when the model is self-contained. Pass it to
    #: `modelio.save_model_atomic(..., external_data_dir=...)` to write the data beside the output.
    external_data_dir: Path | None = None


# --------------------------------------------------------------------------------------
def convert(model: onnx.ModelProto | str | os.PathLike | bytes, target: str = "dml", *, strategy: str = "auto",
            check_indices: bool = True, validate: bool = True, with_inspect: bool = True,
            keep_external_data: bool = False) -> ConvertResult:
    """Rewrite `model` for `target` ("dml", "cuda", "webgpu", "cpu") with `strategy`; the input is not changed.

    A model file with external data is converted with its data left on disk (never loaded for
    the conversion or its validation). The result holds the data inline when it is small enough
    (under 1 GiB) and `keep_external_data` is False; otherwise `result.model` keeps referring to
    the data beside the input and `result.external_data_dir` names that folder.
    """
    if strategy not in STRATEGIES:
        raise UserError(f"unknown strategy {strategy!r}; choose one of: {', '.join(STRATEGIES)}")
    target = _target_key(target)
    base_dir = Path(model).parent if isinstance(model, (str, os.PathLike)) else None
    original = load_model(model, load_external_data=False) if base_dir is not None else load_model(model)
    if base_dir is not None and not external_data_bytes(original):
        base_dir = None
    # large initializers are detached for the whole conversion (never copied, never fed to
    # shape inference or the checker) and put back at the end: modelio.detach_large_initializers
    proto, detached = detach_large_initializers(original)
    check_original(proto)
    signature = _signature(proto.graph)

    # 1. opset: bring 22–26 down to one the target serves (or refuse naming the node)
    opset_info = opset_rule.plan(proto, target, strategy)
    proto = opset_info.pop("model")

    # 2. shapes (the project's domain ops read as their ONNX twins for inference only)
    proto = _infer_shapes(proto)
    try:
        model_ir = ir.serde.deserialize_model(proto)
    except Exception as exc:  # noqa: BLE001 - onnx_ir's SerdeError wraps the reason; one line for the user
        raise UserError(f"the model cannot be read for conversion ({_serde_reason(exc)})") from None
    names = _all_names(model_ir)
    _function_input_types(proto, model_ir)
    _refuse_static_errors(model_ir)
    reports: list[NodeReport] = []
    main_opset = model_ir.opset_imports.get("", 0)
    # whole-graph fixes a target needs before its rules (report: `normalized`)
    normalized = (drop_allowzero(_graphs(model_ir, main_opset), names)
                  if target == "dml" and strategy != "native" else [])
    for graph, where, opset in _graphs(model_ir, main_opset):
        nodes = list(graph)
        positions = {n: i for i, n in enumerate(nodes)}
        for node in nodes:
            if (onnx_domain(node.domain), node.op_type) not in FAMILY_OPS:
                continue
            ctx = RewriteContext(opset=opset, target=target, names=names, check_indices=check_indices,
                                 options={"model_opsets": dict(model_ir.opset_imports),
                                          "max_io_width": _max_io_width(target)}, graph=graph,
                                 positions=positions)
            try:
                reports.append(_convert_node(graph, node, where, ctx, strategy))
            except UserError:
                raise
            except Exception as exc:  # noqa: BLE001 - a rule that cannot handle this node: one line, not a traceback
                label = f"{node.op_type} node {node.name!r}" if node.name else f"a {node.op_type} node"
                raise UserError(f"{label}: cannot convert it ({_serde_reason(exc)})") from None
    check_fallback_types(model_ir, target, _graphs(model_ir, main_opset))

    _fix_domain_import(model_ir)
    if (not any(r.action not in ("native", "cpu") or r.emitted for r in reports) and not opset_info.get("changed")
            and not normalized):
        out, _ = detach_large_initializers(original)  # nothing to do: the model as given (idempotency)
    else:
        try:
            out = ir.serde.serialize_model(model_ir)
        except Exception as exc:  # noqa: BLE001 - see above
            raise UserError(f"the converted model cannot be written ({_serde_reason(exc)})") from None
        _keep_value_info(out, _value_info_names(original))
        _restore_graph_io(out.graph, original.graph)
    fix_ir_version(out)
    if validate:
        _validate(out, signature)
    report = ConvertReport(target, strategy, reports, opset_info, normalized=normalized)
    if with_inspect:
        report.inspect = _inspect(out, target)
    del model_ir, proto
    out = attach_detached(out, detached)
    if base_dir is not None and not keep_external_data and external_data_bytes(out) < INLINE_LIMIT:
        onnx.external_data_helper.load_external_data_for_model(out, str(base_dir))
        base_dir = None
    if base_dir is not None and not external_data_bytes(out):
        base_dir = None
    return ConvertResult(out, report, base_dir)


def _serde_reason(exc: BaseException) -> str:
    """The innermost cause's first line (onnx_ir wraps the reason in SerdeErrors)."""
    while exc.__cause__ is not None or exc.__context__ is not None:
        exc = exc.__cause__ or exc.__context__
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


_AXIS_INPUT_OPS = {"CumSum", "CumProd"}
_ELEMENTS_OPS = {"ScatterElements", "Scatter"}
_INT_TYPES = (ir.DataType.INT32, ir.DataType.INT64)


def _refuse_static_errors(model: ir.Model) -> None:
    """Refuse, in one line naming the node, a family node whose error shows without running it.

    ONNX Runtime loads such models and fails only at run time (or the lowered graph would
    compute something else): a constant axis out of range or not one integer, a non-integer
    axis, a scatter axis attribute out of range, indices and updates of different static shapes.
    """
    for graph, where, _ in _graphs(model, 0):
        for node in graph:
            if (onnx_domain(node.domain), node.op_type) not in FAMILY_OPS:
                continue
            problem = _static_problem(node)
            if problem:
                label = f"{node.op_type} node {node.name!r}" if node.name else f"a {node.op_type} node"
                at = "" if where == "main" else f" (in {where})"
                raise UserError(f"{label}{at}: {problem}; the model is invalid, refused")


def _rank(v: ir.Value | None) -> int | None:
    return None if v is None or v.shape is None else len(v.shape)


def _dims(v: ir.Value | None) -> list | None:
    if v is None or v.shape is None:
        return None
    return [d if isinstance(d, int) else None for d in v.shape]


def _type_name(dt: ir.DataType) -> str:
    try:
        return f"tensor({onnx.helper.tensor_dtype_to_np_dtype(int(dt)).name.replace('float32', 'float').replace('float64', 'double')})"
    except Exception:  # pragma: no cover - types numpy does not know
        return f"tensor(type {int(dt)})"


def _static_problem(node: ir.Node) -> str | None:
    from .rules._base import const_array

    op = node.op_type
    if op in _AXIS_INPUT_OPS:
        x = node.inputs[0] if node.inputs else None
        axis = node.inputs[1] if len(node.inputs) > 1 else None
        if axis is None:
            return None
        if axis.dtype is not None and axis.dtype not in _INT_TYPES:
            return f"the axis must be an int32 or int64 tensor, got {_type_name(axis.dtype)}"
        value = const_array(axis)
        if value is None:
            return None
        if value.size != 1:
            return f"the axis must be a scalar (one element), got shape {list(value.shape)}"
        if value.dtype.kind not in "iu":
            return f"the axis must be an integer, got {value.dtype}"
        a, r = int(value.reshape(-1)[0]), _rank(x)
        if r is not None and not -r <= a < r:
            return f"axis {a} is out of range for rank {r} (valid: [{-r}, {r - 1}])"
        return None
    data, indices, updates = (list(node.inputs) + [None, None, None])[:3]
    if op in _ELEMENTS_OPS:
        a = node.attributes.get("axis")
        a = 0 if a is None else int(a.value)
        r = _rank(data)
        if r is not None and not -r <= a < r:
            return f"axis {a} is out of range for rank {r} (valid: [{-r}, {r - 1}])"
        di, du = _dims(indices), _dims(updates)
        if di is not None and du is not None and (
                len(di) != len(du) or any(i is not None and u is not None and i != u for i, u in zip(di, du))):
            return f"indices dimensions {_show(di)} and updates dimensions {_show(du)} differ (they must be equal)"
        if di is not None and r is not None and len(di) != r:
            return f"indices have rank {len(di)}, the data rank {r} (they must be equal)"
    elif op == "ScatterND":
        dd, di, du = _dims(data), _dims(indices), _dims(updates)
        if dd is None or di is None or du is None or not di or di[-1] is None:
            return None
        q = di[-1]
        if q > len(dd):
            return f"indices' last dimension {q} is larger than the data rank {len(dd)}"
        want = di[:-1] + dd[q:]
        if len(want) != len(du) or any(w is not None and u is not None and w != u for w, u in zip(want, du)):
            return (f"updates dimensions {_show(du)} differ from indices.shape[:-1] + data.shape[{q}:] = {_show(want)}")
    return None


def _show(dims: list) -> str:
    return "[" + ", ".join("?" if d is None else str(d) for d in dims) + "]"


def _max_io_width(target: str) -> int | None:
    """The target's cap on a node's inputs/outputs (targets/: WebGPU binds 8 storage buffers)."""
    from ..targets import get_target

    return get_target(target).max_io_width


def _target_key(target: str) -> str:
    t = str(target).lower()
    aliases = {"dmlexecutionprovider": "dml", "cudaexecutionprovider": "cuda", "cpuexecutionprovider": "cpu",
               "webgpuexecutionprovider": "webgpu"}
    t = aliases.get(t, t)
    if t not in TARGETS:
        raise UserError(f"unknown target {target!r}; choose one of: {', '.join(TARGETS)}")
    return t


# --------------------------------------------------------------------------------------
# per-node decision
# --------------------------------------------------------------------------------------
def _convert_node(graph, node: ir.Node, where: str, ctx: RewriteContext, strategy: str) -> NodeReport:
    rep = NodeReport(node.name or "", node.op_type, node.domain, where, "native", "")
    native, native_why = _native(node, ctx)
    rules = [r for r in RULES if r.match(node) and r.applies_to(ctx.target)]
    if strategy == "native":
        rep.reason = "strategy native: " + native_why
        return rep
    if strategy == "fallback":
        if node.domain == DOMAIN:
            rep.action, rep.reason = "fallback", "already a fallback op"
            return rep
        return _apply_fallback(graph, node, ctx, rep, "strategy fallback")
    costly = _native_costlier(node, ctx) if strategy == "auto" and native else None
    if strategy == "auto" and native and costly is None:
        rep.reason = native_why
        return rep
    if costly:
        native_why = f"{native_why}, but {costly}"
    refusals = []
    for rule in rules:
        why = rule.check(node, ctx)
        if why is not None:
            refusals.append(f"{rule.name}: {why}")
            rep.refusals.append({"rule": rule.name, **why.to_dict()})
            continue
        ctx.anchor = node
        rw = rule.rewrite(node, ctx)
        _replace(graph, node, rw)
        rep.action = rule.action
        rep.reason = (f"{native_why}; " if not native or costly else "strategy lower; ") + rule.describe()
        rep.emitted = [n.name for n in rw.nodes]
        rep.note = rw.note
        return rep
    refused = "; ".join(refusals) if refusals else "no rule rewrites this node"
    if native:
        rep.reason = f"{native_why} (not lowered: {refused})"
        return rep
    if ctx.target == "webgpu" and node.domain != DOMAIN and _decision(node, ctx).provider == "CPUExecutionProvider":
        # The CPU EP's own kernel beats the Python fallback (both on the CPU); what the WebGPU EP
        # leaves to the CPU (int64 / float64 data) takes its neighbours of that type along.
        rep.reason = f"{native_why}; not lowered: {refused}; stays on the CPU EP's native kernel"
        return rep
    if node.domain == DOMAIN:
        rep.action, rep.reason = "fallback", f"{native_why}; not lowered: {refused}; stays on the Python fallback"
        return rep
    # ONNX Runtime's own C++ kernel on the CPU beats the Python fallback, and leaving the node
    # untouched keeps the model loadable in plain onnxruntime: the fallback is for nodes no
    # execution provider of the session can run (e.g. float16 scatter add/mul on the CPU EP).
    on_cpu, cpu_why = _native(node, dataclasses.replace(ctx, target="cpu"))
    if on_cpu:
        rep.action = "cpu"
        rep.reason = (f"{native_why}; not lowered: {refused}; left to ONNX Runtime's CPU kernel "
                      f"({cpu_why.removeprefix('the cpu EP has a kernel').strip(' ()') or 'it has one'}); "
                      "the model still loads in plain onnxruntime")
        return rep
    return _apply_fallback(graph, node, ctx, rep, f"{native_why}; not lowered: {refused}")


def _native_costlier(node: ir.Node, ctx: RewriteContext) -> str | None:
    """Why the target's native kernel is the costlier choice (targets' cost_facts), or None.

    WebGPU CumSum (onnxruntime/core/providers/webgpu/math/cumsum.cc) loops over the whole
    prefix for every output element: above `cumsum_native_max_axis` the blocked scan wins.
    """
    from ..targets import get_target

    limit = get_target(ctx.target).cost_facts.get("cumsum_native_max_axis")
    if limit is None or node.op_type != "CumSum" or len(node.inputs) < 2:
        return None
    shape, axis = static_shape(node.inputs[0]), const_array(node.inputs[1])
    if shape is None or axis is None or not -len(shape) <= int(axis.reshape(-1)[0]) < len(shape):
        return None
    n = shape[int(axis.reshape(-1)[0]) % len(shape)]
    if n is None or n <= limit:
        return None
    return (f"its kernel reads the whole prefix for every element (O(n²) along an axis of {n} > {limit}; "
            "measured: docs/performance.md)")


def _apply_fallback(graph, node, ctx, rep: NodeReport, why: str) -> NodeReport:
    rw = route_to_fallback(node, ctx)
    if rw is None:
        rep.action, rep.reason = "refused", f"{why}; the fallback has no {node.op_type}"
        rep.code = "no-fallback-kernel"
        return rep
    _replace(graph, node, rw)
    rep.action, rep.reason, rep.emitted, rep.note = "fallback", why, [n.name for n in rw.nodes], rw.note
    return rep


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
    # drop initializers / Constant nodes only the old node read (the axis, mostly)
    for v in inputs:
        if v.uses() or v.is_graph_output() or v.is_graph_input():
            continue
        inits = getattr(graph, "initializers", None)
        if inits is not None and v.name in inits and v.is_initializer():
            del inits[v.name]
        elif v.producer() is not None and v.producer().op_type == "Constant" and not v.producer().outputs[0].uses():
            graph.remove(v.producer(), safe=True)
    for n in [n for n in rw.nodes if n.op_type == "Constant" and not n.outputs[0].uses()]:
        graph.remove(n, safe=True)


def _decision(node: ir.Node, ctx: RewriteContext):
    """The capability model's Decision for `node` on the target (targets/target.py)."""
    from ..targets import get_target

    proto = ir.serde.serialize_node(node)
    types = {}
    for v in list(node.inputs) + list(node.outputs):
        if v is not None and v.name and v.type is not None and v.dtype is not None:
            types[v.name] = int(v.dtype)
    return get_target(ctx.target).explain(proto, ctx.options.get("model_opsets", {"": ctx.opset}), types)


def _native(node: ir.Node, ctx: RewriteContext) -> tuple[bool, str]:
    """Does the target EP itself run this node (the capability model in targets/)?"""
    if node.domain == DOMAIN:
        return False, f"{DOMAIN}::{node.op_type} is a Python fallback op (CPU)"
    try:
        from ..targets import get_target

        t = get_target(ctx.target)
        d = _decision(node, ctx)
        provider = getattr(d, "provider", None)
        reason = getattr(d, "reason", "") or ""
        on_target = getattr(d, "on_target", provider == t.provider)
        short = {"DmlExecutionProvider": "DML", "CUDAExecutionProvider": "CUDA", "CPUExecutionProvider": "CPU",
                 "WebGpuExecutionProvider": "WebGPU"}
        if on_target:
            mismatch = _dml_scatter_shape_mismatch(node) if ctx.target == "dml" else None
            if mismatch:
                return False, mismatch
            if getattr(d, "fails_at_run", None):
                return False, f"the {ctx.target} EP claims it but {d.fails_at_run}"
            return True, f"the {ctx.target} EP has a kernel ({reason})" if reason else f"the {ctx.target} EP has a kernel"
        where = short.get(provider, "no EP") if provider else "no EP"
        return False, f"not on {ctx.target}: runs on {where}" + (f" ({reason})" if reason else "")
    except UserError:
        raise
    except Exception as exc:  # pragma: no cover - capability model missing or failing
        return False, f"capability model unavailable ({type(exc).__name__}: {exc})"


def _dml_scatter_shape_mismatch(node: ir.Node) -> str | None:
    """DirectML's scatter wants indices sized like data on every axis but `axis`.

    DML_SCATTER_OPERATOR_DESC (shared/seeds, DirectML docs): "IndicesTensor ... Sizes must
    match InputTensor.Sizes in every dimension except Axis". ONNX allows smaller indices; the
    DML EP claims the node anyway and session creation fails (E_INVALIDARG, measured on the
    lane). Known static dims that differ make the node not native; unknown ones cannot be told.
    """
    if node.op_type not in ("ScatterElements", "Scatter") or len(node.inputs) < 2:
        return None
    data, indices = _dims(node.inputs[0]), _dims(node.inputs[1])
    if data is None or indices is None or len(data) != len(indices):
        return None
    axis = node.attributes.get_int("axis", 0) % len(data) if data else 0
    for d, (a, b) in enumerate(zip(data, indices)):
        if d != axis and isinstance(a, int) and isinstance(b, int) and a != b:
            return (f"the DML EP claims it but DirectML needs indices sized like data except on the axis "
                    f"(dim {d}: indices {b}, data {a}); session creation would fail")
    return None


# --------------------------------------------------------------------------------------
# graphs, names, shapes
# --------------------------------------------------------------------------------------
def _graphs(model: ir.Model, main_opset: int) -> Iterator[tuple[Any, str, int]]:
    def walk(graph, where):
        yield graph, where, main_opset
        for node in list(graph):
            for attr in node.attributes.values():
                if attr.type == ir.AttributeType.GRAPH:
                    yield from walk(attr.value, f"{where}/{node.name or node.op_type}.{attr.name}")
                elif attr.type == ir.AttributeType.GRAPHS:
                    for i, g in enumerate(attr.value):
                        yield from walk(g, f"{where}/{node.name or node.op_type}.{attr.name}[{i}]")

    yield from walk(model.graph, "main")
    for func in model.functions.values():
        # ORT inlines functions under the model's opset (DESIGN.md), so emit for that opset
        fopset = main_opset or func.opset_imports.get("", 0)
        yield func, f"function {func.domain}::{func.name}", fopset


def _function_input_types(proto: onnx.ModelProto, model: ir.Model) -> None:
    """Function bodies are not shape-inferred; their value_info (IR >= 10) may type the inputs."""
    for fp in proto.functions:
        func = model.functions.get((fp.domain, fp.name, getattr(fp, "overload", "")))
        if func is None:
            continue
        infos = {vi.name: vi for vi in fp.value_info}
        for v in func.inputs:
            vi = infos.get(v.name)
            if vi is None or v.shape is not None or not vi.type.HasField("tensor_type"):
                continue
            tt = vi.type.tensor_type
            v.dtype = ir.DataType(tt.elem_type)
            if tt.HasField("shape"):
                v.shape = ir.Shape([d.dim_value if d.HasField("dim_value") else (d.dim_param or None) for d in tt.shape.dim])


def _all_names(model: ir.Model) -> set[str]:
    names: set[str] = set()
    for graph, _, _ in _graphs(model, 0):
        for v in getattr(graph, "inputs", []):
            if v.name:
                names.add(v.name)
        for v in getattr(graph, "initializers", {}) or {}:
            names.add(v)
        for node in graph:
            if node.name:
                names.add(node.name)
            for v in node.outputs:
                if v.name:
                    names.add(v.name)
    return names


_INFER_TWIN = {"CumProd": "CumSum", "CumSum": "CumSum", "ScatterElements": "ScatterElements"}


def _infer_shapes(proto: onnx.ModelProto) -> onnx.ModelProto:
    """Shape inference that sees through the project's domain ops (read as their ONNX twins)."""
    twin = onnx.ModelProto()
    twin.CopyFrom(proto)

    def swap(graph):
        for n in graph.node:
            if n.domain == DOMAIN and n.op_type in _INFER_TWIN:
                n.domain, n.op_type = "", _INFER_TWIN[n.op_type]
            for a in n.attribute:
                if a.type == onnx.AttributeProto.GRAPH:
                    swap(a.g)
                for g in a.graphs:
                    swap(g)

    swap(twin.graph)
    # External and detached initializers are seen as graph inputs of the same type
    # (modelio.without_external_data): inference needs their shapes, not their bytes. Data
    # propagation (which gives static shapes through Shape/Concat/Reshape chains) costs about
    # 200 bytes per element of every long 1-D value it meets (4.6 GB for a 64M-element Add,
    # measured with onnx 1.23), so it runs only when no 1-D value is longer than DATA_PROP_LIMIT.
    light = without_external_data(twin)
    try:
        inferred = onnx.shape_inference.infer_shapes(light)
    except Exception:
        return proto
    if not _has_long_vector(inferred):
        with contextlib.suppress(Exception):  # if it fails, the plain inference stands
            inferred = onnx.shape_inference.infer_shapes(light, data_prop=True)
    for mine, theirs in zip(graphs(proto.graph), graphs(inferred.graph)):
        del mine.value_info[:]
        mine.value_info.extend(theirs.value_info)
    return proto


#: longest 1-D value (elements) shape inference still runs data propagation over
DATA_PROP_LIMIT = 1 << 16


def _has_long_vector(model: onnx.ModelProto) -> bool:
    for g in graphs(model.graph):
        for vi in list(g.input) + list(g.output) + list(g.value_info):
            dims = vi.type.tensor_type.shape.dim if vi.type.HasField("tensor_type") else []
            if len(dims) == 1 and dims[0].dim_value > DATA_PROP_LIMIT:
                return True
        if any(len(t.dims) == 1 and t.dims[0] > DATA_PROP_LIMIT for t in g.initializer):
            return True
    return False


def _fix_domain_import(model: ir.Model) -> None:
    used = any(n.domain == DOMAIN for g, _, _ in _graphs(model, 0) for n in g)
    if used:
        model.opset_imports.setdefault(DOMAIN, DOMAIN_VERSION)
    else:
        model.opset_imports.pop(DOMAIN, None)
    for func in model.functions.values():
        if any(n.domain == DOMAIN for n in func):
            func.opset_imports.setdefault(DOMAIN, DOMAIN_VERSION)


def _value_info_names(model: onnx.ModelProto) -> set[str]:
    return {vi.name for g in graphs(model.graph) for vi in g.value_info}


def _keep_value_info(model: onnx.ModelProto, keep: set[str]) -> None:
    """Drop the value_info our shape inference added: the output carries what the input did."""
    for g in graphs(model.graph):
        kept = [vi for vi in g.value_info if vi.name in keep]
        del g.value_info[:]
        g.value_info.extend(kept)


def _restore_graph_io(graph: onnx.GraphProto, original: onnx.GraphProto) -> None:
    """The graph's inputs and outputs exactly as the user wrote them (shape inference may have
    given an output dims of its own, e.g. `unk__0`, or concrete ones, which the IR keeps)."""
    for mine, theirs in ((graph.input, original.input), (graph.output, original.output)):
        if [v.name for v in mine] == [v.name for v in theirs]:
            del mine[:]
            mine.extend(theirs)


def _signature(graph: onnx.GraphProto) -> list:
    def sig(vs):
        return [(v.name, v.type.SerializeToString()) for v in vs]

    return [sig(graph.input), sig(graph.output)]


def _validate(model: onnx.ModelProto, signature: list) -> None:
    if _signature(model.graph) != signature:
        raise AssertionError("internal error: conversion changed the graph inputs or outputs")
    try:
        onnx.checker.check_model(without_external_data(model), full_check=True)
    except (onnx.checker.ValidationError, onnx.shape_inference.InferenceError) as exc:
        first = str(exc).strip().splitlines()[0]
        raise UserError(f"the converted model does not pass onnx.checker ({first})") from None


def _inspect(model: onnx.ModelProto, target: str):
    try:
        from ..inspection import inspect
    except ImportError:
        return None
    try:
        return inspect(model, target)
    except Exception as exc:  # never let the report's extra lose the conversion
        return {"error": f"{type(exc).__name__}: {exc}"}
