"""Helpers for the lowering tests: tiny single-op models and CPU-EP runs."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
from onnx import helper, numpy_helper

from ort_dml_ops import DOMAIN

_ORT_SO = ort.SessionOptions()
_ORT_SO.intra_op_num_threads = 1
_ORT_SO.log_severity_level = 3


def np_to_elem(dt) -> int:
    return helper.np_dtype_to_tensor_dtype(np.dtype(dt))


def single_op(
    op,
    inputs,
    attrs=None,
    *,
    opset=17,
    domain="",
    inits=None,
    out_type=None,
    out_shape=None,
):
    """inputs: list of (name, dtype, shape); inits: {name: array}."""
    inits = inits or {}
    vis = [
        helper.make_tensor_value_info(n, np_to_elem(dt), shp) for n, dt, shp in inputs
    ]
    first = inputs[0]
    y = helper.make_tensor_value_info(
        "y",
        np_to_elem(out_type or first[1]),
        out_shape if out_shape is not None else first[2],
    )
    names = [n for n, _, _ in inputs] + list(inits)
    node = helper.make_node(
        op, names, ["y"], domain=domain, name=f"the_{op}", **(attrs or {})
    )
    imports = [helper.make_opsetid("", opset)] + (
        [helper.make_opsetid(DOMAIN, 1)] if domain == DOMAIN else []
    )
    graph = helper.make_graph(
        [node],
        "g",
        vis,
        [y],
        [numpy_helper.from_array(np.asarray(v), k) for k, v in inits.items()],
    )
    return helper.make_model(graph, opset_imports=imports, ir_version=10)


def run_cpu(model: onnx.ModelProto, feeds: dict):
    sess = ort.InferenceSession(
        model.SerializeToString(), _ORT_SO, providers=["CPUExecutionProvider"]
    )
    return sess.run(None, feeds)


def op_types(model: onnx.ModelProto) -> set[tuple[str, str]]:
    return {(n.domain, n.op_type) for n in model.graph.node}
