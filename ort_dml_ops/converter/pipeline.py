"""`convert`: rewrite a model so its CumSum, CumProd and scatter nodes run on the target EP.

Data flows one way: load → bring the opset to one the target serves (rules/opset.py) →
infer shapes → for every node of the three families in every graph (main graph, If/Loop/Scan
bodies, model-local functions) decide native / lowered / cast / fallback (targets/ says what
the EP runs natively) and apply the rule (these steps are onnx-ir passes, passes/) → validate (checker full_check, shape inference,
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

import onnx
import onnx_ir as ir
import onnx_ir.passes

from .._domain import DOMAIN
from ..errors import UserError
from ..modelio import (
    attach_detached,
    detach_large_initializers,
    external_data_bytes,
    fix_ir_version,
    graphs,
    load_model,
    without_external_data,
)
from ..runnable import check_original
from ._common import all_names, gc_paused, serde_reason
from .passes import ConvertState, convert_passes
from .report import ConvertReport, NodeReport
from .rules import opset as opset_rule
from .rules.fold_if import FoldResult, fold_static_ifs

__all__ = [
    "INLINE_LIMIT",
    "STRATEGIES",
    "TARGETS",
    "ConvertReport",
    "ConvertResult",
    "NodeReport",
    "convert",
]

STRATEGIES = ("native", "lower", "fallback", "auto")
#: external data up to this size is loaded into a converted model (the API's result is then
#: self-contained); above it, the result keeps referring to the data beside the input
INLINE_LIMIT = 1 << 30
TARGETS = ("dml", "cuda", "webgpu", "cpu")


@dataclasses.dataclass
class ConvertResult:
    model: onnx.ModelProto
    report: ConvertReport
    #: where `model`'s external tensors live (their locations are relative to it) when the
    #: output keeps its data external; None when the model is self-contained. Pass it to
    #: `modelio.save_model_atomic(..., external_data_dir=...)` to write the data beside the output.
    external_data_dir: Path | None = None


# --------------------------------------------------------------------------------------
@gc_paused()  # _common.gc_paused: a third of a 10k-node convert was the cyclic collector
def convert(
    model: onnx.ModelProto | str | os.PathLike | bytes,
    target: str = "dml",
    *,
    strategy: str = "auto",
    check_indices: bool = True,
    validate: bool = True,
    with_inspect: bool = True,
    keep_external_data: bool = False,
) -> ConvertResult:
    """Rewrite `model` for `target` ("dml", "cuda", "webgpu", "cpu") with `strategy`; the input is not changed.

    A model file with external data is converted with its data left on disk (never loaded for
    the conversion or its validation). The result holds the data inline when it is small enough
    (under 1 GiB) and `keep_external_data` is False; otherwise `result.model` keeps referring to
    the data beside the input and `result.external_data_dir` names that folder.
    """
    if strategy not in STRATEGIES:
        raise UserError(
            f"unknown strategy {strategy!r}; choose one of: {', '.join(STRATEGIES)}"
        )
    target = _target_key(target)
    base_dir = Path(model).parent if isinstance(model, (str, os.PathLike)) else None
    original = (
        load_model(model, load_external_data=False)
        if base_dir is not None
        else load_model(model)
    )
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
    # 2b. If nodes the declared shapes decide: the taken branch inlined (rules/fold_if.py)
    folds = (
        fold_static_ifs(proto, _infer_shapes) if strategy != "native" else FoldResult()
    )
    signature = folds.signature(signature)
    try:
        model_ir = ir.serde.deserialize_model(proto)
    except Exception as exc:  # noqa: BLE001 - onnx_ir's SerdeError wraps the reason; one line for the user
        raise UserError(
            f"the model cannot be read for conversion ({serde_reason(exc)})"
        ) from None
    _function_input_types(proto, model_ir)
    # 3. the passes on the one onnx-ir model: refuse static errors, normalize, place and
    # rewrite, check what the fallback receives, fix the domain import (passes/)
    state = ConvertState(target, strategy, check_indices, names=all_names(model_ir))
    try:
        convert_passes(state)(model_ir)
    except onnx_ir.passes.PassError as exc:
        raise _pass_cause(exc) from None
    reports, normalized = state.reports, folds.notes + state.normalized
    if (
        not any(r.action not in ("native", "cpu") or r.emitted for r in reports)
        and not opset_info.get("changed")
        and not normalized
    ):
        out, _ = detach_large_initializers(
            original
        )  # nothing to do: the model as given (idempotency)
    else:
        try:
            out = ir.serde.serialize_model(model_ir)
        except Exception as exc:  # noqa: BLE001 - see above
            raise UserError(
                f"the converted model cannot be written ({serde_reason(exc)})"
            ) from None
        _keep_value_info(out, _value_info_names(original))
        _restore_graph_io(out.graph, original.graph)
        folds.restore_outputs(out.graph)
    fix_ir_version(out)
    if validate:
        _validate(out, signature)
    report = ConvertReport(target, strategy, reports, opset_info, normalized=normalized)
    if with_inspect:
        report.inspect = _inspect(out, target)
    del model_ir, proto
    out = attach_detached(out, detached)
    if (
        base_dir is not None
        and not keep_external_data
        and external_data_bytes(out) < INLINE_LIMIT
    ):
        onnx.external_data_helper.load_external_data_for_model(out, str(base_dir))
        base_dir = None
    if base_dir is not None and not external_data_bytes(out):
        base_dir = None
    return ConvertResult(out, report, base_dir)


def _target_key(target: str) -> str:
    t = str(target).lower()
    aliases = {
        "dmlexecutionprovider": "dml",
        "cudaexecutionprovider": "cuda",
        "cpuexecutionprovider": "cpu",
        "webgpuexecutionprovider": "webgpu",
    }
    t = aliases.get(t, t)
    if t not in TARGETS:
        raise UserError(
            f"unknown target {target!r}; choose one of: {', '.join(TARGETS)}"
        )
    return t


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
                v.shape = ir.Shape(
                    [
                        d.dim_value
                        if d.HasField("dim_value")
                        else (d.dim_param or None)
                        for d in tt.shape.dim
                    ]
                )


_INFER_TWIN = {
    "CumProd": "CumSum",
    "CumSum": "CumSum",
    "ScatterElements": "ScatterElements",
}


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
    except Exception:  # noqa: BLE001 - inference that fails leaves the shapes as given
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
            dims = (
                vi.type.tensor_type.shape.dim if vi.type.HasField("tensor_type") else []
            )
            if len(dims) == 1 and dims[0].dim_value > DATA_PROP_LIMIT:
                return True
        if any(len(t.dims) == 1 and t.dims[0] > DATA_PROP_LIMIT for t in g.initializer):
            return True
    return False


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
    for mine, theirs in (
        (graph.input, original.input),
        (graph.output, original.output),
    ):
        if [v.name for v in mine] == [v.name for v in theirs]:
            del mine[:]
            mine.extend(theirs)


def _signature(graph: onnx.GraphProto) -> list:
    def sig(vs):
        return [(v.name, v.type.SerializeToString()) for v in vs]

    return [sig(graph.input), sig(graph.output)]


def _pass_cause(exc: BaseException) -> BaseException:
    """The error a pass raised (UserError: one line for the user), without the PassManager's
    PassError wrappers around it."""
    while isinstance(exc, onnx_ir.passes.PassError) and exc.__cause__ is not None:
        exc = exc.__cause__
    return exc


def _validate(model: onnx.ModelProto, signature: list) -> None:
    if _signature(model.graph) != signature:
        raise AssertionError(
            "internal error: conversion changed the graph inputs or outputs"
        )
    try:
        onnx.checker.check_model(without_external_data(model), full_check=True)
    except (onnx.checker.ValidationError, onnx.shape_inference.InferenceError) as exc:
        first = str(exc).strip().splitlines()[0]
        raise UserError(
            f"the converted model does not pass onnx.checker ({first})"
        ) from None


def _inspect(model: onnx.ModelProto, target: str):
    try:
        from ..inspection import inspect
    except ImportError:
        return None
    try:
        return inspect(model, target)
    except Exception as exc:  # noqa: BLE001 - never let the report's extra lose the conversion
        return {"error": f"{type(exc).__name__}: {exc}"}
