"""Constant folding as ONNX Runtime runs it before partitioning (``ConstantFolding``, level 1).

Mirrors ``core/optimizer/constant_folding.cc`` ``ConstantFolding::ApplyImpl``, in topological
order:

* ``Shape`` whose input has a concrete size for every dimension in [start, end) (Shape-15
  slicing) becomes an int64 initializer; the nodes that only fed it are removed with it
  (``graph_utils::RemoveNodesWithOneOutputBottomUp``: a producer with at most one output edge
  that makes no graph output, recursively upwards).
* Any other node is folded when it is in the ONNX domain (before partitioning a node has no EP,
  so ``com.microsoft``, ``ai.onnx.ml`` and custom ops are never folded), deterministic, without
  subgraphs, not ``DequantizeLinear`` (kept for QDQ), every input is a constant initializer
  (a graph input is not one), the CPU EP has a kernel for it, and its outputs are tensors.
  Its outputs become initializers (so they count as initializers, and as small ones, for the
  CPU-preferred pass).

Values are computed with ONNX's reference evaluator (only their size matters to placement; a
node whose inputs are too large to read is still folded, with its size from shape inference).
"""

from __future__ import annotations

import numpy as np
import onnx

from .graph import NONDETERMINISTIC, Graph, Initializer, Node

_NP_TO_ELEM = {
    np.dtype(k): v
    for k, v in (
        ("float32", 1),
        ("uint8", 2),
        ("int8", 3),
        ("uint16", 4),
        ("int16", 5),
        ("int32", 6),
        ("int64", 7),
        ("bool", 9),
        ("float16", 10),
        ("float64", 11),
        ("uint32", 12),
        ("uint64", 13),
    )
}
_TYPE_TO_ELEM = {
    "tensor(float)": 1,
    "tensor(uint8)": 2,
    "tensor(int8)": 3,
    "tensor(uint16)": 4,
    "tensor(int16)": 5,
    "tensor(int32)": 6,
    "tensor(int64)": 7,
    "tensor(string)": 8,
    "tensor(bool)": 9,
    "tensor(float16)": 10,
    "tensor(double)": 11,
    "tensor(uint32)": 12,
    "tensor(uint64)": 13,
    "tensor(bfloat16)": 16,
}


def _shape_fold(node: Node, shapes: dict):
    dims = shapes.get(node.inputs[0]) if node.inputs else None
    if dims is None:
        return None
    rank = len(dims)
    start, end = int(node.attr("start", 0)), int(node.attr("end", rank))
    start = min(max(start + rank if start < 0 else start, 0), rank)
    end = min(max(end + rank if end < 0 else end, 0), rank)
    sliced = dims[start:end] if end > start else ()
    if any(d is None for d in sliced):
        return None
    return np.array(sliced, dtype=np.int64)


def _evaluate(node: Node, graph: Graph, types: dict, opsets: dict):
    values: list = []
    for x in node.inputs:
        if not x:
            values.append(None)
            continue
        init = graph.initializer(x)
        if init.value is None:
            return None
        values.append(init.value)
    try:
        from onnx.reference import ReferenceEvaluator

        ins = [x if x else "" for x in node.inputs]
        g = onnx.helper.make_graph(
            [node.to_proto()],
            "fold",
            [
                onnx.helper.make_tensor_value_info(
                    x, _NP_TO_ELEM.get(np.asarray(v).dtype, 1), None
                )
                for x, v in zip(ins, values)
                if x
            ],
            [onnx.helper.make_tensor_value_info(o, 0, None) for o in node.outputs if o],
        )
        m = onnx.helper.make_model(
            g, opset_imports=[onnx.helper.make_opsetid(d, v) for d, v in opsets.items()]
        )
        feeds = {x: np.asarray(v) for x, v in zip(ins, values) if x}
        return ReferenceEvaluator(m).run(None, feeds)
    except Exception:  # noqa: BLE001 - value unknown; the fold itself still happens
        return None


def _remove_bottom_up(graph: Graph, start: Node, folded_name: str, cons: dict) -> None:
    """graph_utils::RemoveNodesWithOneOutputBottomUp. `cons`: consumers before anything was removed
    (a node's edge to the node being removed still counts)."""
    queue = [start]
    done: set = set()
    while queue:
        cur = queue.pop(0)
        if cur in done or cur.dead:
            continue
        edges = sum(
            sum(1 for x in c.inputs if x == o)
            for o in cur.outputs
            if o
            for c in cons.get(o, ())
        )
        if edges > 1 or any(o in graph.outputs for o in cur.outputs if o):
            continue
        prod = graph.producers()
        queue.extend(prod[x] for x in cur.inputs if x in prod)
        done.add(cur)
        graph.remove(
            cur,
            "ConstantFolding",
            f"constant-folded: it only fed '{folded_name}', which ORT's "
            "ConstantFolding removed (RemoveNodesWithOneOutputBottomUp)",
        )


def fold(graph: Graph, types: dict, shapes: dict, opsets: dict, has_cpu_kernel) -> bool:
    """One ConstantFolding pass over `graph` (subgraphs separately). True if anything was folded."""
    changed = False
    for node in graph.topological():
        if node.dead or node.op_type == "DequantizeLinear":
            continue
        if node.op_type == "Shape" and node.domain == "":
            value = _shape_fold(node, shapes)
            if value is None:
                continue
            graph.initializers[node.outputs[0]] = Initializer(
                node.outputs[0], 7, value.shape, value
            )
            shapes[node.outputs[0]] = tuple(value.shape)
            prod = graph.producers()
            # a snapshot: the removals below keep the graph's map current in place
            cons = dict(graph.consumers())
            inputs = [prod[x] for x in node.inputs if x in prod]
            graph.remove(
                node,
                "ConstantFolding",
                "constant-folded at session creation (ORT ConstantFolding): "
                "Shape of a tensor whose shape is known becomes an initializer",
            )
            for p in inputs:
                _remove_bottom_up(graph, p, node.name, cons)
            changed = True
            continue
        if node.domain != "" or node.op_type in NONDETERMINISTIC or node.subgraphs:
            continue
        if not all(graph.is_constant(x) for x in node.inputs if x):
            continue
        if not has_cpu_kernel(node):
            continue
        if any(
            not (types.get(o) or "tensor(").startswith("tensor(")
            for o in node.outputs
            if o
        ):
            continue
        results = _evaluate(node, graph, types, opsets)
        for k, o in enumerate(node.outputs):
            if not o:
                continue
            dims: tuple | None
            if results is not None:
                v = np.asarray(results[k])
                dims = tuple(v.shape)
            else:
                v = None
                known = shapes.get(o)
                dims = (
                    tuple(known)
                    if known is not None and all(d is not None for d in known)
                    else None
                )
            init = Initializer(
                o,
                _TYPE_TO_ELEM.get(types.get(o, ""), 0),
                dims if dims is not None else (1 << 40,),
                v,
            )
            graph.initializers[o] = init
            if dims is not None:
                shapes[o] = dims
        graph.remove(
            node,
            "ConstantFolding",
            "constant-folded at session creation (ORT ConstantFolding: all "
            "inputs are constant initializers); the node does not run",
        )
        changed = True
    return changed
