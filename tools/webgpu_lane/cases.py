"""Record the WebGPU plugin EP's kernel coverage from the plugin itself, one single-op model at a time.

The plugin (onnxruntime-ep-webgpu) keeps its kernel registry inside its shared library:
``get_all_opkernel_def()`` lists only the EPs built into onnxruntime. So the table is measured:
for every op of ``OPS`` (the three families, every op their lowerings emit, and the common ops
of exported models), at each since-version the op has between opsets ``MIN_OPSET`` and
``MAX_OPSET``, for each element type its schema allows out of ``DTYPES``, one model holding that
single node is opened on the WebGPU EP with ``session.record_ep_graph_assignment_info`` = "1",
and ``get_provider_graph_assignment_info()`` says which EP took the node. Parameters a model
usually holds as constants (axes, shapes, pads, K, ...) are initializers, data inputs are graph
inputs (so constant folding keeps the node).

Which inputs the kernel reads from CPU memory (``InputMemoryType(OrtMemTypeCPU, i)`` in the
plugin's source) is measured too: for a node the EP took, each int64 parameter input is fed from
an int64 ``Mul`` (which runs on the CPU EP there) and the run's profile is searched for Memcpy
events (``*_kernel_time`` with ``op_name`` Memcpy*): none means the kernel takes that input in
CPU memory.

Used by ``tools/gen_kernel_tables.py webgpu`` (writes ``data/webgpu_0.4.0.json``) and by the
webgpu tests. Needs the WebGPU lane's environment (``make webgpu-lane``; ``. env.sh``).
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field

import numpy as np
import onnx
import onnx.defs
from onnx import TensorProto as T
from onnx import helper as h

WEBGPU = "WebGpuExecutionProvider"
MIN_OPSET = 11
MAX_OPSET = 26
DTYPES = (
    T.FLOAT,
    T.FLOAT16,
    T.DOUBLE,
    T.INT32,
    T.INT64,
    T.UINT32,
    T.UINT64,
    T.BOOL,
    T.INT8,
    T.UINT8,
)
D = [2, 3, 4]


@dataclass
class Input:
    name: str
    elem: int
    shape: list
    value: np.ndarray | None = None  # None: random values of `elem`
    init: bool = False  # an initializer (a constant parameter), else a graph input
    param: bool = False  # an int64 parameter whose memory side is measured
    symbolic: bool = (
        False  # declared with symbolic dims (so Shape/Size are not constant-folded)
    )


@dataclass
class OpCase:
    """One single-node model: `op` at ai.onnx `opset` with its inputs, `dtype` swept."""

    op: str
    opset: int
    dtype: int
    inputs: list
    attrs: dict = field(default_factory=dict)
    outputs: int = 1
    label: str = ""
    domain: str = ""

    @property
    def name(self) -> str:
        t = onnx.helper.tensor_dtype_to_np_dtype(self.dtype).name if self.dtype else "-"
        return f"{self.op}{'-' + self.label if self.label else ''}-{t}@{self.opset}"

    def model(self, feed_params_from_cpu: str | None = None) -> onnx.ModelProto:
        """The model; with `feed_params_from_cpu`, that int64 parameter comes from a CPU Mul."""
        inits, ins, nodes, names = [], [], [], []
        for i in self.inputs:
            if i.name == "":
                names.append("")
                continue
            v = _value(i)
            if i.name == feed_params_from_cpu:
                ins.append(
                    h.make_tensor_value_info(i.name + "_in", i.elem, list(v.shape))
                )
                inits.append(
                    onnx.numpy_helper.from_array(np.ones([], dtype=np.int64), "one_i64")
                )
                nodes.append(
                    h.make_node(
                        "Mul", [i.name + "_in", "one_i64"], [i.name], name="cpu_mul"
                    )
                )
            elif i.init:
                inits.append(onnx.numpy_helper.from_array(v, i.name))
            else:
                dims = [f"d{k}" for k in range(v.ndim)] if i.symbolic else list(v.shape)
                ins.append(h.make_tensor_value_info(i.name, i.elem, dims))
            names.append(i.name)
        outs = [f"y{k}" for k in range(self.outputs)]
        attrs = dict(self.attrs)
        if (
            "_branches" in attrs
        ):  # If: each branch returns an Identity of the outer value "x"
            t = attrs.pop("_branches")
            ins.append(h.make_tensor_value_info("x", t, D))
            for b in ("then_branch", "else_branch"):
                body = [
                    h.make_node("Identity", ["x"], [f"{b}_y"], name=f"{b}_identity")
                ]
                attrs[b] = h.make_graph(
                    body, b, [], [h.make_tensor_value_info(f"{b}_y", t, D)]
                )
        nodes.append(
            h.make_node(self.op, names, outs, name="op", domain=self.domain, **attrs)
        )
        g = h.make_graph(
            nodes, "single_op", ins, [onnx.ValueInfoProto(name=o) for o in outs], inits
        )
        m = h.make_model(g, opset_imports=[h.make_opsetid("", self.opset)])
        m.ir_version = 8 if self.opset < 21 else 10
        # the outputs' types, from ONNX shape inference (the model states them, as exporters do)
        inferred = {
            v.name: v.type
            for v in onnx.shape_inference.infer_shapes(m).graph.value_info
        }
        for o in m.graph.output:
            t = inferred.get(o.name)
            if (
                t is not None
                and t.tensor_type.elem_type
                and t.tensor_type.HasField("shape")
            ):
                o.type.CopyFrom(t)
            else:  # not inferred (MaxUnpool with an output_shape input): the swept type, first input's rank
                rank = len(self.inputs[0].shape)
                elem = (
                    t.tensor_type.elem_type
                    if t is not None and t.tensor_type.elem_type
                    else self.dtype
                )
                o.type.CopyFrom(
                    h.make_tensor_type_proto(elem, [f"o{k}" for k in range(rank)])
                )
        return m

    def feeds(self, feed_params_from_cpu: str | None = None) -> dict:
        out = {}
        for i in self.inputs:
            if i.name and (not i.init or i.name == feed_params_from_cpu):
                out[i.name + ("_in" if i.name == feed_params_from_cpu else "")] = (
                    _value(i)
                )
        return out

    def since_version(self) -> int:
        return onnx.defs.get_schema(self.op, self.opset, self.domain).since_version


def _value(i: Input) -> np.ndarray:
    if i.value is not None:
        return np.asarray(i.value, dtype=onnx.helper.tensor_dtype_to_np_dtype(i.elem))
    rng = np.random.default_rng(0)
    npd = onnx.helper.tensor_dtype_to_np_dtype(i.elem)
    if i.elem == T.BOOL:
        return rng.integers(0, 2, size=i.shape).astype(bool)
    return rng.integers(1, 5, size=i.shape).astype(npd)


def _i64(name, values, init=True, param=True):
    a = np.asarray(values, dtype=np.int64)
    return Input(name, T.INT64, list(a.shape), a, init=init, param=param)


def _x(t, shape=None, name="x"):
    return Input(name, t, list(shape or D))


def _scalar(name, t, v, init=True):
    return Input(
        name,
        t,
        [],
        np.asarray(v, dtype=onnx.helper.tensor_dtype_to_np_dtype(t)),
        init=init,
    )


UNARY = (
    "Neg",
    "Abs",
    "Relu",
    "LeakyRelu",
    "Elu",
    "HardSigmoid",
    "Gelu",
    "Sigmoid",
    "Sqrt",
    "Floor",
    "Ceil",
    "Exp",
    "Log",
    "Tanh",
    "Erf",
    "Reciprocal",
    "Not",
    "IsNaN",
    "IsInf",
    "Identity",
    "Sign",
    "Round",
    "Softmax",
    "Transpose",
    "NonZero",
    "Shape",
    "Size",
)
BINARY = (
    "Add",
    "Sub",
    "Mul",
    "Div",
    "Min",
    "Max",
    "Equal",
    "Less",
    "Greater",
    "LessOrEqual",
    "GreaterOrEqual",
    "And",
    "Or",
    "Xor",
    "Mod",
    "Pow",
    "MatMul",
)
SCATTER_REDUCTIONS = {
    11: ("none",),
    16: ("none", "add", "mul"),
    18: ("none", "add", "mul", "max", "min"),
}


def _variants(op: str, opset: int, t: int):
    """[(label, inputs, attrs, n_outputs)] for `op` at `opset` with swept element type `t`."""
    if op in ("Shape", "Size"):
        return [("", [Input("x", t, D, symbolic=True)], {}, 1)]
    if op in UNARY:
        attrs = {"perm": [0, 2, 1]} if op == "Transpose" else {}
        return [("", [_x(t)], attrs, 1)]
    if op in BINARY:
        b = _x(t, [4, 5], "b") if op == "MatMul" else _x(t, D, "b")
        return [
            (
                "",
                [_x(t, name="a"), b],
                {"fmod": 1}
                if op == "Mod" and t in (T.FLOAT, T.FLOAT16, T.DOUBLE)
                else {},
                1,
            )
        ]
    if op == "Where":
        return [("", [Input("c", T.BOOL, D), _x(t, name="a"), _x(t, name="b")], {}, 1)]
    if op == "Cast":  # every (from, to) pair of DTYPES: `t` is the source type
        return [(f"to-{_type_str(to)[7:-1]}", [_x(t)], {"to": to}, 1) for to in DTYPES]
    if op in ("CumSum", "CumProd"):  # the axis as int64 and as int32 (T2 allows both)
        axis32 = Input("axis", T.INT32, [], np.array(1), init=True)
        return [
            ("", [_x(t), _i64("axis", 1)], {}, 1),
            ("axis-int32", [_x(t), axis32], {}, 1),
        ]
    if op in ("ScatterElements", "ScatterND", "Scatter"):
        red = (
            [r for v, rs in SCATTER_REDUCTIONS.items() if v <= opset for r in rs][-5:]
            if op != "Scatter"
            else ["none"]
        )
        red = list(dict.fromkeys(red))
        if op == "ScatterND":
            ins = [
                _x(t, name="data"),
                Input("idx", T.INT64, [2, 1], np.array([[0], [1]])),
                _x(t, D, "upd"),
            ]
        else:
            idx = np.tile(np.arange(3).reshape(1, 3, 1), (2, 1, 4))
            ins = [_x(t, name="data"), Input("idx", T.INT64, D, idx), _x(t, D, "upd")]
        out = [(r, ins, {} if r == "none" else {"reduction": r}, 1) for r in red]
        if op == "ScatterElements":  # indices as int32 too (Tind allows both)
            ins32 = [ins[0], Input("idx", T.INT32, D, ins[1].value), ins[2]]
            out += [
                (f"{r}-idx-int32", ins32, {} if r == "none" else {"reduction": r}, 1)
                for r in red
            ]
        return out
    if op == "Split":
        if opset >= 13:
            return [("", [_x(t), _i64("split", [1, 2])], {"axis": 1}, 2)]
        return [("", [_x(t)], {"axis": 1, "split": [1, 2]}, 2)]
    if op == "Concat":
        return [("", [_x(t, name="a"), _x(t, name="b")], {"axis": 1}, 1)]
    if op == "Reshape":
        return [("", [_x(t), _i64("shape", [6, 4])], {}, 1)]
    if op == "Expand":
        return [("", [_x(t, [1, 3, 1]), _i64("shape", D)], {}, 1)]
    if op == "Tile":
        return [("", [_x(t), _i64("repeats", [1, 2, 1])], {}, 1)]
    if op == "Pad":
        return [
            (
                "",
                [_x(t), _i64("pads", [0, 1, 0, 0, 1, 0]), _scalar("value", t, 1)],
                {},
                1,
            )
        ]
    if op == "Slice":
        return [
            (
                "",
                [_x(t), _i64("starts", [0]), _i64("ends", [2]), _i64("axes", [1])],
                {},
                1,
            )
        ]
    if op in ("Gather", "GatherElements"):
        idx = (
            np.array([2, 0])
            if op == "Gather"
            else np.tile(np.array([2, 0, 1]).reshape(1, 3, 1), (2, 1, 4))
        )
        return [  # indices as int64 and as int32 (Tind allows both)
            (label, [_x(t), Input("idx", it, list(idx.shape), idx)], {"axis": 1}, 1)
            for label, it in (("", T.INT64), ("idx-int32", T.INT32))
        ]
    if op == "GatherND":
        return [
            ("", [_x(t), Input("idx", T.INT64, [2, 1], np.array([[1], [0]]))], {}, 1)
        ]
    if op == "TopK":
        return [("", [_x(t), _i64("k", [2])], {"axis": -1}, 2)]
    if op == "ArgMax":
        return [("", [_x(t)], {"axis": 1}, 1)]
    if op == "OneHot":
        return [
            (
                "",
                [
                    Input("idx", T.INT64, [3], np.array([0, 2, 4])),
                    _i64("depth", [5]),
                    Input("values", t, [2], np.array([0, 1]), init=True),
                ],
                {},
                1,
            )
        ]
    if op in ("ReduceMax", "ReduceMin", "ReduceSum", "ReduceMean"):
        as_input = opset >= (13 if op == "ReduceSum" else 18)
        if as_input:
            return [("", [_x(t), _i64("axes", [1])], {"keepdims": 1}, 1)]
        return [("", [_x(t)], {"axes": [1], "keepdims": 1}, 1)]
    if op == "Flatten":
        return [("", [_x(t, [2, 3, 4])], {"axis": 1}, 1)]
    if op in ("Unsqueeze", "Squeeze"):
        x = _x(t) if op == "Unsqueeze" else _x(t, [2, 1, 4])
        if opset >= 13:
            return [("", [x, _i64("axes", [1])], {}, 1)]
        return [("", [x], {"axes": [1]}, 1)]
    if op == "MaxUnpool":
        return [
            (
                "",
                [
                    _x(t, [1, 1, 2, 2]),
                    Input(
                        "i",
                        T.INT64,
                        [1, 1, 2, 2],
                        np.array([0, 3, 9, 14]).reshape(1, 1, 2, 2),
                    ),
                    _i64("output_shape", [1, 1, 4, 4]),
                ],
                {"kernel_shape": [2, 2], "strides": [2, 2]},
                1,
            )
        ]
    if op == "Range":
        return [
            (
                "",
                [
                    _scalar("start", t, 0, init=False),
                    _scalar("limit", t, 5, init=False),
                    _scalar("delta", t, 1, init=False),
                ],
                {},
                1,
            )
        ]
    if op == "ConstantOfShape":
        return [
            (
                "",
                [Input("shape", T.INT64, [2], np.array([2, 3]))],
                {"value": h.make_tensor("v", t, [1], [1])},
                1,
            )
        ]
    if op == "Clip":
        return [("", [_x(t), _scalar("lo", t, 1), _scalar("hi", t, 3)], {}, 1)]
    if op == "Gemm":
        return [("", [_x(t, [3, 4], "a"), _x(t, [4, 5], "b"), _x(t, [5], "c")], {}, 1)]
    if op == "LayerNormalization":
        return [("", [_x(t), _x(t, [4], "scale"), _x(t, [4], "bias")], {}, 1)]
    if op == "Trilu":
        return [("", [_x(t, [3, 4])], {}, 1)]
    if op == "Einsum":
        return [
            ("", [_x(t, [3, 4], "a"), _x(t, [4, 5], "b")], {"equation": "ij,jk->ik"}, 1)
        ]
    if op == "If":
        return [("", [Input("cond", T.BOOL, [], np.array(True))], {"_branches": t}, 1)]
    raise KeyError(op)


OPS = tuple(
    sorted(
        set(UNARY)
        | set(BINARY)
        | {
            "If",
            "Where",
            "Cast",
            "CumSum",
            "CumProd",
            "ScatterElements",
            "ScatterND",
            "Scatter",
            "Split",
            "Concat",
            "Reshape",
            "Expand",
            "Tile",
            "Pad",
            "Slice",
            "Gather",
            "GatherElements",
            "GatherND",
            "TopK",
            "ArgMax",
            "OneHot",
            "ReduceMax",
            "ReduceMin",
            "ReduceSum",
            "ReduceMean",
            "Unsqueeze",
            "Squeeze",
            "Flatten",
            "MaxUnpool",
            "Range",
            "ConstantOfShape",
            "Clip",
            "Gemm",
            "LayerNormalization",
            "Trilu",
            "Einsum",
        }
    )
)

#: the constraint each op's sweep varies (the schema's first one unless named here)
SWEPT = {
    "OneHot": "T3",
    "ConstantOfShape": "T2",
    "Cast": None,
    "Range": "T",
    "Where": "T",
    "If": "V",
}
#: CPU-side inputs not measurable by feeding an int64 (If's bool condition is read on the host, as
#: by every ORT If kernel: onnxruntime/core/providers/cpu/controlflow/if.cc)
KNOWN_CPU_INPUTS = {"If": [0]}


def since_versions(op: str, lo: int = MIN_OPSET, hi: int = MAX_OPSET) -> list[int]:
    """[(opset to write, since-version)]: each distinct since-version `op` has at opsets lo..hi."""
    out = {}
    for v in range(lo, hi + 1):
        try:
            s = onnx.defs.get_schema(op, v, "")
        except onnx.defs.SchemaError:
            continue
        if s.deprecated:
            continue
        out.setdefault(s.since_version, v)
    if op == "Scatter":
        out = {9: 10}  # deprecated at 11: only models importing opset 9 or 10 hold it
    return sorted(out.items())


def cases(ops=OPS, dtypes=DTYPES) -> list[OpCase]:
    out = []
    for op in ops:
        for _since, opset in since_versions(op):
            schema = onnx.defs.get_schema(op, opset, "")
            allowed = {
                c.type_param_str: set(c.allowed_type_strs)
                for c in schema.type_constraints
            }
            swept = SWEPT.get(
                op,
                schema.type_constraints[0].type_param_str
                if schema.type_constraints
                else None,
            )
            for t in dtypes:
                ts = _type_str(t)
                if swept is not None and ts not in allowed.get(swept, ()):
                    continue
                if op == "Cast" and ts not in allowed["T1"]:
                    continue
                for label, ins, attrs, n_out in _variants(op, opset, t):
                    out.append(OpCase(op, opset, t, ins, attrs, n_out, label))
    return out


# --------------------------------------------------------------------------------------
# running
# --------------------------------------------------------------------------------------
def placement(session) -> dict:
    """{node name: EP} from ORT's assignment record (record_ep_graph_assignment_info)."""
    return {
        n.name: sg.ep_name
        for sg in session.get_provider_graph_assignment_info()
        for n in sg.get_nodes()
    }


