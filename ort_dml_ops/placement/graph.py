"""A small mutable graph, the shape ONNX Runtime's ``Graph`` gives a model once it is loaded.

Only what placement needs: nodes (name, op, domain, inputs, outputs, attributes, subgraphs) with
ORT's node indices, initializers (with values where they are small enough to matter), graph
inputs and outputs, and ORT's default topological order (``GraphViewer``: a reverse DFS from
the leaf nodes, inputs visited in node-index order; ``core/graph/graph_viewer.cc`` and
``Graph::ReverseDFSFrom`` in ``core/graph/graph.cc``), which decides which of two equal nodes
common-subexpression elimination keeps and in which order the CPU-preferred pass looks at nodes.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

import numpy as np
import onnx

#: Ops whose outputs are not a function of their inputs: ORT's optimizers neither fold nor merge
#: them (``IsOperationDeterministic``, ``core/optimizer/optimizer_utils.cc``; cse.py, folding.py).
NONDETERMINISTIC = frozenset(
    {
        "RandomUniform",
        "RandomNormal",
        "RandomUniformLike",
        "RandomNormalLike",
        "Multinomial",
        "Bernoulli",
    }
)


def since_version(node: Node, opsets: dict) -> int | None:
    """The since-version of the schema `node` resolves to under the model's opset imports (as
    ORT resolves it: targets/schemas.py), or None for an op no schema knows."""
    from ..targets.schemas import get_schema, norm_domain

    domain = norm_domain(node.domain)
    opset = opsets.get(domain, opsets.get(node.domain))
    schema = get_schema(node.op_type, domain, opset)
    return schema.since_version if schema is not None else None


@dataclass
class Initializer:
    name: str
    elem_type: int
    dims: tuple
    value: np.ndarray | None = None  # None: not read (large, or external data)
    # also a graph input: not a constant (ORT: an overridable initializer)
    overridable: bool = False

    @property
    def numel(self) -> int:
        n = 1
        for d in self.dims:
            n *= int(d)
        return n


@dataclass(eq=False)
class Node:
    index: int
    name: str
    op_type: str
    domain: str
    inputs: list
    outputs: list
    proto: (
        onnx.NodeProto
    )  # attributes (inputs/outputs of the proto are not kept in step)
    subgraphs: list = field(default_factory=list)  # [(attribute label, Graph)]
    origin: str = ""  # which ORT step added the node ("" for a node of the model)
    dead: bool = False  # removed from its graph
    # (proto, opset, its attributes as ORT holds them): cse.py's cache, valid while both are
    cse_attributes: tuple | None = field(default=None, repr=False)

    def to_proto(self) -> onnx.NodeProto:
        p = onnx.NodeProto()
        p.CopyFrom(self.proto)
        del p.input[:]
        del p.output[:]
        p.input.extend(self.inputs)
        p.output.extend(self.outputs)
        p.name = self.name
        return p

    # the NodeProto fields a capability decision reads (targets.target.NodeLike): the target
    # decides on the node itself, without a proto copy per node
    @property
    def input(self) -> list:
        return self.inputs

    @property
    def output(self) -> list:
        return self.outputs

    @property
    def attribute(self):
        return self.proto.attribute

    def attr(self, name, default=None):
        for a in self.proto.attribute:
            if a.name == name:
                v = onnx.helper.get_attribute_value(a)
                return v.decode() if isinstance(v, bytes) else v
        return default


class Graph:
    def __init__(
        self,
        nodes,
        initializers: dict,
        inputs: list,
        outputs: list,
        parent: Graph | None = None,
    ):
        self.nodes: list = list(nodes)
        self.initializers: dict = dict(initializers)
        self.inputs: list = list(inputs)  # graph inputs that are not initializers
        self.outputs: list = list(outputs)
        self.parent = parent
        self.next_index = max((n.index for n in self.nodes), default=-1) + 1
        self.removed: dict = {}  # node -> (ORT step, reason)
        self.model_order: list[
            str
        ] = []  # node names in the model's order (placement/load.py)
        # bumped on every edit: the topological order is cached per version
        self.version = 0
        self._topo: tuple[int, list] = (-1, [])
        self._producers: tuple = (-1, {}, False)
        self._consumers: tuple = (-1, {})
        self._positions: dict = {}
        # Graph::name_generator_ and the names it generated (GenerateNodeName/GenerateNodeArgName)
        self._name_counter = 0
        self._generated_nodes: set = set()
        self._generated_values: set = set()

    # -- lookups -------------------------------------------------------------------------------
    def outer_reads(self) -> list:
        """Values this (sub)graph reads from an outer scope: the implicit inputs of its node."""
        defined = set(self.inputs) | set(self.initializers)
        for n in self.nodes:
            defined.update(o for o in n.outputs if o)
        out: dict = {}
        for n in self.nodes:
            for x in list(n.inputs) + implicit_inputs(n):
                if x and x not in defined:
                    out[x] = None
        return list(out)

    def producers(self) -> dict:
        """value -> the node writing it (cached per graph version: treat as read-only)."""
        if self._producers[0] != self.version:
            out = {o: n for n in self.nodes for o in n.outputs if o}
            # each value written once (a valid graph): `remove` can keep the map current
            unique = len(out) == sum(1 for n in self.nodes for o in n.outputs if o)
            self._producers = (self.version, out, unique)
        return self._producers[1]

    def consumers(self) -> dict:
        """value -> the nodes reading it, implicit subgraph reads included (cached per graph
        version, as the rules ask for it node after node: treat as read-only). `remove` and
        `replace_uses` keep the map current in place, giving each changed entry a new list:
        `dict(graph.consumers())` is a snapshot that later edits leave alone."""
        if self._consumers[0] != self.version:
            out: dict = {}
            for n in self.nodes:
                ins = n.inputs
                # each value once per node (dict.fromkeys only when a value could repeat)
                for x in ins if len(ins) < 2 else dict.fromkeys(ins):
                    if x:
                        readers = out.get(x)
                        if readers is None:
                            out[x] = [n]
                        else:
                            readers.append(n)
                if n.subgraphs:
                    for x in implicit_inputs(n):
                        out.setdefault(x, []).append(n)
            self._consumers = (self.version, out)
        return self._consumers[1]

    def initializer(self, name: str, outer: bool = True):
        """Graph::GetInitializer(name, check_outer_scope)."""
        g: Graph | None = self
        while g is not None:
            if name in g.initializers:
                return g.initializers[name]
            g = g.parent if outer else None
        return None

    def reads(self, value: str) -> list:
        """(reader, input slot) per read of `value` by a node of this graph, in ORT's edge order
        (node index, then slot): the optimizers count and walk a node's output edges by it."""
        return sorted(
            (
                (c, i)
                for c in self.consumers().get(value, ())
                for i, x in enumerate(c.inputs)
                if x == value
            ),
            key=lambda e: (e[0].index, e[1]),
        )

    def int_values(self, name: str, constant: bool = True) -> list | None:
        """An int32 / int64 initializer's values (``optimizer_utils::AppendTensorFromInitializer``),
        None for another type, a value no initializer holds, or (`constant`) an overridable one."""
        init = self.initializer(name) if name else None
        if init is None or init.value is None or (constant and init.overridable):
            return None
        if init.elem_type not in (6, 7):
            return None
        return [int(v) for v in init.value.reshape(-1)]

    def is_constant(self, name: str) -> bool:
        """graph_utils::IsConstantInitializer: an initializer that no feed can override."""
        init = self.initializer(name)
        return init is not None and not init.overridable

    # -- names ORT generates (Graph::GenerateNodeName / GenerateNodeArgName, graph.cc) ------------
    def generate_node_name(self, base: str) -> str:
        """`base` if no live node and no earlier generated name has it, else `base_token_<n>` with
        the graph's one counter (shared with value names)."""

        def taken(name: str) -> bool:
            return name in self._generated_nodes or any(
                n.name == name for n in self.nodes
            )

        return self._generate(base, taken, self._generated_nodes)

    def generate_value_name(self, base: str) -> str:
        """`base` if no value of the graph (removed nodes' included) and no earlier generated
        name has it, else `base_token_<n>`. Each candidate is looked up by a scan, not a set of
        every name: the transpose optimizer asks after almost every edit (thousands of times on
        a Conv model), and a set rebuilt per call made inspect quadratic."""

        def taken(name: str) -> bool:
            return (
                name in self._generated_values
                or name in self.initializers
                or name in self.inputs
                or any(
                    name in n.inputs or name in n.outputs
                    for n in (*self.nodes, *self.removed)
                )
            )

        return self._generate(base, taken, self._generated_values)

    def _generate(self, base: str, taken, generated: set) -> str:
        name = base
        while taken(name):
            name = f"{base}_token_{self._name_counter}"
            self._name_counter += 1
        generated.add(name)
        return name

    # -- edits ---------------------------------------------------------------------------------
    def touch(self) -> None:
        self.version += 1

    def add(self, node: Node) -> None:
        cons = self._valid_consumers()
        self.nodes.append(node)
        self.touch()
        if (
            cons is not None
        ):  # the new node reads after every other: it goes last in each list
            ins = [x for x in node.inputs if x]
            for x in dict.fromkeys(ins):
                cons[x] = [*cons.get(x, ()), node]  # a new list: see consumers()
            for x in implicit_inputs(node):
                cons[x] = [*cons.get(x, ()), node]
            self._consumers = (self.version, cons)

    def set_input(self, node: Node, i: int, value: str) -> None:
        """`node` reads `value` at input `i` (the list padded with "" up to it); the consumers and
        producers maps stay current (the transpose optimizer rewires inputs after almost every
        lookup: rebuilding them per edit made inspect quadratic)."""
        cons = self._valid_consumers()
        version, prod, unique = self._producers
        prod_valid = version == self.version
        while len(node.inputs) <= i:
            node.inputs.append("")
        old = node.inputs[i]
        node.inputs[i] = value
        self.touch()
        if prod_valid:  # the outputs did not change
            self._producers = (self.version, prod, unique)
        if cons is None or node.subgraphs or old == value or node not in self.nodes:
            return  # the map is stale now: consumers() rebuilds it
        if old and old not in node.inputs:  # a new list: see consumers()
            readers = [m for m in cons.get(old, ()) if m is not node]
            if readers:
                cons[old] = readers
            else:
                cons.pop(old, None)
        if value and node not in cons.get(value, ()):
            readers = list(cons.get(value, ()))
            bisect.insort(readers, node, key=self._position)
            cons[value] = readers
        self._consumers = (self.version, cons)

    def remove(self, node: Node, step: str, reason: str) -> None:
        cons = self._valid_consumers()
        version, prod, unique = self._producers
        prod = prod if version == self.version and unique else None
        order = self._topo[1] if self._topo[0] == self.version else None
        # A node no node of this graph feeds (a constant-folded one) is visited by the reverse
        # DFS on its own, with nothing under it: the order of the others stays as it was.
        source = (
            prod is not None
            and not node.subgraphs
            and not any(x in prod for x in node.inputs if x)
        )
        self.nodes.remove(node)
        node.dead = True
        self.touch()
        self.removed[node] = (step, reason)
        # keep the maps current: the passes remove node after node
        if cons is not None:
            self._drop_consumer(cons, node)
        if prod is not None:
            for o in node.outputs:
                if o and prod.get(o) is node:
                    del prod[o]
            self._producers = (self.version, prod, True)
        if source and order is not None:
            # `topological` drops the dead node from the kept order
            self._topo = (self.version, order)

    def replace_uses(self, old: str, new: str) -> None:
        """Every read of `old` (subgraphs' outer reads included) reads `new` instead.

        Only the readers of `old` are visited, and the consumers map is kept up to date: a pass
        that bypasses node after node would otherwise rescan the graph per node (quadratic
        along a chain; measured in docs/performance.md)."""
        cons = self.consumers()
        readers = list(dict.fromkeys(cons.get(old, ())))
        self.touch()
        for n in readers:
            n.inputs = [new if x == old else x for x in n.inputs]
            for _, sg in n.subgraphs:
                sg.replace_outer_uses(old, new)
        self.outputs = [new if x == old else x for x in self.outputs]
        self._move_consumers(cons, old, new, readers)

    def _position(self, node: Node) -> int:
        """Where `node` stands in `nodes` relative to the others (removals keep the relative
        order, additions append: the map is rebuilt only when it meets a node it lacks)."""
        at = self._positions.get(node)
        if at is None:
            self._positions = {n: i for i, n in enumerate(self.nodes)}
            at = self._positions[node]
        return at

    def _valid_consumers(self) -> dict | None:
        return self._consumers[1] if self._consumers[0] == self.version else None

    def _drop_consumer(self, cons: dict, node: Node) -> None:
        """`node` left the graph: it reads nothing any more (the map stays current)."""
        read = [v for v in list(node.inputs) + implicit_inputs(node) if v]
        for x in dict.fromkeys(read):
            # a new list: see consumers()
            readers = [m for m in cons.get(x, ()) if m is not node]
            if readers:
                cons[x] = readers
            else:
                cons.pop(x, None)
        self._consumers = (self.version, cons)

    def _move_consumers(self, cons: dict, old: str, new: str, moved: list) -> None:
        """The `moved` nodes read `new` where they read `old`: each enters new's readers at its
        place in node order, once per way it reads it (as consumers() lists them)."""
        cons.pop(old, None)
        # a subgraph that defines `old` itself still reads the outer one
        for n in moved:
            for _ in range(int(old in n.inputs) + int(old in implicit_inputs(n))):
                cons.setdefault(old, []).append(n)
        leaving = set(moved)
        # a new list: see consumers()
        readers = [m for m in cons.get(new, ()) if m not in leaving]
        for n in moved:
            for _ in range(int(new in n.inputs) + int(new in implicit_inputs(n))):
                bisect.insort(readers, n, key=self._position)
        if readers:
            cons[new] = readers
        else:
            cons.pop(new, None)
        self._consumers = (self.version, cons)

    def replace_outer_uses(self, old: str, new: str) -> None:
        if (
            old in self.initializers
            or old in self.inputs
            or any(old in n.outputs for n in self.nodes)
        ):
            return  # shadowed in this subgraph
        self.touch()
        for n in self.nodes:
            n.inputs = [new if x == old else x for x in n.inputs]
            for _, sg in n.subgraphs:
                sg.replace_outer_uses(old, new)

    # -- ORT's topological order -----------------------------------------------------------------
    def topological(self) -> list:
        """GraphViewer's default order: ReverseDFSFrom(leaf nodes, leave=append, NodeCompare by index)."""
        if self._topo[0] == self.version:
            order = self._topo[1]
            if len(order) != len(
                self.nodes
            ):  # nodes removed since (remove keeps the order)
                order = [n for n in order if not n.dead]
                self._topo = (self.version, order)
            return list(order)
        prod = self.producers()
        cons = self.consumers()

        def input_nodes(n):
            """The nodes writing n's inputs (implicit ones included), once each, by index."""
            ins = n.inputs
            if len(ins) <= 2 and not n.subgraphs:  # most nodes: no dict, no sort
                p = prod.get(ins[0]) if ins else None
                q = prod.get(ins[1]) if len(ins) == 2 else None
                if p is None or p is q:
                    return () if q is None else (q,)
                if q is None:
                    return (p,)
                return (p, q) if p.index < q.index else (q, p)
            seen = {}
            for x in ins + implicit_inputs(n) if n.subgraphs else ins:
                p = prod.get(x)
                if p is not None:
                    seen[p.index] = p
            return [seen[k] for k in sorted(seen)]

        leaves = []
        for n in sorted(self.nodes, key=_by_index):
            for o in n.outputs:
                if o and cons.get(o):
                    break
            else:
                leaves.append(n)
        # a node on the stack is entered when popped; (node,) is its leave marker
        stack: list = leaves
        visited: set = set()
        order = []
        append, pop = stack.append, stack.pop
        while stack:
            n = pop()
            if n.__class__ is tuple:
                order.append(n[0])
                continue
            if n in visited:
                continue
            visited.add(n)
            append((n,))
            for m in input_nodes(n):
                if m not in visited:
                    append(m)
        self._topo = (self.version, order)
        return list(order)


def _by_index(node: Node) -> int:
    return node.index


def implicit_inputs(node: Node) -> list:
    """Node::ImplicitInputDefs: outer-scope values the node's subgraphs read."""
    out: dict = {}
    for _, sg in node.subgraphs:
        for x in sg.outer_reads():
            out[x] = None
    return list(out)
