"""The corpus' unit: `Spec` (a tiny model, its inputs, the expected placement and tolerance),
the dtype tables and the small builders every case uses.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import onnx
import onnx.helper as oh
import onnx.numpy_helper

from ..driver import Case

T = onnx.TensorProto

#: opsets where the ops we care about change version (CumSum 11/14, Scatter* 11/13/16/18,
#: Reduce* 13/18, Pad 11/13/18/19/21, ...); 21 is the newest the DML EP registers anything at.
REPRESENTATIVE_OPSETS = (11, 13, 16, 17, 18, 21)
ALL_OPSETS = (11, 13, 14, 15, 16, 17, 18, 19, 20, 21)

_NP = {
    T.FLOAT: np.float32,
    T.FLOAT16: np.float16,
    T.DOUBLE: np.float64,
    T.INT32: np.int32,
    T.INT64: np.int64,
    T.UINT32: np.uint32,
    T.UINT64: np.uint64,
    T.INT8: np.int8,
    T.UINT8: np.uint8,
    T.BOOL: np.bool_,
    T.INT16: np.int16,
}
DTYPES = {
    "float32": T.FLOAT,
    "float16": T.FLOAT16,
    "float64": T.DOUBLE,
    "int32": T.INT32,
    "int64": T.INT64,
    "uint32": T.UINT32,
    "uint64": T.UINT64,
    "int8": T.INT8,
    "uint8": T.UINT8,
    "bool": T.BOOL,
}


@dataclass
class Spec:
    name: str
    op: str  # the op (or pattern) under test, for the conformance record
    dtype: str
    opset: int
    model: onnx.ModelProto
    inputs: dict
    #: node name -> provider the lane must report (checked by the tests)
    expect_placement: dict = field(default_factory=dict)
    representative: bool = False
    note: str = ""
    session_options: dict | None = None
    tol: tuple = (1e-5, 1e-6)

    def case(self, provider: str = "dml") -> Case:
        return Case(
            self.name if provider == "dml" else f"{self.name}@{provider}",
            self.model,
            self.inputs,
            provider=provider,
            session_options=self.session_options,
        )


def _vi(name, elem, shape):
    return oh.make_tensor_value_info(name, elem, shape)


def model(
    nodes, inputs, outputs, inits=(), opset=17, extra_opsets=()
) -> onnx.ModelProto:
    g = oh.make_graph(nodes, "lane", inputs, outputs, list(inits))
    m = oh.make_model(g, opset_imports=[oh.make_opsetid("", opset), *extra_opsets])
    m.ir_version = 8 if opset <= 18 else (9 if opset <= 20 else 10)
    return m


def _data(dtype: str, shape, seed=0, low=-6, high=7):
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    npd = np.dtype(dtype)
    if npd.kind == "u":
        low = 0
    if npd.kind == "f":
        # small integers in float: exact sums, so CPU-vs-GPU differences mean real bugs
        return rng.integers(low, high, shape).astype(npd)
    return rng.integers(low, high, shape).astype(npd)


def _tol(dtype):
    return {
        "float16": (1e-2, 1e-2),
        "float32": (1e-5, 1e-5),
        "float64": (1e-12, 1e-12),
    }.get(dtype, (0, 0))
