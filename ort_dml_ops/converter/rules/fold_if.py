"""Fold an `If` whose condition the model's declared shapes decide: the taken branch is inlined.

TorchScript's exporter (`torch.onnx.export(..., dynamo=False)`) writes `scatter_reduce` /
`scatter_max` as ``If(Equal(Size(Shape(x)), 0))``: a then-branch that Reshapes the operands to
rank 1 (torch's 0-d case) and an else-branch of Identities, and a second `If` that Squeezes the
result back. The rank of `x` is declared, so the condition is a constant — but the If hides the
scatter's operand ranks from the lowering rules ("the rank of data is unknown"), so the scatter
stays on the CPU. ONNX Runtime never folds such an If at session creation: its constant folding
(onnxruntime/core/optimizer/constant_folding.cc) folds an If only when the condition is an
initializer, and `Size(Shape(x))` is not one while `x` is a graph input.

The condition is evaluated from constants, initializers and inferred shapes only (`Shape` of a
value with a static shape, `Size` of one, comparisons and logic on those); anything else leaves
the If as it is. The taken branch's nodes replace the If in place (its outputs take the If's
output names), the branch's initializers join the graph's, and the condition's producers that
nothing else reads are removed. Only the main graph is folded.

The same exports declare the second If's branch output and the graph output with the dead
then-branch's rank (``sum: float[Ifsum_dim_0]``, the else-branch's ``Identity`` output likewise)
while torch returns, and the taken branch computes, a rank-2 tensor (``[rows, 3]``). That wrong
declaration is why the unconverted exports cannot run on DirectML: the DML EP fails at run in
that Identity (MLOperatorAuthorImpl.cpp(2844), 80070057); with the branch and output
declarations cleared and the Ifs kept they run (measured on the lane, docs/dml-lane.md). Folding
drops the branch declarations with the branch (the inlined values are inferred again). A wrong
declaration of a graph output is not repaired silently: it is replaced by the inferred shape
only when the two contradict (rank, or a concrete dim), and the report's `normalized` list says
so for each output; `FoldResult.outputs` carries the repaired declarations so that `convert`
keeps them (it otherwise restores the graph's inputs and outputs exactly as given).
Intermediate `value_info` for a folded If's outputs is dropped and inferred again from the taken
branch, and so is that of every value computed from them (inferred from the If's unknown or
wrong shape before the fold).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np
import onnx
import onnx_ir as ir

from ...modelio import without_external_data
from ..light import serialize_light


@dataclasses.dataclass
class FoldResult:
    #: one line per folded If and per repaired output declaration (ConvertReport.normalized)
    notes: list[str] = dataclasses.field(default_factory=list)
    #: graph outputs whose declaration was repaired: name -> the new ValueInfoProto
    outputs: dict[str, onnx.ValueInfoProto] = dataclasses.field(default_factory=dict)

    def signature(self, signature: list) -> list:
        """`signature` (pipeline._signature: inputs, outputs) with the repaired outputs."""
        ins, outs = signature
        return [
            ins,
            [
                (
                    n,
                    self.outputs[n].type.SerializeToString()
                    if n in self.outputs
                    else t,
                )
                for n, t in outs
            ],
        ]

    def restore_outputs(self, graph: ir.Graph) -> None:
        """Put the repaired output declarations back after the graph's I/O were restored."""
        for value in graph.outputs:
            vi = self.outputs.get(str(value.name))
            if vi is not None:
                value.shape = ir.serde.deserialize_type_proto_for_shape(vi.type)
                value.type = ir.serde.deserialize_type_proto_for_type(vi.type)


