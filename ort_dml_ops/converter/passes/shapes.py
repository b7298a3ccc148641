"""Shape inference on the one onnx-ir model, with the project's domain ops read as their ONNX
twins.

onnx's inference runs on a serialized copy without the weights (`light.serialize_light`, as
onnx-ir's `ShapeInferencePass` does); its value_info is written back onto the model's values
by name, graph by graph (main graph and If/Loop/Scan bodies; function bodies are not
inferred). Graph outputs keep their declarations. In the copy, `DOMAIN::CumProd` reads as
`CumSum` and `DOMAIN::CumSum` / `DOMAIN::ScatterElements` as the ONNX ops (same shapes), so
values after a fallback op get shapes too.

Data propagation (static shapes through Shape/Concat/Reshape chains) costs about 200 bytes
per element of every long 1-D value it meets (4.6 GB for a 64M-element Add, measured with
onnx 1.23), so it runs only when no 1-D value is longer than `DATA_PROP_LIMIT`. Inference
that fails leaves the shapes as they are.

Where onnx's inference stops before a family node (it knows no ``com.microsoft`` contrib op,
so everything after an ORT-optimized graph's SkipLayerNormalization or FusedMatMul is
unknown), ONNX Runtime's symbolic shape inference (``onnxruntime/tools/symbolic_shape_infer.py``,
which models the contrib ops) fills in what is still unknown: ranks and numeric dimensions;
its symbolic dimensions are left unknown, and it runs without ``auto_merge`` (which would
assume two differing symbolic dimensions equal), so what is taken follows from the ops alone.
Its steps are driven here rather than through ``SymbolicShapeInference.infer_shapes``, which,
when inference is incomplete, writes ``sym_shape_infer_temp.onnx`` (and its data) into the
working directory and raises, dropping what it did infer.
"""

from __future__ import annotations

import contextlib
import logging

import onnx
import onnx_ir as ir
import onnx_ir.passes

from ..._domain import DOMAIN
from ...modelio import graphs, without_external_data
from ..light import serialize_light, subgraph_pairs
from .state import ConvertState

#: longest 1-D value (elements) shape inference still runs data propagation over
DATA_PROP_LIMIT = 1 << 16

_INFER_TWIN = {
    "CumProd": "CumSum",
    "CumSum": "CumSum",
    "ScatterElements": "ScatterElements",
}


class InferShapesPass(onnx_ir.passes.InPlacePass):
    """Types and shapes of the intermediate values (value_info), inferred once."""

    def __init__(self, state: ConvertState):
        super().__init__()
        self.state = state

    def call(self, model: ir.Model) -> onnx_ir.passes.PassResult:
        light, self.state.light = self.state.light, None
        return onnx_ir.passes.PassResult(model, modified=infer_shapes(model, light))


def infer_shapes(model: ir.Model, light: onnx.ModelProto | None = None) -> bool:
    """Infer in place (see the module docstring); True when inference ran.

    `light`: `model` as it is, serialized without its weights, when the caller has it (it is
    changed here); otherwise the model is serialized (light.serialize_light)."""
    light = readable_copy(model, light)
    try:
        inferred = onnx.shape_inference.infer_shapes(light)
    except Exception:  # noqa: BLE001 - inference that fails leaves the shapes as given
        return False
    if not _has_long_vector(inferred):
        with contextlib.suppress(Exception):  # if it fails, the plain inference stands
            inferred = onnx.shape_inference.infer_shapes(light, data_prop=True)
    for graph, graph_proto in subgraph_pairs(model.graph, inferred.graph):
        _merge_value_info(graph, graph_proto)
    if _has_ops_onnx_does_not_know(model) and _family_reads_unknown_shapes(model):
        _merge_from_ort(model, light)
    return True


def readable_copy(
    model: ir.Model, light: onnx.ModelProto | None = None
) -> onnx.ModelProto:
    """`model` as onnx's inference reads it: serialized without its weights (`light`, where
    the caller has it, is changed instead), external tensors as graph inputs, the project's
    domain ops as their ONNX twins."""
    light = without_external_data(light or serialize_light(model))
    for g in graphs(light.graph):
        for n in g.node:
            if n.domain == DOMAIN and n.op_type in _INFER_TWIN:
                n.domain, n.op_type = "", _INFER_TWIN[n.op_type]
    return light


#: domains whose ops onnx's inference knows (the project's own are read as their twins)
_ONNX_DOMAINS = ("", "ai.onnx", "ai.onnx.ml", "ai.onnx.preview.training", DOMAIN)