def open_session(model: onnx.ModelProto, profile: bool = False):
    import onnxruntime as ort

    from ..session import InferenceSession

    so = ort.SessionOptions()
    so.log_severity_level = 4
    so.add_session_config_entry("session.record_ep_graph_assignment_info", "1")
    if profile:
        so.enable_profiling = True
        so.profile_file_prefix = os.path.join(
            tempfile.gettempdir(), f"ort_dml_ops_webgpu_{os.getpid()}"
        )
    return InferenceSession(
        model, providers=["WebGpuExecutionProvider"], sess_options=so
    )


def memcpy_count(session) -> int:
    """Memcpy kernels in the profile of the runs so far (ends profiling; removes the file)."""
    path = session.end_profiling()
    try:
        with open(path) as f:
            events = json.load(f)
    finally:
        os.unlink(path)
    return sum(
        1
        for e in events
        if e.get("cat") == "Node"
        and e["name"].endswith("_kernel_time")
        and str(e.get("args", {}).get("op_name", "")).startswith("Memcpy")
    )


def record_case(case: OpCase) -> dict:
    """{"case", "op", "since", "opset", "dtype", "label", "ep" | "error", "cpu_inputs"}."""
    row = {
        "case": case.name,
        "op": case.op,
        "since": case.since_version(),
        "opset": case.opset,
        "dtype": case.dtype,
        "label": case.label,
        "attrs": {k: v for k, v in case.attrs.items() if isinstance(v, (int, str))},
    }
    model = case.model()
    try:
        onnx.checker.check_model(model, full_check=True)
    except Exception as exc:  # noqa: BLE001 - an invalid combination is not a kernel fact
        row["error"] = f"invalid model: {str(exc).splitlines()[0]}"
        return row
    try:
        sess = open_session(model)
    except Exception as exc:  # noqa: BLE001 - recorded, e.g. no kernel on any EP
        row["error"] = " ".join(str(exc).split())[:200]
        return row
    row["ep"] = placement(sess).get("op")
    row["bindings"] = _bindings(case)
    return row


