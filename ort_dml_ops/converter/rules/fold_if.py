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
from typing import ClassVar

import numpy as np
import onnx
from onnx import numpy_helper


@dataclasses.dataclass
class FoldResult:
    #: one line per folded If and per repaired output declaration (ConvertReport.normalized)
    notes: list[str] = dataclasses.field(default_factory=list)
    #: graph outputs whose declaration was repaired: name -> the new ValueInfoProto
    outputs: dict[str, onnx.ValueInfoProto] = dataclasses.field(default_factory=dict)

    def signature(self, signature: list) -> list:
        """`signature` (conversion._signature: inputs, outputs) with the repaired outputs."""
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

    def restore_outputs(self, graph: onnx.GraphProto) -> None:
        """Put the repaired output declarations back after the graph's I/O were restored."""
        for vi in graph.output:
            if vi.name in self.outputs:
                vi.CopyFrom(self.outputs[vi.name])


def fold_static_ifs(
    proto: onnx.ModelProto, infer: Callable[[onnx.ModelProto], onnx.ModelProto]
) -> FoldResult:
    """Fold, in place, every main-graph If of `proto` whose condition is static.

    `infer` refreshes `proto.graph.value_info` (conversion._infer_shapes); it is called after each
    round of folds, since a folded If can decide the condition of the next (the second If of a
    TorchScript scatter reads the rank of the first one's output).
    """
    result = FoldResult()
    folded_outputs: dict[str, str] = {}  # If output name -> If node label
    while True:
        g = proto.graph
        shapes = _shapes(g)
        consts = _Constants(g, shapes)
        done_this_round = False
        for node in list(g.node):
            if node.op_type != "If" or node.domain not in ("", "ai.onnx"):
                continue
            cond = consts.value(node.input[0])
            if cond is None or cond.size != 1:
                continue
            taken = bool(cond.reshape(-1)[0])
            branch = _attr_graph(node, "then_branch" if taken else "else_branch")
            label = node.name or "If"
            _inline(g, node, branch)
            for out in node.output:
                folded_outputs[out] = label
            result.notes.append(
                f"{label}: If folded, its condition is {taken} by the declared shapes "
                f"({'then' if taken else 'else'} branch inlined)"
            )
            done_this_round = True
            break  # indices moved; re-read the graph
        if not done_this_round:
            break
        _drop_value_info(proto.graph, _downstream(proto.graph, set(folded_outputs)))
        _remove_dead(proto.graph)
        infer(proto)
    if folded_outputs:
        _repair_outputs(
            proto, _downstream_labels(proto.graph, folded_outputs), infer, result
        )
    return result


# --------------------------------------------------------------------------------------
def _attr_graph(node: onnx.NodeProto, name: str) -> onnx.GraphProto:
    return next(a.g for a in node.attribute if a.name == name)


def _shapes(g: onnx.GraphProto) -> dict[str, list[int | None]]:
    """Declared / inferred shapes of the main graph's values (None for a symbolic dim)."""
    out: dict[str, list[int | None]] = {}
    for vi in list(g.input) + list(g.value_info) + list(g.output):
        tt = vi.type.tensor_type if vi.type.HasField("tensor_type") else None
        if tt is None or not tt.HasField("shape"):
            continue
        out[vi.name] = [
            d.dim_value if d.HasField("dim_value") else None for d in tt.shape.dim
        ]
    for t in g.initializer:
        out[t.name] = list(t.dims)
    return out


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

    def __init__(self, g: onnx.GraphProto, shapes: dict):
        self.shapes = shapes
        self.init = {t.name: t for t in g.initializer}
        self.producer = {o: n for n in g.node for o in n.output}
        self.memo: dict[str, np.ndarray | None] = {}

    def value(self, name: str) -> np.ndarray | None:
        if name not in self.memo:
            self.memo[name] = self._value(name)
        return self.memo[name]

    def _static(self, name: str) -> list[int] | None:
        dims = self.shapes.get(name)
        return None if dims is None or any(d is None for d in dims) else dims

    def _value(self, name: str) -> np.ndarray | None:
        if name in self.init:
            return numpy_helper.to_array(self.init[name])
        node = self.producer.get(name)
        if node is None or node.domain not in ("", "ai.onnx"):
            return None
        attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
        op = node.op_type
        if op == "Constant":
            if "value" in attrs:
                return numpy_helper.to_array(attrs["value"])
            for key, dtype in (
                ("value_int", np.int64),
                ("value_float", np.float32),
                ("value_ints", np.int64),
                ("value_floats", np.float32),
            ):
                if key in attrs:
                    return np.array(attrs[key], dtype=dtype)
            return None
        if op == "Shape":
            dims = self._static(node.input[0])
            if dims is None:
                return None
            return np.array(dims, dtype=np.int64)[
                attrs.get("start", 0) : attrs.get("end", len(dims))
            ]
        if op == "Size":
            dims = self._static(node.input[0])
            return (
                None
                if dims is None
                else np.array(int(np.prod(dims, dtype=np.int64)), dtype=np.int64)
            )
        found = [self.value(x) for x in node.input]
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


