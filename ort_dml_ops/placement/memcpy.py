"""Copy nodes ONNX Runtime inserts between CPU and device (``MemcpyTransformer``).

Mirrors ``core/optimizer/transformer_memcpy.cc`` ``TransformerMemcpyImpl::ModifyGraph``, per
graph level, after partitioning:

* a device node's input is read from CPU memory when its kernel declares it so
  (``IsInputOnCpu``), else from the device; its outputs likewise (``IsOutputOnCpu``); a CPU
  node reads and writes CPU memory. Implicit inputs (read inside subgraphs) do not count.
* one ``MemcpyFromHost`` per value written on the CPU and read on the device, one
  ``MemcpyToHost`` per value written on the device and read on the CPU;
* a graph input, or a subgraph's outer-scope value, needs a copy node only when read on both
  sides (otherwise the session copies the feed); initializers never need one (ORT duplicates an
  initializer read on both sides); graph outputs never (the session copies fetches).

ORT names the nodes ``Memcpy``, ``Memcpy_token_<n>`` (``Graph::GenerateNodeName``).
"""

from __future__ import annotations

from dataclasses import dataclass

from .graph import Graph


@dataclass(frozen=True)
class Copy:
    op_type: str  # MemcpyFromHost | MemcpyToHost
    value: str


def copies(graph: Graph, provider_of, kernel_of, cpu: str, outer_implicit=()) -> list:
    """The copies for one graph level. `provider_of(node)`, `kernel_of(node)` (the kernel it runs)."""
    cpu_in: set[str] = set()
    cpu_out: set[str] = set()
    dev_in: set[str] = set()
    dev_out: set[str] = set()
    for node in graph.nodes:
        prov = provider_of(node)
        if prov is None:
            continue
        if prov != cpu:
            k = kernel_of(node)
            ci = k.cpu_inputs if k is not None else ()
            co = k.cpu_outputs if k is not None else ()
            for j, x in enumerate(node.inputs):
                if x:
                    (cpu_in if j in ci else dev_in).add(x)
            for j, o in enumerate(node.outputs):
                if o:
                    (cpu_out if j in co else dev_out).add(o)
        else:
            cpu_in.update(x for x in node.inputs if x)
            cpu_out.update(o for o in node.outputs if o)
    out = [
        Copy("MemcpyFromHost", x) for x in graph.inputs if x in dev_in and x in cpu_in
    ]
    out += [Copy("MemcpyFromHost", x) for x in sorted(cpu_out & dev_in)]
    out += [Copy("MemcpyToHost", x) for x in sorted(dev_out & cpu_in)]
    out += [
        Copy("MemcpyFromHost", x) for x in outer_implicit if x in dev_in and x in cpu_in
    ]
    return out
