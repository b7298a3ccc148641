"""``GetCpuPreferredNodes``: the nodes a GPU EP could run that ONNX Runtime keeps on the CPU.

Mirrors ``core/framework/fallback_cpu_capability.cc``, called by the DML EP's ``GetCapability``
(``providers/dml/DmlExecutionProvider/src/ExecutionProvider.cpp``) with every node its kernel
lookup found a kernel for ("tentative" nodes, before its support queries):

1. Seeds: the consumers of every tentative node's outputs that its kernel declares CPU-side
   (DML ``Shape``, ``Size``...).
2. Candidates are taken in topological order (smallest first). A node that is not tentative
   (no kernel on the EP) is assumed to run on the CPU: its outputs are CPU values and its
   consumers become candidates.
3. A tentative candidate goes to the CPU when every input (missing optional inputs included:
   an empty input never qualifies) is, in order of the checks: not float16/bfloat16/float8, and
   either a small initializer (<= 100 elements, outer scopes included; a Constant node and a
   folded node count, as both are initializers by now) or a graph input, or else a CPU value
   that the EP's kernel does not itself read from CPU memory. Its outputs become CPU values and
   its consumers candidates.
"""

from __future__ import annotations

import heapq

from .graph import Graph

SMALL_INITIALIZER = 100
LOW_PRECISION = frozenset(
    {
        "tensor(float16)",
        "tensor(bfloat16)",
        "tensor(float8e4m3fn)",
        "tensor(float8e4m3fnuz)",
        "tensor(float8e5m2)",
        "tensor(float8e5m2fnuz)",
    }
)


def cpu_preferred(graph: Graph, order: list, tentative: dict, types: dict) -> set:
    """Nodes (of `order`, ORT's topological order) kept on the CPU; `tentative`: node -> EP kernel."""
    # the seeds: outputs a tentative node's kernel writes to CPU memory
    seeds = [
        o
        for node, kernel in tentative.items()
        if kernel.cpu_outputs
        for j, o in enumerate(node.outputs)
        if o and j in kernel.cpu_outputs
    ]
    if not seeds:
        return set()  # nothing starts on the CPU side: no candidate
    rank = {n: i for i, n in enumerate(order)}
    # who reads what (implicit reads included); the heap orders the candidates
    consumers = graph.consumers()
    graph_inputs = set(graph.inputs)
    cpu_values: set = set()
    heap: list = []

    def push_consumers(node):
        for o in node.outputs:
            for c in consumers.get(o, ()) if o else ():
                heapq.heappush(heap, (rank[c], c.index))

    by_index = {n.index: n for n in order}
    for o in seeds:
        cpu_values.add(o)
        for c in consumers.get(o, ()):
            heapq.heappush(heap, (rank[c], c.index))
    visited: set = set()
    result: set = set()
    while heap:
        _, idx = heapq.heappop(heap)
        if idx in visited:
            continue
        visited.add(idx)
        node = by_index[idx]
        if node not in tentative:
            cpu_values.update(o for o in node.outputs if o)
            push_consumers(node)
            continue
        kernel = tentative[node]
        place = True
        for i, x in enumerate(node.inputs):
            if types.get(x) in LOW_PRECISION:
                place = False
                break
            init = graph.initializer(x) if x else None
            if (init is not None and init.numel <= SMALL_INITIALIZER) or (
                x and x in graph_inputs
            ):
                continue
            if not x or x not in cpu_values or i in kernel.cpu_inputs:
                place = False
                break
        if place:
            result.add(node)
            cpu_values.update(o for o in node.outputs if o)
            push_consumers(node)
    return result