def fold_static_ifs(model: ir.Model, infer: Callable[[ir.Model], Any]) -> FoldResult:
    """Fold, in place, every main-graph If of `model` whose condition is static.

    `infer` refreshes the values' shapes (passes/shapes.infer_shapes); it is called after each
    round of folds, since a folded If can decide the condition of the next (the second If of a
    TorchScript scatter reads the rank of the first one's output).
    """
    result = FoldResult()
    folded_outputs: dict[str, str] = {}  # If output name -> If node label
    g = model.graph
    while True:
        consts = _Constants()
        for node in list(g):
            if node.op_type != "If" or node.domain != "" or not node.inputs:
                continue
            cond = consts.value(node.inputs[0])
            if cond is None or cond.size != 1:
                continue
            taken = bool(cond.reshape(-1)[0])
            branch = node.attributes["then_branch" if taken else "else_branch"]
            label = node.name or "If"
            for out in node.outputs:
                folded_outputs[str(out.name)] = label
            _inline(g, node, branch.as_graph())
            result.notes.append(
                f"{label}: If folded, its condition is {taken} by the declared shapes "
                f"({'then' if taken else 'else'} branch inlined)"
            )
            break  # the graph changed; read it again
        else:
            break
        _forget_shapes(g, _downstream(g, set(folded_outputs)))
        _remove_dead(g)
        infer(model)
    if folded_outputs:
        _repair_outputs(model, _downstream_labels(g, folded_outputs), infer, result)
    return result


# --------------------------------------------------------------------------------------
def _static(v: ir.Value) -> list[int] | None:
    """v's declared / inferred dims when all are known."""
    if v.shape is None or not all(isinstance(d, int) for d in v.shape):
        return None
    return [d for d in v.shape if isinstance(d, int)]


class _Constants:
    """Values of the main graph known without running it (numpy arrays), or None."""

    _COMPARE: ClassVar[dict] = {
        "Equal": np.equal,
        "Greater": np.greater,
        "Less": np.less,
        "GreaterOrEqual": np.greater_equal,
        "LessOrEqual": np.less_equal,
        "And": np.logical_and,
        "Or": np.logical_or,
        "Xor": np.logical_xor,
    }

    def __init__(self) -> None:
        self.memo: dict[ir.Value, np.ndarray | None] = {}

    def value(self, v: ir.Value | None) -> np.ndarray | None:
        if v is None:
            return None
        if v not in self.memo:
            self.memo[v] = self._value(v)
        return self.memo[v]

    def _value(self, v: ir.Value) -> np.ndarray | None:
        if v.is_initializer():
            tensor = v.const_value
            if tensor is None or isinstance(tensor, ir.ExternalTensor):
                return None  # its bytes are not read (a weight, not a condition)
            return tensor.numpy()
        node = v.producer()
        if node is None or node.domain != "":
            return None
        op = node.op_type
        if op == "Constant":
            return _constant(node)
        if op in ("Shape", "Size"):
            dims = _static(node.inputs[0]) if node.inputs[0] is not None else None
            if dims is None:
                return None
            if op == "Size":
                return np.array(int(np.prod(dims, dtype=np.int64)), dtype=np.int64)
            start = node.attributes.get_int("start", 0)
            end = node.attributes.get_int("end", len(dims))
            return np.array(dims, dtype=np.int64)[start:end]
        found = [self.value(x) for x in node.inputs]
        args = [a for a in found if a is not None]
        if len(args) != len(found):
            return None
        if op == "Identity":
            return args[0]
        if op == "Not":
            return np.logical_not(args[0])
        if op in self._COMPARE and len(args) == 2:
            return self._COMPARE[op](args[0], args[1])
        return None


def _constant(node: ir.Node) -> np.ndarray | None:
    attrs = node.attributes
    if "value" in attrs:
        return attrs["value"].as_tensor().numpy()
    for key, dtype in (
        ("value_int", np.int64),
        ("value_float", np.float32),
        ("value_ints", np.int64),
        ("value_floats", np.float32),
    ):
        if key in attrs:
            return np.array(attrs[key].value, dtype=dtype)
    return None


def _inline(g: ir.Graph, node: ir.Node, branch: ir.Graph) -> None:
    """Replace `node` (an If) by `branch`'s nodes; the branch's outputs become the If's outputs.

    The inlined values lose the types and shapes the branch declared (they are inferred again
    in the main graph): the dead branch's declarations are what misled the exporter."""
    nodes = list(branch)
    produced = {v for n in nodes for v in n.outputs}
    for n in nodes:
        for v in n.outputs:
            v.type, v.shape = None, None
    for init_name in list(branch.initializers):
        g.register_initializer(branch.initializers.pop(init_name))
    branch_outputs = list(branch.outputs)
    branch.outputs.clear()
    branch.remove(nodes)
    g.insert_before(node, nodes)
    taken: set[ir.Value] = set()
    for b_out, if_out in zip(branch_outputs, list(node.outputs)):
        name = if_out.name
        if b_out in produced and b_out not in taken:
            taken.add(b_out)
            new = b_out
        else:  # an outer value or a repeated output: an Identity keeps the If's output name
            identity = ir.Node(
                "", "Identity", [b_out], name=f"{node.name}/{name}", num_outputs=1
            )
            g.insert_before(node, identity)
            new = identity.outputs[0]
        if if_out.is_graph_output():  # the graph output keeps its declaration
            new.type, new.shape = if_out.type, if_out.shape
        ir.convenience.replace_all_uses_with(if_out, new, replace_graph_outputs=True)
        if_out.name = None
        new.name = name
    g.remove(node, safe=True)