def _has_ops_onnx_does_not_know(model: ir.Model) -> bool:
    """Whether some node is of a domain onnx's inference has no schema for (``com.microsoft``
    and other contrib or custom ops): the case ORT's inference is asked for, and the only one."""
    return any(
        node.domain not in _ONNX_DOMAINS
        for node in ir.traversal.RecursiveGraphIterator(model.graph)
    )


def _family_reads_unknown_shapes(model: ir.Model) -> bool:
    """Whether a family node in the main graph or a subgraph reads a value of unknown shape."""
    from ..rules import FAMILY_OPS

    for node in ir.traversal.RecursiveGraphIterator(model.graph):
        if (node.domain, node.op_type) in FAMILY_OPS and any(
            v is not None and v.shape is None for v in node.inputs
        ):
            return True
    return False


def _merge_from_ort(model: ir.Model, light: onnx.ModelProto) -> None:
    """Shapes still unknown after onnx's inference, from ONNX Runtime's symbolic inference (see
    the module docstring); its symbolic dimensions are written as unknown ones."""
    inferred = _ort_symbolic_inference(light)
    if inferred is None:
        return
    doubtful: set[str] = set()
    for graph, graph_proto in subgraph_pairs(model.graph, inferred.graph):
        doubtful |= _after_an_if(graph, doubtful)
        unknown = {
            v.name
            for node in graph
            for v in node.outputs
            if v.shape is None and v.name and v.name not in doubtful
        }
        infos = [vi for vi in graph_proto.value_info if vi.name in unknown]
        for vi in infos:
            if vi.type.HasField("tensor_type"):
                for dim in vi.type.tensor_type.shape.dim:
                    if not dim.HasField("dim_value"):
                        dim.Clear()
        del graph_proto.value_info[:]
        graph_proto.value_info.extend(infos)
        _merge_value_info(graph, graph_proto)


def _after_an_if(graph: ir.Graph, doubtful: set[str]) -> set[str]:
    """Names of `graph`'s values computed from an If's output (or from `doubtful` ones).

    ORT's symbolic inference gives an If output its then-branch's declared type and, where the
    else-branch differs, keeps that rank (``_fuse_tensor_type`` zips the two shapes): wrong
    where the branches' ranks differ, as in TorchScript's ``If(rank == 0)`` exports. Nothing
    computed from an If is taken from it."""
    out = set(doubtful)
    for node in graph:
        if node.op_type == "If" or any(
            v is not None and v.name in out for v in node.inputs
        ):
            out.update(v.name for v in node.outputs if v.name)
    return out


def _ort_symbolic_inference(light: onnx.ModelProto) -> onnx.ModelProto | None:
    """`light` with the value_info ONNX Runtime's symbolic inference found, complete or not;
    None without that tool or where it fails outright. The loop is the body of
    ``SymbolicShapeInference.infer_shapes`` less its temporary file."""
    try:
        from onnxruntime.tools.symbolic_shape_infer import SymbolicShapeInference
    except ImportError:  # an ONNX Runtime build without its tools
        return None
    logger = logging.getLogger("onnxruntime.tools.symbolic_shape_infer")
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        inference = SymbolicShapeInference(
            2**31 - 1, auto_merge=False, guess_output_rank=False, verbose=0
        )
        inference._preprocess(light)
        while inference.run_:
            inference._infer_impl()
        inference._update_output_from_vi()
        return inference.out_mp_
    except Exception:  # noqa: BLE001 - an op it cannot follow: the shapes stay unknown
        return None
    finally:
        logger.setLevel(level)


def _merge_value_info(graph: ir.Graph, graph_proto: onnx.GraphProto) -> None:
    """Set the type and shape of `graph`'s node outputs from the inferred value_info (a graph
    output keeps what it declares). Values of one type share one frozen Shape: tens of
    thousands fewer objects for the garbage collector to walk while the rules run
    (RestoreDeclarationsPass gives a value the input declared its own Shape back)."""
    if not graph_proto.value_info:
        return
    produced = {v.name: v for node in graph for v in node.outputs if v.name}
    # one frozen Shape and one type per distinct TypeProto
    read: dict[bytes, tuple] = {}
    for vi in graph_proto.value_info:
        value = produced.get(vi.name)
        if value is None or value.is_graph_output():
            continue
        key = vi.type.SerializeToString()
        if key not in read:
            shape = ir.serde.deserialize_type_proto_for_shape(vi.type)
            if shape is not None:
                shape.freeze()
            read[key] = (shape, ir.serde.deserialize_type_proto_for_type(vi.type))
        value.shape, value.type = read[key]


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
