"""convert (converter/pipeline.py): one onnx-ir model through every pass; what comes out
declares what went in (graph I/O byte for byte, value_info only where the input had it)."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import helper

from ort_dml_ops import convert

from .rules._util import run_cpu


def _relu_cumsum_f64(out_shape):
    """x -> Relu -> h -> CumSum(axis 0) -> y, float64 (DML has no float64 CumSum: the cast
    rule rewrites it), with `h` declared in value_info and every declaration carrying an
    explicitly written, empty doc_string."""
    f64 = onnx.TensorProto.DOUBLE
    x = helper.make_tensor_value_info("x", f64, ["n", 3])
    y = helper.make_tensor_value_info("y", f64, out_shape)
    h = helper.make_tensor_value_info("h", f64, ["n", 3])
    for vi in (x, y, h):
        vi.doc_string = ""
    y.metadata_props.add(key="from", value="the user")
    graph = helper.make_graph(
        [
            helper.make_node("Relu", ["x"], ["h"], name="relu"),
            helper.make_node("CumSum", ["h", "axis"], ["y"], name="cumsum"),
        ],
        "g",
        [x],
        [y],
        [onnx.numpy_helper.from_array(np.array(0, np.int64), "axis")],
        value_info=[h],
    )
    return helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9
    )


def test_graph_io_and_value_info_are_the_inputs():
    """Shape inference types every value on the way (the cast rule needs them) and infers
    the output as [n, 3]; the converted model still declares `y` as [m, 3], as given, and
    value_info only for `h`."""
    model = _relu_cumsum_f64(out_shape=["m", 3])
    # (lower: the DML EP has no float64 Relu, so `auto` keeps the CumSum beside it on the CPU)
    r = convert(model, "dml", strategy="lower")
    assert r.report.summary() == {"cast": 1}
    for mine, theirs in (
        (r.model.graph.input, model.graph.input),
        (r.model.graph.output, model.graph.output),
    ):
        assert [v.SerializeToString() for v in mine] == [
            v.SerializeToString() for v in theirs
        ]
    assert [vi.name for vi in r.model.graph.value_info] == ["h"]
    onnx.checker.check_model(r.model, full_check=True)
    x = np.arange(-6.0, 6.0).reshape(4, 3)
    np.testing.assert_array_equal(
        run_cpu(r.model, {"x": x})[0], np.cumsum(np.maximum(x, 0), axis=0)
    )
