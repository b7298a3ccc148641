"""The options for one family node, each as a one-node model of its own at the sizes the node
really sees: the node as it is (the target EP's kernel, or ONNX Runtime's CPU kernel with the
copies ORT puts around it), and each lowering rule that rewrites it (`convert` with
`node_strategies={out: "rule:NAME"}`). The Python fallback (the project's own CumProd left as
it is) is an option only where no rule rewrites the node: it is for what nothing else runs.

The one-node model declares its inputs as the whole model's shape inference knows them (a
symbolic dim stays symbolic, so a rule builds the same variant it builds in the whole model),
takes constant inputs (axis, initializer data) as initializers, and names everything
canonically, so two nodes alike in op, attributes, types, dims and constants share one model
(and one measurement)."""

from __future__ import annotations

import dataclasses

import numpy as np
import onnx

from .._domain import DOMAIN
from ..conversion import convert
from ..converter.rules import RULES
from .capture import FamilyNode

#: the option name of the node left as it is
AS_IS = "as-is"


@dataclasses.dataclass
class Option:
    name: str  # "as-is", or "<action>:<rule>" (e.g. "lowered:scatter-sort-scan-unpool")
    #: what `convert(node_strategies=...)` is told for this option in the whole model
    strategy: str
    model: onnx.ModelProto


def one_node_model(
    model: onnx.ModelProto,
    fam: FamilyNode,
    values: dict[str, np.ndarray],
    constant_names: set[str],
    types: dict[str, onnx.TypeProto],
) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """(the node alone in a model, its feeds)."""
    node = onnx.NodeProto()
    node.CopyFrom(fam.node)
    node.name = "node"
    inputs, inits, feeds = [], [], {}
    for k, name in enumerate(fam.node.input):
        if not name:
            continue
        canon = f"in{k}"
        node.input[k] = canon
        value = np.asarray(values[name])
        if name in constant_names:
            inits.append(onnx.numpy_helper.from_array(value, canon))
            continue
        inputs.append(_declared(canon, value, types.get(name)))
        feeds[canon] = value
    outputs = []
    for k, name in enumerate(fam.node.output):
        if not name:
            continue
        node.output[k] = f"out{k}"
        vi = onnx.ValueInfoProto(name=f"out{k}")
        if name in types:
            vi.type.CopyFrom(types[name])
        outputs.append(vi)
    graph = onnx.helper.make_graph([node], "one_node", inputs, outputs, inits)
    single = onnx.helper.make_model(
        graph, opset_imports=list(model.opset_import), ir_version=model.ir_version
    )
    return single, feeds


def _declared(
    name: str, value: np.ndarray, known: onnx.TypeProto | None
) -> onnx.ValueInfoProto:
    """`value`'s type, with the whole model's dims where it knows them at this rank (a symbolic
    dim kept symbolic), the value's own dims otherwise."""
    elem = onnx.helper.np_dtype_to_tensor_dtype(value.dtype)
    dims: list = list(value.shape)
    if known is not None and known.HasField("tensor_type"):
        shape = known.tensor_type.shape
        if known.tensor_type.HasField("shape") and len(shape.dim) == value.ndim:
            dims = [
                d.dim_value if d.HasField("dim_value") else (d.dim_param or None)
                for d in shape.dim
            ]
    return onnx.helper.make_tensor_value_info(name, elem, dims)


def options(single: onnx.ModelProto, target: str) -> list[Option]:
    """Every option for the one node of `single` on `target`."""
    node = single.graph.node[0]
    out: list[Option] = []
    for rule in RULES:
        if rule.name in {o.strategy.removeprefix("rule:") for o in out}:
            continue
        strategy = f"rule:{rule.name}"
        try:
            result = convert(
                single,
                target,
                strategy="lower",
                node_strategies={node.output[0]: strategy},
                with_inspect=False,
            )
        except Exception:  # noqa: BLE001 - a rule that cannot build this node is no option
            continue
        rep = result.report.nodes[0] if result.report.nodes else None
        if rep is None or not rep.rewritten or rep.action in ("fallback", "refused"):
            continue
        out.append(Option(f"{rep.action}:{rule.name}", strategy, result.model))
    if node.domain != DOMAIN or not out:
        out.insert(0, Option(AS_IS, "native", single))
    return out
