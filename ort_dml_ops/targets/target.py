"""Per-node placement: which execution provider ONNX Runtime gives one node, and why.

The decision follows ONNX Runtime's partitioning (``core/framework/graph_partitioner.cc``): the
target EP is asked first (its ``GetCapability``), the CPU EP takes what is left, a float16 node the
CPU EP has only a float kernel for runs there through inserted casts
(``core/optimizer/insert_cast_transformer.cc``), and a node no EP has a kernel for fails session
creation ("Could not find an implementation for ...").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

import onnx

from .._domain import DOMAIN
from . import dml_rules, kernels, schemas
from .value_types import opsets_of, type_string

CPU = "CPUExecutionProvider"
DML = "DmlExecutionProvider"
CUDA = "CUDAExecutionProvider"
WEBGPU = "WebGpuExecutionProvider"

#: Domains whose ops are Python custom ops (onnxruntime-extensions): always on the CPU EP.
CUSTOM_OP_DOMAINS = frozenset({DOMAIN, "ai.onnx.contrib"})


class NodeLike(Protocol):
    """What a decision reads of a node: an ``onnx.NodeProto``, or a node that exposes the same
    fields (``placement.graph.Node``, so that placement need not copy every node into a proto)."""

    @property
    def op_type(self) -> str: ...
    @property
    def domain(self) -> str: ...
    @property
    def input(self) -> Sequence[str]: ...
    @property
    def output(self) -> Sequence[str]: ...
    @property
    def attribute(self) -> Sequence[onnx.AttributeProto]: ...


@dataclass(frozen=True)
class Decision:
    """Where one node runs. `provider` is None when no EP has a kernel (session creation fails)."""

    provider: str | None
    reason: str
    since_version: int | None
    kernel: kernels.Kernel | None = (
        None  # the kernel that runs it (None: custom op / none)
    )
    on_target: bool = False
    via_casts: bool = (
        False  # float16 node run by the CPU EP's float kernel through inserted Casts
    )
    target_lookup: bool = (
        False  # the target EP's LookUpKernel found a kernel (fallback_cpu_capability)
    )
    target_kernel: kernels.Kernel | None = None
    # Placed, but the kernel refuses these inputs when it runs (the session opens, run() fails).
    fails_at_run: str | None = None

    def __iter__(
        self,
    ):  # `provider, reason = target.placement(...)` also works on a Decision
        return iter((self.provider, self.reason))


#: the WebGPU plugin's TopK (webgpu/math/top_k.cc): rows padded to a power of two with ∓max at
#: index −1, the padding first among equal keys (pinned in tests/webgpu/test_scatter_clean_webgpu.py)
WEBGPU_TOPK_NOTE = (
    "the plugin's TopK returns index -1 for keys at or beyond -max (largest) / +max "
    "(smallest), e.g. logits masked with -inf, where a row's length is not a power of two"
)

#: what ORT does to a node whose recorded kernel is NHWC (the plugin's Conv, pools, ...)
NHWC_NOTE = (
    "ORT's layout transformation runs it in NHWC (domain com.ms.internal.nhwc, renamed "
    "<name>_token_<n>) between Transposes it adds (layout_transformation.cc "
    "TransformLayoutForEP, then the transpose optimizer; listed as ORT leaves them)"
)


class Target:
    """A capability model of one ONNX Runtime execution provider (with the CPU EP behind it).

    Its settings are fixed at construction: decisions are remembered per node signature
    (``_signature``: op, domain, opset, argument types, attributes), as a large model repeats a
    few kinds of node many times (a 50k-node chain has a handful of signatures).
    """

    def __init__(
        self,
        name: str,
        provider: str,
        table: kernels.KernelTable | None,
        cpu_table: kernels.KernelTable,
        *,
        device_unsupported=frozenset(),
        max_io_width: int | None = None,
        cost_facts: Mapping | None = None,
        cpu_preferred: bool = True,
        reshape_shapes_by_dim_names: bool = True,
        reshape_fusion_versions: frozenset[int] = frozenset({5, 13, 14, 19, 21}),
    ):
        self.name = name
        #: does ReshapeFusion take Shape(v)[i] for dim i of the Reshape's data where v's dim i
        #: equals the data's by symbolic name? ORT 1.31 does; onnxruntime-directml 1.24.4 compares
        #: every dim by value only (measured: tests/dml/test_placement_fusions_dml.py,
        #: placement/reshape_shape_fusion.py)
        self.reshape_shapes_by_dim_names = reshape_shapes_by_dim_names
        #: the Reshape since-versions ReshapeFusion takes (reshape_fusion.cc's version list): ORT
        #: 1.31 takes every one; onnxruntime-directml 1.24.4 none from 19 on, so neither a
        #: Concat-built shape nor a chain of views is fused in a model importing opset 19 or
        #: later (measured: tests/test_placement_fusions.py's `*_opset19` / `*_opset21` cases
        #: on the lane)
        self.reshape_fusion_versions = reshape_fusion_versions
        #: does the EP's GetCapability move shape-computing nodes to the CPU (GetCpuPreferredNodes,
        #: fallback_cpu_capability.cc)? The in-tree GPU EPs do; the WebGPU *plugin* does not (measured)
        self.cpu_preferred = cpu_preferred
        #: most inputs/outputs one node may bind on the device (None: no limit modelled); WebGPU
        #: binds each tensor as a storage buffer, 8 per shader guaranteed by the WebGPU spec
        self.max_io_width = max_io_width
        #: measured costs the converter's `auto` weighs (see targets/__init__.py)
        self.cost_facts = dict(cost_facts or {})
        self.provider = provider
        self.table = table  # None for target "cpu"
        self.cpu_table = cpu_table
        self.device_unsupported = frozenset(device_unsupported)
        self._decisions: dict = {}  # _signature -> Decision

    def __repr__(self):
        t = f"{self.table.build}" if self.table else "-"
        return f"<Target {self.name}: {self.provider} [{t}] + CPU [{self.cpu_table.build}]>"

    @property
    def is_gpu(self) -> bool:
        return self.provider != CPU

    # -- public API ------------------------------------------------------------------------
    def placement(
        self, node: NodeLike, opset, value_types: Mapping | None = None
    ) -> tuple:
        """(provider, reason) for `node` under the model's opset imports `opset`.

        `value_types`: value name -> type ('tensor(float)', TypeProto or elem-type int) for the
        node's inputs/outputs; unknown names skip the type checks that need them.
        """
        d = self.explain(node, opset, value_types)
        return d.provider, d.reason

    def has_native_kernel(self, node, opset, value_types=None) -> bool:
        """True when the target EP itself takes the node (kernel + types + support queries)."""
        return self.explain(node, opset, value_types).on_target

    def explain(
        self, node: NodeLike, opset, value_types: Mapping | None = None
    ) -> Decision:
        opsets = (
            opset
            if isinstance(opset, dict)
            and all(isinstance(k, str) for k in opset)
            and "" in opset
            else opsets_of(opset)
        )
        get = (value_types or {}).get

        def value_type(name):
            return _type_text(get(name))

        key = _signature(node, opsets, get)
        if key is not None:
            known = self._decisions.get(key)
            if known is not None:
                return known
        decision, names_a_value = self._decide(node, opsets, value_type)
        if key is not None and not names_a_value:
            self._decisions[key] = decision
        return decision

    # -- rules -----------------------------------------------------------------------------
    def _decide(self, node, opsets, value_type) -> tuple[Decision, bool]:
        """The decision, and whether its reason names one of the node's values (then it holds
        for this node only and is not remembered under its signature)."""
        named = False
        domain = schemas.norm_domain(node.domain)
        op = node.op_type
        if domain in CUSTOM_OP_DOMAINS:
            return Decision(
                CPU,
                f"custom op (domain '{domain}'): Python custom ops run on the CPU EP",
                opsets.get(domain),
                None,
            ), named
        known = (
            self.table is not None and domain in self.table.domains
        ) or domain in self.cpu_table.domains
        if not known:
            return Decision(
                CPU,
                f"custom op (domain '{domain}'): no EP registers kernels for this domain; "
                "a registered custom op runs on the CPU EP",
                opsets.get(domain),
                None,
            ), named
        opset = opsets.get(domain)
        if opset is None:
            return Decision(
                None,
                f"no kernel: the model imports no opset for domain '{domain or 'ai.onnx'}'",
                None,
            ), named
        schema = schemas.get_schema(op, domain, opset)
        if schema is None:
            return Decision(
                None,
                f"no kernel: no schema for {op} in {domain or 'ai.onnx'} opset {opset}",
                None,
            ), named
        since = schema.since_version
        bind = schemas.bindings(op, domain, opset)
        resolve = schemas.type_resolver(node.input, node.output, bind, value_type)
        for cname, allowed in schemas.allowed_types(op, domain, opset).items():
            t = resolve(cname)
            if t is not None and allowed and t not in allowed:
                return Decision(
                    None,
                    f"invalid model: {op}-{since} does not allow {cname}={t} "
                    "(ONNX Runtime rejects the model at load)",
                    since,
                ), named

        why_off = None
        tk = None
        lookup = False
        if self.table is not None:
            tk, miss = self.table.find(op, domain, since, resolve)
            lookup = tk is not None
            if tk is None:
                why_off = self._miss_text(self.table, op, domain, since, miss)
            elif self.provider == DML:
                why_off = dml_rules.support_query(tk.query, node)
                if why_off is not None:
                    why_off = f"support query: {why_off}"
                else:
                    why_off = dml_rules.unsupported_data_type(
                        node, tk, value_type, self.device_unsupported
                    )
                    named = why_off is not None
            elif "attrs_on_target" in tk.extra:
                why_off = _recorded_attrs_check(node, tk)
            if why_off is None:
                fails = (
                    _dml_kernel_creation_failure(node)
                    if self.provider == DML
                    else _webgpu_run_failure(node, resolve)
                    if self.provider == WEBGPU
                    else None
                )
                reason = f"{_short(self.provider)} kernel {op}({tk.version_text()})" + (
                    f"; {fails}" if fails else ""
                )
                if tk.extra.get("layout") == "NHWC":
                    reason += f"; {NHWC_NOTE}"
                if self.provider == WEBGPU and op == "TopK":
                    reason += f"; {WEBGPU_TOPK_NOTE}"
                return Decision(
                    self.provider,
                    reason,
                    since,
                    tk,
                    on_target=True,
                    target_lookup=True,
                    target_kernel=tk,
                    fails_at_run=fails,
                ), named
        ck, miss = self.cpu_table.find(op, domain, since, resolve)
        if ck is not None:
            reason = why_off or f"CPU kernel {op}({ck.version_text()})"
            refusal = _cpu_run_refusal(node, op, resolve)
            if refusal:
                reason = f"{reason}; {refusal}"
            return Decision(
                CPU,
                reason,
                since,
                ck,
                on_target=self.table is None,
                target_lookup=lookup,
                target_kernel=tk,
                fails_at_run=refusal,
            ), named
        # insert_cast_transformer.cc: float16 args of a node without a float16 kernel are cast to float
        if self._has_fp16(node, value_type):

            def as_float(name, _r=resolve):
                t = _r(name)
                return "tensor(float)" if t == "tensor(float16)" else t

            ck2, _ = self.cpu_table.find(op, domain, since, as_float)
            if ck2 is not None:
                pre = f"{why_off}; " if why_off else ""
                return Decision(
                    CPU,
                    f"{pre}CPU EP runs it as float through inserted float16<->float Casts",
                    since,
                    ck2,
                    on_target=self.table is None,
                    via_casts=True,
                    target_lookup=lookup,
                    target_kernel=tk,
                ), named
        cpu_why = self._miss_text(self.cpu_table, op, domain, since, miss)
        pre = f"{why_off}; " if why_off else ""
        return Decision(
            None,
            f"no kernel: {pre}{cpu_why} (session creation fails)",
            since,
            None,
            target_lookup=lookup,
            target_kernel=tk,
        ), named

    @staticmethod
    def _has_fp16(node, value_type) -> bool:
        return any(
            value_type(n) == "tensor(float16)"
            for n in list(node.input) + list(node.output)
            if n
        )

    @staticmethod
    def _miss_text(table, op, domain, since, miss) -> str:
        who = _short(table.provider)
        name = f"{op}" if not domain else f"{domain}::{op}"
        if miss == "no_op":
            return f"{who} has no kernel for {name}"
        if miss == "no_version":
            regs = ", ".join(
                k.version_text()
                for k in sorted(table.kernels(op, domain), key=lambda k: k.since)
            )
            return (
                f"no {who} kernel for {name} at since-version {since} (registered: {regs}; "
                "a kernel without end version matches only its own since-version)"
            )
        k, (cname, t) = miss
        # a recorded table (webgpu) holds one row per type binding: name every type taken
        types = set().union(
            *(
                (kk.types or {}).get(cname, ())
                for kk in table.kernels(op, domain)
                if kk.matches_version(since)
            )
        )
        allowed = ", ".join(
            sorted(x[7:-1] if x.startswith("tensor(") else x for x in types)
        )
        return f"type not supported: {who} {name}({k.version_text()}) takes {cname} in {{{allowed}}}, node has {t}"


_SUBGRAPH_ATTRIBUTES = (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)
#: an omitted optional argument (name ""), told apart from a value of unknown type (None)
_ABSENT = 0


def _signature(node: NodeLike, opsets: dict, get) -> tuple | None:
    """Everything ``Target._decide`` reads of `node`, as a hashable key; None when the node is
    not to be remembered (a subgraph attribute: large to key and rare). `get`: value name ->
    type as the caller gave it.

    ``_decide`` reads: op_type and the normalized domain; the opset import of that domain
    (``opsets.get(domain)``, nothing else of `opsets`); the type of each input and output by
    position, an omitted one told apart (schema binding, kernel type match, DML data types,
    float16 casts; the input count for the support queries); attribute values (support
    queries, recorded attribute combinations, Reshape allowzero, ScatterElements reduction).
    Value *names* enter only the DML data-type reason, which ``_decide`` flags so that it is
    not remembered. Attributes are keyed by their serialized bytes: equal bytes are equal
    values (different bytes for equal values only cost a second decision)."""
    attributes = []
    for a in node.attribute:
        if a.type in _SUBGRAPH_ATTRIBUTES:
            return None
        attributes.append(a.SerializeToString())
    domain = node.domain
    if domain in schemas.ONNX_DOMAINS:
        domain = ""
    try:
        ins = _argument_types(node.input, get)
        outs = _argument_types(node.output, get)
    except TypeError:  # a type type_string cannot read: _decide raises when it needs it
        return None
    return (node.op_type, domain, opsets.get(domain), ins, outs, tuple(attributes))


def _argument_types(names, get) -> tuple:
    """Each argument's type string as ``_decide`` sees it, ``_ABSENT`` for an omitted one."""
    out: list[str | int | None] = []
    for x in names:
        if not x:
            out.append(_ABSENT)
            continue
        out.append(_type_text(get(x)))
    return tuple(out)


