"""GraphBuilder: author models that use cumsum / cumprod / scatter_elements in a few lines.

    b = GraphBuilder(opset=17)
    x = b.input("x", "float32", ["N", 128])
    y = b.cumprod(x, axis=1, exclusive=True)
    model = b.build(outputs={"y": y})

Below opset 26 `cumprod` writes the project's DOMAIN::CumProd; at 26 and above, ONNX
CumProd-26. Every other ONNX op is `b.op(op_type, *inputs, **attrs)`. The model is checked
with `onnx.checker.check_model(full_check=True)` and written with a loadable IR version.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper

from ._domain import DOMAIN, DOMAIN_VERSION
from .domain_schemas import registered
from .modelio import ir_version_for

#: First ONNX opset with CumProd.
ONNX_CUMPROD_OPSET = 26


@dataclass(frozen=True)
class Value:
    """A named value in the graph being built."""

    name: str


class GraphBuilder:
    def __init__(self, opset: int = 17, name: str = "graph"):
        self.opset = opset
        self.name = name
        self._nodes: list[onnx.NodeProto] = []
        self._inputs: list[onnx.ValueInfoProto] = []
        self._initializers: list[onnx.TensorProto] = []
        self._names: set[str] = set()
        self._uses_domain = False

    # -- values -------------------------------------------------------------------------
    def input(self, name: str, dtype, shape) -> Value:
        elem = helper.np_dtype_to_tensor_dtype(_np_dtype(dtype))
        self._inputs.append(
            helper.make_tensor_value_info(self._claim(name), elem, list(shape))
        )
        return Value(name)

    def constant(self, value, name: str | None = None) -> Value:
        array = np.asarray(value)
        tensor = numpy_helper.from_array(
            array, self._claim(name) if name else self._fresh("const")
        )
        self._initializers.append(tensor)
        return Value(tensor.name)

    # -- ops ------------------------------------------------------------------------------
    def op(
        self,
        op_type: str,
        *inputs,
        domain: str = "",
        outputs: int = 1,
        name: str | None = None,
        **attrs,
    ):
        """Any ONNX op. Returns one Value, or a tuple when `outputs` > 1. None skips an input."""
        in_names = ["" if v is None else self._as_value(v).name for v in inputs]
        out_names = [self._fresh(op_type.lower()) for _ in range(outputs)]
        node_name = self._claim(name) if name else self._fresh(f"{op_type}_node")
        self._nodes.append(
            helper.make_node(
                op_type, in_names, out_names, name=node_name, domain=domain, **attrs
            )
        )
        if domain == DOMAIN:
            self._uses_domain = True
        values = tuple(Value(n) for n in out_names)
        return values[0] if outputs == 1 else values

    def cumsum(self, x, axis, exclusive: bool = False, reverse: bool = False):
        return self.op(
            "CumSum",
            x,
            self._axis(axis),
            exclusive=int(exclusive),
            reverse=int(reverse),
        )

    def cumprod(self, x, axis, exclusive: bool = False, reverse: bool = False):
        domain = "" if self.opset >= ONNX_CUMPROD_OPSET else DOMAIN
        return self.op(
            "CumProd",
            x,
            self._axis(axis),
            domain=domain,
            exclusive=int(exclusive),
            reverse=int(reverse),
        )

    def scatter_elements(
        self, data, indices, updates, axis: int = 0, reduction: str = "none"
    ):
        attrs: dict[str, Any] = {"axis": axis}
        if reduction != "none":
            if self.opset < 16:
                raise ValueError(
                    f"ScatterElements reduction {reduction!r} needs opset >= 16 (builder opset {self.opset})"
                )
            attrs["reduction"] = reduction
        return self.op("ScatterElements", data, indices, updates, **attrs)

    # -- result ---------------------------------------------------------------------------
    def build(self, outputs: dict[str, Value]) -> onnx.ModelProto:
        """The model, with graph outputs renamed as given; checked by onnx's full checker."""
        nodes = list(self._nodes)
        graph_outputs = []
        for out_name, value in outputs.items():
            value = self._as_value(value)
            if out_name != value.name:
                nodes.append(
                    helper.make_node(
                        "Identity",
                        [value.name],
                        [self._claim(out_name)],
                        name=self._fresh("output"),
                    )
                )
            graph_outputs.append(helper.make_empty_tensor_value_info(out_name))
        graph = helper.make_graph(
            nodes, self.name, self._inputs, graph_outputs, self._initializers
        )
        imports = [helper.make_opsetid("", self.opset)]
        if self._uses_domain:
            imports.append(helper.make_opsetid(DOMAIN, DOMAIN_VERSION))
        model = helper.make_model(
            graph, opset_imports=imports, producer_name="ort-dml-ops"
        )
        model.ir_version = ir_version_for(model)
        # Fill in output types/shapes from inference, so the model is complete for every tool.
        with registered():
            inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True)
            known = {
                vi.name: vi
                for vi in list(inferred.graph.value_info) + list(inferred.graph.output)
            }
            for out in model.graph.output:
                if out.name in known and known[out.name].type.HasField("tensor_type"):
                    out.type.CopyFrom(known[out.name].type)
            onnx.checker.check_model(model, full_check=True)
        return model

    # -- internals ------------------------------------------------------------------------
    def _axis(self, axis) -> Value:
        return (
            axis if isinstance(axis, Value) else self.constant(np.array(axis, np.int64))
        )

    def _as_value(self, v) -> Value:
        if isinstance(v, Value):
            return v
        if isinstance(v, str):
            return Value(v)
        return self.constant(v)

    def _claim(self, name: str) -> str:
        if name in self._names:
            raise ValueError(f"name {name!r} is used twice in the graph")
        self._names.add(name)
        return name

    def _fresh(self, base: str) -> str:
        i = len(self._names)
        while f"{base}_{i}" in self._names:
            i += 1
        return self._claim(f"{base}_{i}")


def _np_dtype(dtype) -> np.dtype:
    if isinstance(dtype, str) and dtype == "bfloat16":
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(dtype)