def _downstream(g: ir.Graph, names: set[str]) -> set[str]:
    """`names` and every main-graph value computed from them (their inferred shapes are stale)."""
    out = set(names)
    for n in g:  # graph order is topological
        if any(x is not None and x.name in out for x in n.inputs):
            out.update(str(o.name) for o in n.outputs)
    return out


def _downstream_labels(g: ir.Graph, folded: dict[str, str]) -> dict[str, str]:
    """{value: the folded If it is computed from} for the folded outputs and what reads them."""
    out = dict(folded)
    for n in g:
        label = next(
            (out[str(x.name)] for x in n.inputs if x is not None and x.name in out),
            None,
        )
        if label is not None:
            for o in n.outputs:
                out.setdefault(str(o.name), label)  # an If's own output keeps its name
    return out


def _forget_shapes(g: ir.Graph, names: set[str]) -> None:
    """Drop the inferred type and shape of the main graph's values in `names` (a graph output
    keeps its declaration)."""
    for n in g:
        for v in n.outputs:
            if v.name in names and not v.is_graph_output():
                v.type, v.shape = None, None


def _remove_dead(g: ir.Graph) -> None:
    """Remove nodes nothing reads (the folded conditions' Shape/Size/Equal chains)."""
    for n in reversed(list(g)):
        if n.outputs and not any(o.uses() or o.is_graph_output() for o in n.outputs):
            g.remove(n, safe=True)


def _repair_outputs(
    model: ir.Model, folded: dict[str, str], infer, result: FoldResult
) -> None:
    """Replace the declaration of a graph output computed from a folded If where it contradicts
    the shape computed through the taken branch."""
    probe = without_external_data(serialize_light(model))
    declared = {}
    for vi in probe.graph.output:
        if vi.name in folded and vi.type.HasField("tensor_type"):
            declared[vi.name] = onnx.ValueInfoProto()
            declared[vi.name].CopyFrom(vi)
            vi.type.tensor_type.ClearField("shape")
    inferred = {
        vi.name: vi for vi in onnx.shape_inference.infer_shapes(probe).graph.output
    }
    for value in model.graph.outputs:
        old, new = declared.get(str(value.name)), inferred.get(str(value.name))
        if old is None or new is None:
            continue
        old_tt, new_tt = old.type.tensor_type, new.type.tensor_type
        if not old_tt.HasField("shape") or not new_tt.HasField("shape"):
            continue
        if not _contradicts(old_tt.shape, new_tt.shape):
            continue
        fixed = onnx.ValueInfoProto()
        fixed.CopyFrom(old)
        fixed.type.tensor_type.shape.CopyFrom(new_tt.shape)
        value.shape = ir.serde.deserialize_type_proto_for_shape(fixed.type)
        result.outputs[str(value.name)] = fixed
        result.notes.append(
            f"graph output {value.name!r}: declared {_show(old_tt.shape)} by the exporter, "
            f"but it is {_show(new_tt.shape)} through {folded[str(value.name)]}'s taken branch; "
            "the declaration is replaced by the computed shape"
        )
    infer(model)


def _contradicts(a: onnx.TensorShapeProto, b: onnx.TensorShapeProto) -> bool:
    if len(a.dim) != len(b.dim):
        return True
    return any(
        x.HasField("dim_value")
        and y.HasField("dim_value")
        and x.dim_value != y.dim_value
        for x, y in zip(a.dim, b.dim)
    )


def _show(shape: onnx.TensorShapeProto) -> str:
    return (
        "["
        + ", ".join(
            str(d.dim_value) if d.HasField("dim_value") else (d.dim_param or "?")
            for d in shape.dim
        )
        + "]"
    )
