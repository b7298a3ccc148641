"""Self-test of the WebGPU lane: one CumSum on the WebGPU plugin EP, placement read from ORT.

Runs `x -> CumSum(axis 1)` through ort_dml_ops.InferenceSession(providers=["WebGpuExecutionProvider"])
with `session.record_ep_graph_assignment_info`, checks that ORT's assignment record puts the
CumSum on WebGpuExecutionProvider and that the output equals numpy's cumsum. Prints one line.
"""

from __future__ import annotations

import sys

import numpy as np
import onnxruntime as ort
from onnx import TensorProto
from onnx import helper as h

from ort_dml_ops.session import InferenceSession


def main() -> int:
    g = h.make_graph(
        [h.make_node("CumSum", ["x", "axis"], ["y"], name="cumsum")],
        "selftest",
        [h.make_tensor_value_info("x", TensorProto.FLOAT, [3, 7])],
        [h.make_tensor_value_info("y", TensorProto.FLOAT, [3, 7])],
        [h.make_tensor("axis", TensorProto.INT64, [], [1])],
    )
    model = h.make_model(g, opset_imports=[h.make_opsetid("", 14)], ir_version=8)
    so = ort.SessionOptions()
    so.add_session_config_entry("session.record_ep_graph_assignment_info", "1")
    sess = InferenceSession(
        model, providers=["WebGpuExecutionProvider"], sess_options=so
    )
    x = np.arange(21, dtype=np.float32).reshape(3, 7) - 10
    y = sess.run(None, {"x": x})[0]
    where = {
        n.name: sg.ep_name
        for sg in sess.get_provider_graph_assignment_info()
        for n in sg.get_nodes()
    }
    if where.get("cumsum") != "WebGpuExecutionProvider":
        print(
            f"self-test: CumSum ran on {where.get('cumsum')}, not on WebGpuExecutionProvider",
            file=sys.stderr,
        )
        return 1
    if not np.array_equal(y, np.cumsum(x, axis=1)):
        print("self-test: CumSum on WebGPU differs from numpy", file=sys.stderr)
        return 1
    print(
        "self-test ok: CumSum on WebGpuExecutionProvider (ORT's assignment record), output equals numpy"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
