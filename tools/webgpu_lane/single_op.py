"""One single-node model with its inputs: the unit the WebGPU kernel record is made of.

`OpCase(op, opset, dtype, inputs, attrs, n_out, label)` builds the model (`model()`) and its feeds
(`feeds()`); `Input` is one of its inputs (a constant initializer or a graph input; an int64
parameter whose memory side is measured). The helpers `i64_input`, `data_input`, `scalar_input` spell the usual
inputs for variants.py. See cases.py for what is recorded and why.
"""

from __future__ import annotations

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
        imports = [h.make_opsetid("", self.opset)]
        if self.domain:  # a contrib op (com.microsoft): its domain at version 1
            imports.append(h.make_opsetid(self.domain, 1))
        m = h.make_model(g, opset_imports=imports)
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
        return self.schema().since_version

    def schema(self):
        """The op's schema: onnx's, or ORT's for a contrib op (onnx knows no com.microsoft op)."""
        from ort_dml_ops.targets import schemas

        return schemas.get_schema(
            self.op, self.domain, 1 if self.domain else self.opset
        )


def _value(i: Input) -> np.ndarray:
    if i.value is not None:
        return np.asarray(i.value, dtype=onnx.helper.tensor_dtype_to_np_dtype(i.elem))
    rng = np.random.default_rng(0)
    npd = onnx.helper.tensor_dtype_to_np_dtype(i.elem)
    if i.elem == T.BOOL:
        return rng.integers(0, 2, size=i.shape).astype(bool)
    return rng.integers(1, 5, size=i.shape).astype(npd)


def i64_input(name, values, init=True, param=True):
    a = np.asarray(values, dtype=np.int64)
    return Input(name, T.INT64, list(a.shape), a, init=init, param=param)


def data_input(t, shape=None, name="x"):
    return Input(name, t, list(shape or D))


def scalar_input(name, t, v, init=True):
    return Input(
        name,
        t,
        [],
        np.asarray(v, dtype=onnx.helper.tensor_dtype_to_np_dtype(t)),
        init=init,
    )


def type_str(elem: int) -> str:
    names: dict[int, str] = {
        T.FLOAT: "tensor(float)",
        T.DOUBLE: "tensor(double)",
        T.FLOAT16: "tensor(float16)",
        T.BOOL: "tensor(bool)",
    }
    return names.get(elem, f"tensor({onnx.helper.tensor_dtype_to_np_dtype(elem).name})")
