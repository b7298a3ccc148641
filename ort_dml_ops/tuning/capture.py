"""What each CumSum / CumProd / Scatter node of the main graph really receives: the model run
once on ONNX Runtime's CPU EP with the user's inputs, every node input asked for as an extra
graph output (ORT returns any value of the main graph named as an output)."""

from __future__ import annotations

import dataclasses

import numpy as np
import onnx

from ..converter.rules import FAMILY_OPS
from ..errors import UserError


@dataclasses.dataclass
class FamilyNode:
    """One family node of the main graph, found by its index there."""

    index: int
    node: onnx.NodeProto

    @property
    def label(self) -> str:
        return self.node.name or f"{self.node.op_type}#{self.index}"

    @property
    def output(self) -> str:
        """The name convert's `node_strategies` knows the node by."""
        return self.node.output[0]


def family_nodes(model: onnx.ModelProto) -> list[FamilyNode]:
    return [
        FamilyNode(i, n)
        for i, n in enumerate(model.graph.node)
        if ("" if n.domain == "ai.onnx" else n.domain, n.op_type) in FAMILY_OPS
    ]


def constants(model: onnx.ModelProto) -> dict[str, np.ndarray]:
    """The main graph's initializers and Constant nodes' tensors, by value name."""
    out = {t.name: onnx.numpy_helper.to_array(t) for t in model.graph.initializer}
    for n in model.graph.node:
        if n.op_type == "Constant" and n.domain in ("", "ai.onnx"):
            for a in n.attribute:
                if a.name == "value":
                    out[n.output[0]] = onnx.numpy_helper.to_array(a.t)
    return out


def node_inputs(
    model: onnx.ModelProto, feeds: dict[str, np.ndarray], nodes: list[FamilyNode]
) -> dict[str, np.ndarray]:
    """Every input value of `nodes` (by name) as the model computes it from `feeds`."""
    from ..session import InferenceSession

    known = {**constants(model), **feeds}
    wanted = sorted({v for f in nodes for v in f.node.input if v and v not in known})
    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    declared = {o.name for o in probe.graph.output}
    for name in wanted:
        if name not in declared:
            probe.graph.output.append(onnx.ValueInfoProto(name=name))
    try:
        session = InferenceSession(probe, providers=["CPUExecutionProvider"])
        values = session.run(wanted, feeds) if wanted else []
    except UserError:
        raise
    except Exception as exc:  # noqa: BLE001 - ORT's own error, one line for the user
        raise UserError(
            f"the model does not run on the CPU EP with these inputs ({str(exc).splitlines()[0]})"
        ) from None
    return {**known, **dict(zip(wanted, values))}
