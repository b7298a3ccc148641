"""Small helpers for tests: single-node models and ONNX Runtime CPU sessions.

They only build graphs and call the real onnxruntime; expected values always come from an
independent implementation (ONNX Runtime's kernels, onnx's ReferenceEvaluator, numpy).
"""

from __future__ import annotations

import functools

import ml_dtypes
import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper

NP_TO_ONNX = {
    np.dtype(np.float32): TensorProto.FLOAT,
    np.dtype(np.float64): TensorProto.DOUBLE,
    np.dtype(np.float16): TensorProto.FLOAT16,
    np.dtype(ml_dtypes.bfloat16): TensorProto.BFLOAT16,
    np.dtype(np.int8): TensorProto.INT8,
    np.dtype(np.int16): TensorProto.INT16,
    np.dtype(np.int32): TensorProto.INT32,
    np.dtype(np.int64): TensorProto.INT64,
    np.dtype(np.uint8): TensorProto.UINT8,
    np.dtype(np.uint16): TensorProto.UINT16,
    np.dtype(np.uint32): TensorProto.UINT32,
    np.dtype(np.uint64): TensorProto.UINT64,
    np.dtype(np.bool_): TensorProto.BOOL,
    np.dtype(np.complex64): TensorProto.COMPLEX64,
    np.dtype(np.complex128): TensorProto.COMPLEX128,
    np.dtype(object): TensorProto.STRING,
}


def single_node_model(
    op_type, inputs, attrs=None, *, opset, domain="", extra_opsets=()
):
    """A model with one node; `inputs` is a list of (name, numpy dtype, rank) graph inputs."""
    node = helper.make_node(
        op_type, [n for n, _, _ in inputs], ["y"], domain=domain, **(attrs or {})
    )
    graph = helper.make_graph(
        [node],
        f"{op_type.lower()}_test",
        [
            helper.make_tensor_value_info(n, NP_TO_ONNX[np.dtype(dt)], [None] * rank)
            for n, dt, rank in inputs
        ],
        [helper.make_tensor_value_info("y", NP_TO_ONNX[np.dtype(inputs[0][1])], None)],
    )
    imports = [
        helper.make_opsetid("", opset),
        *(helper.make_opsetid(d, v) for d, v in extra_opsets),
    ]
    model = helper.make_model(graph, opset_imports=imports)
    model.ir_version = 10 if opset <= 21 else 13
    return model


@functools.cache
def _cached_session(serialized: bytes) -> ort.InferenceSession:
    so = ort.SessionOptions()
    so.log_severity_level = 3
    return ort.InferenceSession(serialized, so, providers=["CPUExecutionProvider"])


def run_ort_cpu(model: onnx.ModelProto, feeds: dict) -> np.ndarray:
    return _cached_session(model.SerializeToString()).run(None, feeds)[0]


def nodes_ort_cpu_runs(model: onnx.ModelProto) -> set[str]:
    """The names of the nodes ORT's CPU EP runs, after its own optimizations (its assignment
    record: session.record_ep_graph_assignment_info)."""
    so = ort.SessionOptions()
    so.log_severity_level = 3
    so.add_session_config_entry("session.record_ep_graph_assignment_info", "1")
    s = ort.InferenceSession(
        model.SerializeToString(), so, providers=["CPUExecutionProvider"]
    )
    return {
        n.name for sg in s.get_provider_graph_assignment_info() for n in sg.get_nodes()
    }


def run_reference(model: onnx.ModelProto, feeds: dict) -> np.ndarray:
    from onnx.reference import ReferenceEvaluator

    return ReferenceEvaluator(model).run(None, feeds)[0]


def ort_cpu_has_kernel(op_type: str, since: int, dtype) -> bool:
    """Whether the installed ONNX Runtime CPU EP registers op_type at `since` for `dtype`."""
    return _ort_cpu_has_kernel(op_type, since, np.dtype(dtype))


@functools.cache  # the op grids ask once per case; the registry is read once per question
def _ort_cpu_has_kernel(op_type: str, since: int, dtype: np.dtype) -> bool:
    from onnxruntime.capi import _pybind_state as C

    name = TensorProto.DataType.Name(NP_TO_ONNX[dtype]).lower()
    want = "tensor(" + name + ")"
    for k in C.get_all_opkernel_def():
        if (
            k.op_name != op_type
            or k.domain not in ("", "ai.onnx")
            or k.provider != "CPUExecutionProvider"
        ):
            continue
        lo, hi = k.version_range
        if lo <= since <= hi and want in k.type_constraints.get("T", []):
            return True
    return False


def assert_same(actual: np.ndarray, expected: np.ndarray) -> None:
    """Bit-for-bit equality of values, NaN equal to NaN, dtype and shape included."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    if actual.dtype.kind in "fc" or actual.dtype.name == "bfloat16":
        a, e = actual.astype(np.float64), expected.astype(np.float64)
        same = (a == e) | (np.isnan(a) & np.isnan(e))
        assert same.all(), (
            f"{int((~same).sum())} of {a.size} differ; first at {np.argwhere(~same)[0].tolist()}: {a[~same][0]} != {e[~same][0]}"
        )
    else:
        np.testing.assert_array_equal(actual, expected)


def np_scatter_elements(data, indices, updates, axis, reduction):
    """ScatterElements by a plain loop over the updates, in index order (as the ONNX spec reads)."""
    out = data.copy()
    idx = np.where(indices < 0, indices + data.shape[axis], indices)
    for pos in np.ndindex(*indices.shape):
        tgt = list(pos)
        tgt[axis] = idx[pos]
        tgt = tuple(tgt)
        u = updates[pos]
        if reduction == "none":
            out[tgt] = u
        elif reduction == "add":
            out[tgt] = out[tgt] + u
        elif reduction == "mul":
            out[tgt] = out[tgt] * u
        elif reduction == "max":
            out[tgt] = max(out[tgt], u)
        else:
            out[tgt] = min(out[tgt], u)
    return out