def record_cpu_inputs(case: OpCase) -> list[int]:
    """Indices of the int64 parameter inputs the EP's kernel reads in CPU memory (see module doc)."""
    out = []
    for j, i in enumerate(case.inputs):
        if not i.param:
            continue
        model = case.model(feed_params_from_cpu=i.name)
        sess = open_session(model, profile=True)
        where = placement(sess)
        if where.get("op") != WEBGPU or where.get("cpu_mul") == WEBGPU:
            sess.end_profiling()
            continue
        sess.run(None, case.feeds(feed_params_from_cpu=i.name))
        if memcpy_count(sess) == 0:
            out.append(j)
    return out


def _bindings(case: OpCase) -> dict:
    """constraint name -> type string of the node's arguments (schema formal parameters)."""
    schema = onnx.defs.get_schema(case.op, case.opset, case.domain)
    constraints = {c.type_param_str for c in schema.type_constraints}
    out = {}
    for formal, i in zip(schema.inputs, case.inputs):
        if i.name and formal.type_str in constraints:
            out.setdefault(formal.type_str, _type_str(i.elem))
    if case.op == "Cast":
        out["T2"] = _type_str(case.attrs["to"])
    if case.op == "ConstantOfShape":
        out["T2"] = _type_str(case.dtype)
    if case.op == "If":
        out["V"] = _type_str(case.dtype)
    for formal in schema.outputs:
        if (
            formal.type_str in constraints
            and formal.type_str not in out
            and formal.type_str in ("T1", "T2", "T")
        ):
            # outputs bound to a constraint of their own (IsNaN's T2 bool, Shape's T1 int64, ArgMax...)
            fixed = next(
                c
                for c in schema.type_constraints
                if c.type_param_str == formal.type_str
            ).allowed_type_strs
            if len(fixed) == 1:
                out[formal.type_str] = fixed[0]
    return out


def _type_str(elem: int) -> str:
    return {
        T.FLOAT: "tensor(float)",
        T.DOUBLE: "tensor(double)",
        T.FLOAT16: "tensor(float16)",
        T.BOOL: "tensor(bool)",
    }.get(elem, f"tensor({onnx.helper.tensor_dtype_to_np_dtype(elem).name})")
