"""Smoke test for the DML lane (run by setup.sh under the Windows CPython in Wine).

One CumSum node on the real DirectML EP, checked against numpy; also checks that the other
guest packages import (onnx, onnxruntime_extensions, ml_dtypes, onnx_ir).
"""

import sys

import ml_dtypes  # noqa: F401
import numpy as np
import onnx
import onnx.helper as oh
import onnx_ir  # noqa: F401
import onnxruntime as ort
import onnxruntime_extensions

x = (np.arange(3 * 257, dtype=np.float32) % 13 - 6).reshape(3, 257)
graph = oh.make_graph(
    [oh.make_node("CumSum", ["x", "axis"], ["y"], name="cumsum")],
    "smoke",
    [oh.make_tensor_value_info("x", onnx.TensorProto.FLOAT, list(x.shape))],
    [oh.make_tensor_value_info("y", onnx.TensorProto.FLOAT, list(x.shape))],
    [oh.make_tensor("axis", onnx.TensorProto.INT64, [], [1])],
)
model = oh.make_model(graph, opset_imports=[oh.make_opsetid("", 17)])
model.ir_version = 8
so = ort.SessionOptions()
so.enable_mem_pattern = False
s = ort.InferenceSession(
    model.SerializeToString(),
    so,
    providers=[("DmlExecutionProvider", {"device_id": "0"})],
)
assert s.get_providers()[0] == "DmlExecutionProvider", s.get_providers()
y = s.run(None, {"x": x})[0]
ok = bool(np.allclose(y, np.cumsum(x, axis=1)))
print(
    f"onnxruntime-directml {ort.__version__}, onnx {onnx.__version__}, numpy {np.__version__}, "
    f"onnxruntime-extensions {onnxruntime_extensions.__version__}: "
    f"{s.get_providers()[0]} CumSum {'PASS' if ok else 'MISMATCH'}"
)
sys.exit(0 if ok else 1)
