"""Graph-level placement rules: what ORT does with a whole graph level after per-node lookup.

* ``constant_folded``: ``core/optimizer/constant_folding.cc`` (Level 1, before partitioning, on by
  default): a deterministic node without subgraphs whose inputs are all constant initializers
  (not graph inputs) or outputs of folded nodes is computed once at session creation and removed;
  so is ``Shape`` of a fully static shape. ``DequantizeLinear`` is kept (QDQ default), custom ops
  and nodes the CPU EP has no kernel for are not folded.
* ``cpu_preferred``: ``core/framework/fallback_cpu_capability.cc`` ``GetCpuPreferredNodes``, called
  by the DML EP's ``GetCapability``: starting from consumers of CPU-side outputs (``Shape``,
  ``Size``), a node the EP could run is kept on the CPU when each input is a graph input, a small
  initializer (<= 100 elements) or a CPU-side value, and none is float16.
* ``count_copies``: ``core/optimizer/transformer_memcpy.cc``: one MemcpyFromHost per tensor
  produced on the CPU and read on the device, one MemcpyToHost per tensor produced on the device
  and read on the CPU (kernel inputs/outputs declared CPU-side count as CPU). Graph inputs need a
  node only when read by both sides (else the session copies the feed); graph outputs never
  (fetches are copied by the session); initializers never (placed where they are consumed).
"""

from __future__ import annotations

import heapq

NONDETERMINISTIC = frozenset({"RandomUniform", "RandomNormal", "RandomUniformLike", "RandomNormalLike",
                              "Multinomial", "Bernoulli"})
NOT_FOLDED = frozenset({"DequantizeLinear"})
SMALL_INITIALIZER = 100


def constant_folded(nodes, decisions, initializers: dict, graph_inputs: set, static_shape) -> set:
    """Indices of nodes ORT's ConstantFolding removes. `initializers`: name -> element count."""
    const = {n for n in initializers if n not in graph_inputs}
    folded = set()
    for i, node in enumerate(nodes):
        d = decisions[i]
        if d.kernel is None or d.provider is None or node.domain not in ("", "ai.onnx", "ai.onnx.ml", "com.microsoft"):
            continue
        if node.op_type in NONDETERMINISTIC or node.op_type in NOT_FOLDED:
            continue
        if any(a.type in (5, 10) for a in node.attribute):  # GRAPH / GRAPHS: has a subgraph
            continue
        ins = [x for x in node.input if x]
        if node.op_type == "Shape" and node.domain in ("", "ai.onnx") and ins and static_shape(ins[0]):
            ok = True
        else:
            ok = all(x in const for x in ins)
        if ok:
            folded.add(i)
            const.update(o for o in node.output if o)
    return folded


def cpu_preferred(nodes, decisions, initializers: dict, graph_inputs: set, value_type) -> set:
    """Indices of nodes GetCpuPreferredNodes moves to the CPU EP (GPU targets only)."""
    producers = {}
    consumers: dict = {}
    for i, node in enumerate(nodes):
        for o in node.output:
            if o:
                producers[o] = i
        for x in node.input:
            if x:
                consumers.setdefault(x, []).append(i)
    tentative = {i for i, d in enumerate(decisions) if d.target_lookup}
    cpu_out: set = set()
    heap: list = []
    for i in tentative:
        k = decisions[i].target_kernel
        for j, o in enumerate(nodes[i].output):
            if o and k is not None and j in k.cpu_outputs:
                cpu_out.add(o)
                for c in consumers.get(o, ()):
                    heapq.heappush(heap, c)
    visited: set = set()
    result: set = set()
    low_precision = ("tensor(float16)", "tensor(bfloat16)", "tensor(float8e4m3fn)", "tensor(float8e4m3fnuz)",
                     "tensor(float8e5m2)", "tensor(float8e5m2fnuz)", "tensor(float4e2m1)")
    while heap:
        cur = heapq.heappop(heap)
        if cur in visited:
            continue
        visited.add(cur)
        node = nodes[cur]
        if cur not in tentative:
            cpu_out.update(o for o in node.output if o)
            for o in node.output:
                for c in consumers.get(o, ()):
                    heapq.heappush(heap, c)
            continue
        place = True
        k = decisions[cur].target_kernel
        for j, x in enumerate(node.input):
            if not x:
                continue
            if value_type(x) in low_precision:
                place = False
                break
            if (x in initializers and initializers[x] <= SMALL_INITIALIZER) or x in graph_inputs:
                continue
            if x not in cpu_out:
                place = False
                break
            if k is not None and j in k.cpu_inputs:
                place = False
                break
        if place:
            result.add(cur)
            cpu_out.update(o for o in node.output if o)
            for o in node.output:
                for c in consumers.get(o, ()):
                    heapq.heappush(heap, c)
    return result


def count_copies(nodes, providers, kernels_used, device: str, graph_inputs, implicit_inputs=()) -> int:
    """Memcpy nodes ORT inserts at one graph level (see module docstring)."""
    p_in, np_in, np_out, p_out = set(), set(), set(), set()
    for node, prov, k in zip(nodes, providers, kernels_used):
        if prov is None and k == "folded":
            continue
        if prov == device:
            cpu_i = k.cpu_inputs if k is not None else ()
            cpu_o = k.cpu_outputs if k is not None else ()
            for j, x in enumerate(node.input):
                if x:
                    (np_in if j in cpu_i else p_in).add(x)
            for j, o in enumerate(node.output):
                if o:
                    (np_out if j in cpu_o else p_out).add(o)
        else:
            np_in.update(x for x in node.input if x)
            np_out.update(o for o in node.output if o)
    n = sum(1 for g in graph_inputs if g in p_in and g in np_in)
    n += len(np_out & p_in)
    n += len(p_out & np_in)
    n += sum(1 for g in implicit_inputs if g in p_in and g in np_in)
    return n