def _inline(g: onnx.GraphProto, node: onnx.NodeProto, branch: onnx.GraphProto) -> None:
    """Replace `node` (an If) by `branch`'s nodes; the branch's outputs become the If's outputs."""
    rename = {}
    produced = {o for n in branch.node for o in n.output}
    extra = []
    for b_out, if_out in zip(branch.output, node.output):
        if b_out.name in produced and b_out.name not in rename:
            rename[b_out.name] = if_out
        else:  # an outer value or a repeated output: an Identity keeps the If's output name
            extra.append(
                onnx.helper.make_node(
                    "Identity", [b_out.name], [if_out], name=f"{node.name}/{if_out}"
                )
            )
    nodes = []
    for n in branch.node:
        m = onnx.NodeProto()
        m.CopyFrom(n)
        _rename_refs(m, rename)
        nodes.append(m)
    for ex in extra:
        ex.input[0] = rename.get(ex.input[0], ex.input[0])
    g.initializer.extend(branch.initializer)
    g.sparse_initializer.extend(branch.sparse_initializer)
    at = list(g.node).index(node)
    kept = list(g.node)
    del g.node[:]
    g.node.extend(kept[:at] + nodes + extra + kept[at + 1 :])


def _rename_refs(node: onnx.NodeProto, rename: dict[str, str]) -> None:
    for k, x in enumerate(node.input):
        node.input[k] = rename.get(x, x)
    for k, x in enumerate(node.output):
        node.output[k] = rename.get(x, x)
    # nested graphs may read a renamed value from the outer scope
    for a in node.attribute:
        for sub in [a.g] if a.type == onnx.AttributeProto.GRAPH else list(a.graphs):
            for n in sub.node:
                _rename_refs(n, rename)


def _downstream(g: onnx.GraphProto, names: set[str]) -> set[str]:
    """`names` and every main-graph value computed from them (their inferred shapes are stale)."""
    out = set(names)
    for n in g.node:  # graph order is topological
        if any(x in out for x in n.input):
            out.update(n.output)
    return out


def _downstream_labels(g: onnx.GraphProto, folded: dict[str, str]) -> dict[str, str]:
    """{value: the folded If it is computed from} for the folded outputs and what reads them."""
    out = dict(folded)
    for n in g.node:
        label = next((out[x] for x in n.input if x in out), None)
        if label is not None:
            for o in n.output:
                out.setdefault(o, label)  # an If's own output keeps its name
    return out


def _drop_value_info(g: onnx.GraphProto, names: set[str]) -> None:
    kept = [vi for vi in g.value_info if vi.name not in names]
    del g.value_info[:]
    g.value_info.extend(kept)


def _used_names(g: onnx.GraphProto) -> set[str]:
    used = {o.name for o in g.output}
    for n in g.node:
        used.update(n.input)
        for a in n.attribute:
            for sub in [a.g] if a.type == onnx.AttributeProto.GRAPH else list(a.graphs):
                used |= _used_names(sub)
    return used


def _remove_dead(g: onnx.GraphProto) -> None:
    """Remove nodes nothing reads (the folded conditions' Shape/Size/Equal chains)."""
    while True:
        used = _used_names(g)
        dead = [
            n for n in g.node if n.output and not any(o in used for o in n.output if o)
        ]
        if not dead:
            return
        kept = [n for n in g.node if n not in dead]
        del g.node[:]
        g.node.extend(kept)


def _repair_outputs(
    proto: onnx.ModelProto, folded: dict[str, str], infer, result: FoldResult
) -> None:
    """Replace the declaration of a graph output computed from a folded If where it contradicts
    the shape computed through the taken branch."""
    probe = onnx.ModelProto()
    probe.CopyFrom(proto)
    for vi in probe.graph.output:
        if vi.name in folded and vi.type.HasField("tensor_type"):
            vi.type.tensor_type.ClearField("shape")
    inferred_graph = onnx.shape_inference.infer_shapes(probe).graph
    inferred = {vi.name: vi for vi in inferred_graph.output}
    for vi in proto.graph.output:
        new = inferred.get(vi.name)
        if vi.name not in folded or new is None or not vi.type.HasField("tensor_type"):
            continue
        old_tt, new_tt = vi.type.tensor_type, new.type.tensor_type
        if not old_tt.HasField("shape") or not new_tt.HasField("shape"):
            continue
        if not _contradicts(old_tt.shape, new_tt.shape):
            continue
        fixed = onnx.ValueInfoProto()
        fixed.CopyFrom(vi)
        fixed.type.tensor_type.shape.CopyFrom(new_tt.shape)
        vi.CopyFrom(fixed)
        result.outputs[vi.name] = fixed
        result.notes.append(
            f"graph output {vi.name!r}: declared {_show(old_tt.shape)} by the exporter, "
            f"but it is {_show(new_tt.shape)} through {folded[vi.name]}'s taken branch; "
            "the declaration is replaced by the computed shape"
        )
    infer(proto)


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
