"""`convert`: rewrite a model so its CumSum, CumProd and scatter nodes run on the target EP.

One graph from load to save: the model is loaded (large initializers detached: never read,
never copied), deserialized once into an onnx-ir model, and every step is an
`onnx_ir.passes` pass on that one model (passes/, in order): bring the opset to one the
target serves (rules/opset.py) → infer shapes → fold the If nodes the declared shapes decide
(rules/fold_if.py) → refuse static errors → normalize → for every node of the three families
in every graph (main graph, If/Loop/Scan bodies, model-local functions) decide native /
lowered / cast / fallback (targets/ says what the EP runs natively) and apply the rule →
check what the fallback receives → fix the domain import → restore the declarations (graph
I/O as written, value_info as the input carried). Then it is serialized once, validated
(checker full_check on the serialized model, graph I/O unchanged) and reported, with the
`inspect` report of the converted model embedded. `in_place.convert_model` runs the same
passes on a caller's onnx-ir model.

Strategies: `native` leaves the nodes to the EP; `lower` rewrites every node a rule can
rewrite (leaving it native, else routing it to the fallback, when no rule can); `fallback`
routes the nodes to the project's Python custom ops; `auto` keeps a node native where the
target EP has a kernel for it, else lowers it, else routes it to the fallback.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import onnx
import onnx_ir as ir
import onnx_ir.passes

from .. import collector
from ..checking import check_model, sort_nodes
from ..errors import UserError
from ..large_tensors import attach_detached, detach_large_initializers
from ..modelio import (
    external_data_bytes,
    fix_ir_version,
    graphs,
    load_model,
    without_external_data,
)
from ..runnable import check_original
from ._common import serde_reason
from .dim_names import has_named_dim
from .passes import ConvertState, Declared, convert_passes
from .report import ConvertReport, NodeReport
from .size_hints import known_sizes

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
@collector.paused()  # a third of a 10k-node convert was the cyclic collector
def convert(
    model: onnx.ModelProto | str | os.PathLike | bytes,
    target: str = "dml",
    *,
    strategy: str = "auto",
    check_indices: bool = True,
    validate: bool = True,
    with_inspect: bool = True,
    keep_external_data: bool = False,
    input_shapes: dict[str, tuple[int, ...]] | None = None,
    node_strategies: dict[str, str] | None = None,
) -> ConvertResult:
    """Rewrite `model` for `target` ("dml", "cuda", "webgpu", "cpu") with `strategy`; the input is not changed.

    `input_shapes`: input name → dims the graph leaves symbolic, for `auto`'s estimate of what
    each option costs at those sizes (converter/size_hints.py); the model keeps its declarations.

    `node_strategies`: a node's own strategy, by the name of its first output, over `strategy`:
    one of STRATEGIES, or "rule:NAME" for that lowering rule alone (`tune` writes the option it
    measured fastest so); names no node has are an error.

    A model file with external data is converted with its data left on disk (never loaded for
    the conversion or its validation). The result holds the data inline when it is small enough
    (under 1 GiB) and `keep_external_data` is False; otherwise `result.model` keeps referring to
    the data beside the input and `result.external_data_dir` names that folder.
    """
    strategy, target = check_request(strategy, target)
    base_dir = Path(model).parent if isinstance(model, (str, os.PathLike)) else None
    original = (
        load_model(model, load_external_data=False)
        if base_dir is not None
        else load_model(model)
    )
    if base_dir is not None and not external_data_bytes(original):
        base_dir = None
    # large initializers are detached for the whole conversion (never copied, never fed to
    # shape inference or the checker) and put back at the end: large_tensors.detach_large_initializers
    proto, detached = detach_large_initializers(original)
    proto, resorted = _sorted(proto)
    check_original(proto)
    signature = signature_of(proto.graph)
    try:
        model_ir = ir.serde.deserialize_model(proto)
    except Exception as exc:  # noqa: BLE001 - onnx_ir's SerdeError wraps the reason; one line for the user
        raise UserError(
            f"the model cannot be read for conversion ({serde_reason(exc)})"
        ) from None
    _function_input_types(proto, model_ir)
    value_info = value_info_names(original)
    hints, bounds = known_sizes(proto, dict(input_shapes or {}))
    per_node = _check_node_strategies(proto, dict(node_strategies or {}))
    state = run_passes(
        model_ir,
        target,
        strategy,
        check_indices,
        value_info,
        proto,
        hints,
        per_node,
        bounds,
    )
    if resorted:
        state.normalized.insert(0, SORTED_NOTE)
    del proto
    report = make_report(state)
    if not report.changed:  # nothing to do: the model as given (idempotency)
        out, _ = detach_large_initializers(original)
    else:
        try:
            out = ir.serde.serialize_model(model_ir)
        except Exception as exc:  # noqa: BLE001 - see above
            raise UserError(
                f"the converted model cannot be written ({serde_reason(exc)})"
            ) from None
        # onnx-ir writes value_info for every initializer; the input's is what is kept, and
        # the new values' named dims (passes/dim_names.py)
        _keep_value_info(out, value_info)
        _restore_graph_io(out.graph, original.graph, state.folds.outputs)
    del model_ir
    fix_ir_version(out)
    if validate:
        validate_converted(out, state.folds.signature(signature))
    if with_inspect:
        report.inspect = inspect_report(out, target)
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


SORTED_NOTE = (
    "nodes sorted into topological order (ONNX Runtime sorts a graph when it loads it; "
    "onnx's checker, and so a model written unsorted, would be refused)"
)


def _sorted(proto: onnx.ModelProto) -> tuple[onnx.ModelProto, bool]:
    """The model with its nodes in topological order (checking.sort_nodes), or a UserError for
    a cycle; a graph onnx-ir cannot read is left as it is for check_original to name."""
    try:
        return sort_nodes(proto)
    except ValueError as exc:
        if "cycle" in str(exc).lower():
            raise UserError(
                "the graph has a cycle, so no order runs it (ONNX Runtime refuses it too); refused"
            ) from None
        return proto, False
    except Exception:  # noqa: BLE001 - onnx-ir's SerdeError: check_original names the problem
        return proto, False


def check_request(strategy: str, target: str) -> tuple[str, str]:
    """The strategy as given and the target's key, or a UserError naming the choices."""
    if strategy not in STRATEGIES:
        raise UserError(
            f"unknown strategy {strategy!r}; choose one of: {', '.join(STRATEGIES)}"
        )
    return strategy, _target_key(target)


