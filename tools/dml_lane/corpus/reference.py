"""References for the corpus, computed on the Linux side (numpy, the stock onnxruntime CPU
EP: a different build from the lane's), and the comparison with a lane result.
"""

from __future__ import annotations

import numpy as np
import onnx
import onnx.numpy_helper

from .spec import Spec


def numpy_cumsum(x, axis, exclusive=0, reverse=0):
    """CumSum in plain numpy (ONNX semantics), the reference for every CumSum case."""
    x = np.asarray(x)
    y = np.flip(x, axis) if reverse else x
    c = np.cumsum(y, axis=axis, dtype=x.dtype)
    if exclusive:
        c = np.concatenate(
            [np.zeros_like(np.take(c, [0], axis=axis)), np.delete(c, -1, axis=axis)],
            axis=axis,
        )
    return np.flip(c, axis) if reverse else c


def reference(spec: Spec) -> list[np.ndarray]:
    """Expected outputs: numpy for CumSum, else the Linux onnxruntime CPU EP (not the lane's build)."""
    import onnxruntime as ort

    nodes = spec.model.graph.node
    if len(nodes) == 1 and nodes[0].op_type == "CumSum":
        attrs = {a.name: a.i for a in nodes[0].attribute}
        axis = spec.inputs.get("axis")
        if axis is None:
            axis = onnx.numpy_helper.to_array(spec.model.graph.initializer[0])
        return [
            numpy_cumsum(
                spec.inputs["x"],
                int(axis),
                attrs.get("exclusive", 0),
                attrs.get("reverse", 0),
            )
        ]

    so = ort.SessionOptions()
    so.log_severity_level = 3
    m = onnx.ModelProto()
    m.CopyFrom(spec.model)
    sess = ort.InferenceSession(
        m.SerializeToString(), so, providers=["CPUExecutionProvider"]
    )
    return sess.run(None, spec.inputs)


def compare(spec: Spec, got: list, want: list) -> str | None:
    """None when equal within the dtype's tolerance, else a one-line description."""
    if got is None:
        return "no outputs"
    if len(got) != len(want):
        return f"{len(got)} outputs, expected {len(want)}"
    rtol, atol = spec.tol
    for i, (g, w) in enumerate(zip(got, want)):
        g, w = np.asarray(g), np.asarray(w)
        if g.shape != w.shape:
            return f"output {i}: shape {g.shape}, expected {w.shape}"
        if g.dtype != w.dtype:
            return f"output {i}: dtype {g.dtype}, expected {w.dtype}"
        if g.dtype.kind in "fc":
            ok = np.allclose(
                g.astype(np.float64),
                w.astype(np.float64),
                rtol=rtol,
                atol=atol,
                equal_nan=True,
            )
        else:
            ok = np.array_equal(g, w)
        if not ok:
            bad = int(
                np.sum(
                    ~np.isclose(
                        g.astype(np.float64), w.astype(np.float64), rtol=rtol, atol=atol
                    )
                )
            )
            return f"output {i}: {bad} of {g.size} elements differ (first got {g.ravel()[:4]}, want {w.ravel()[:4]})"
    return None