def _type_text(t):
    """A value type as the caller gave it ('tensor(float)', TypeProto or elem-type int) as a
    type string (None: unknown); a string is taken as it is (the common case, no call)."""
    return t if t is None or t.__class__ is str else type_string(t)


def _short(provider: str) -> str:
    return {DML: "DML", CUDA: "CUDA", CPU: "CPU", WEBGPU: "WebGPU"}.get(
        provider, provider
    )


def _recorded_attrs_check(node, k) -> str | None:
    """A recorded kernel the EP took only with some attribute values (tools/webgpu_lane/record.py):
    the node's values of the recorded attributes must be one of the combinations taken."""
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
    attrs = {n: v.decode() if isinstance(v, bytes) else v for n, v in attrs.items()}
    names = {n for allowed in k.extra["attrs_on_target"] for n in allowed} | set(
        _ATTR_DEFAULTS
    )
    have = {n: attrs.get(n, _ATTR_DEFAULTS.get(n)) for n in names}
    for allowed in k.extra["attrs_on_target"]:
        if all(have[n] == allowed.get(n, _ATTR_DEFAULTS.get(n)) for n in names):
            return None
    return f"{_short(k.op)}: the EP was recorded taking it only with {k.extra['attrs_on_target']}"


_ATTR_DEFAULTS = {"reduction": "none"}