def run_passes(
    model: ir.Model,
    target: str,
    strategy: str,
    check_indices: bool,
    value_info: set[str],
    light: onnx.ModelProto | None = None,
    hints: dict[str, tuple[int, ...]] | None = None,
    node_strategies: dict[str, str] | None = None,
    bounds: dict[str, tuple[int, ...]] | None = None,
) -> ConvertState:
    """Convert `model` in place (passes/); `value_info`: the names the input declared;
    `light`: `model` serialized without its weights when the caller has it (ConvertState.light;
    it may be changed)."""
    state = ConvertState(
        target,
        strategy,
        check_indices,
        declared=Declared.of(model, value_info),
        light=light,
        size_hints=hints or {},
        size_bounds=bounds or {},
        node_strategies=node_strategies or {},
    )
    try:
        convert_passes(state)(model)
    except onnx_ir.passes.PassError as exc:
        raise _pass_cause(exc) from None
    return state


def _check_node_strategies(
    proto: onnx.ModelProto, wanted: dict[str, str]
) -> dict[str, str]:
    """`wanted` as given, or a UserError naming the first entry that names no node output or
    no strategy."""
    outputs = {o for g in graphs(proto.graph) for n in g.node for o in n.output[:1]}
    for name, how in wanted.items():
        if name not in outputs:
            raise UserError(
                f"node_strategies: no node's first output is named {name!r}"
            )
        if how not in STRATEGIES and not how.startswith("rule:"):
            raise UserError(
                f"node_strategies[{name!r}]: unknown strategy {how!r}; choose one of: "
                f"{', '.join(STRATEGIES)}, or rule:NAME"
            )
    return wanted


def make_report(state: ConvertState) -> ConvertReport:
    return ConvertReport(
        state.target,
        state.strategy,
        state.reports,
        state.opset,
        normalized=state.folds.notes + state.normalized,
    )


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


def value_info_names(model: onnx.ModelProto) -> set[str]:
    return {vi.name for g in graphs(model.graph) for vi in g.value_info}


def _keep_value_info(model: onnx.ModelProto, keep: set[str]) -> None:
    """Keep only the value_info the input carried (`keep`) and the declarations of the new
    values NameRunTimeDimsPass named dims in (onnx-ir writes one for each initializer;
    RestoreDeclarationsPass already forgot the node outputs' inferred ones)."""
    for g in graphs(model.graph):
        kept = [vi for vi in g.value_info if vi.name in keep or has_named_dim(vi)]
        del g.value_info[:]
        g.value_info.extend(kept)


def _restore_graph_io(
    graph: onnx.GraphProto, original: onnx.GraphProto, repaired: dict
) -> None:
    """The graph's inputs and outputs byte for byte as the user wrote them (RestoreDeclarationsPass
    restored them on the onnx-ir model; protobuf field presence, e.g. an empty doc_string
    written out, does not survive onnx-ir); a repaired output (rules/fold_if.py) takes its new type."""
    for mine, theirs in (
        (graph.input, original.input),
        (graph.output, original.output),
    ):
        if [v.name for v in mine] == [v.name for v in theirs]:
            del mine[:]
            mine.extend(theirs)
    # a repaired declaration: the computed shape, all else as given
    for vi in graph.output:
        if vi.name in repaired:
            vi.type.CopyFrom(repaired[vi.name].type)


def signature_of(graph: onnx.GraphProto) -> list:
    def sig(vs):
        return [(v.name, v.type.SerializeToString()) for v in vs]

    return [sig(graph.input), sig(graph.output)]


def _pass_cause(exc: BaseException) -> BaseException:
    """The error a pass raised (UserError: one line for the user), without the PassManager's
    PassError wrappers around it."""
    while isinstance(exc, onnx_ir.passes.PassError) and exc.__cause__ is not None:
        exc = exc.__cause__
    return exc


def validate_converted(model: onnx.ModelProto, signature: list) -> None:
    if signature_of(model.graph) != signature:
        raise AssertionError(
            "internal error: conversion changed the graph inputs or outputs"
        )
    try:
        check_model(without_external_data(model), full_check=True)
    except (onnx.checker.ValidationError, onnx.shape_inference.InferenceError) as exc:
        first = str(exc).strip().splitlines()[0]
        raise UserError(
            f"the converted model does not pass onnx.checker ({first})"
        ) from None


def inspect_report(model: onnx.ModelProto, target: str):
    try:
        from ..inspection import inspect
    except ImportError:
        return None
    try:
        return inspect(model, target)
    except Exception as exc:  # noqa: BLE001 - never let the report's extra lose the conversion
        return {"error": f"{type(exc).__name__}: {exc}"}