def _dml_kernel_creation_failure(node) -> str | None:
    """Nodes the DML EP claims but cannot create a kernel for (measured on the real EP, lane).

    Reshape with allowzero=1: the EP's Reshape (DmlOperatorCopy.cpp) fails kernel creation in
    MLOperatorAuthorImpl.cpp — at session creation for a static input shape (80070057), at the
    first run for a symbolic one; torch.onnx's dynamo exporter writes every view this way.
    `convert --target dml` drops the attribute (converter/rules/reshape_allowzero.py)."""
    if node.op_type == "Reshape" and node.domain in ("", "ai.onnx"):
        for a in node.attribute:
            if a.name == "allowzero" and a.i == 1:
                return (
                    "the DML EP fails to create this kernel (Reshape allowzero=1): the session or its "
                    "first run fails; convert --target dml drops the attribute"
                )
    return None


def _webgpu_run_failure(node, resolve) -> str | None:
    """Nodes the WebGPU plugin takes but fails to run (measured on the plugin, lane).

    ScatterND with a reduction on float16: the plugin registers ScatterND for float16 and takes
    the node, but its shader reduces only 32-bit types (f32, i32, u32) and throws "Reduction is
    not supported for data type" at the first run (onnxruntime/core/providers/webgpu/tensor/
    scatter_nd.cc, ScatterNDProgram::GenerateShaderCode; onnxruntime-ep-webgpu 0.4.0). Its
    ScatterElements reduces float16 (u32 atomics holding two halves) and runs."""
    if node.op_type != "ScatterND" or node.domain not in ("", "ai.onnx"):
        return None
    reduction = dml_rules.attr(node, "reduction", "none")
    if reduction != "none" and resolve("T") == "tensor(float16)":
        return (
            f"its float16 ScatterND has no reduction '{reduction}': the first run fails"
        )
    return None


def _cpu_run_refusal(node, op, resolve) -> str | None:
    """The CPU EP refuses float16 data at run time ("MLFloat16 data type is not supported with
    … when reduction is 'add'"): ScatterElements with reduction add / mul (scatter_elements.cc;
    onnxruntime 1.31.1 also crashes on it from about 1e6 elements), ScatterND with any
    reduction (scatter_nd.cc). Measured with onnxruntime 1.31.1."""
    refused = {
        "ScatterElements": ("add", "mul"),
        "ScatterND": ("add", "mul", "max", "min"),
    }
    reduction = dml_rules.attr(node, "reduction", "none")
    if reduction in refused.get(op, ()) and resolve("T") == "tensor(float16)":
        return (
            f"the CPU kernel refuses float16 with reduction '{reduction}' when it runs"
        )
    return None
