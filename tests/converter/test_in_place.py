"""converter.convert_model: an onnx_ir.Model converted in place, as `convert` converts its proto."""

from __future__ import annotations

import numpy as np
import onnx
import onnx_ir as ir
import pytest

from ort_dml_ops import UserError
from ort_dml_ops.conversion import convert
from ort_dml_ops.converter import convert_model

from .rules._util import run_cpu, single_op


def _scatter_add():
    return single_op(
        "ScatterElements",
        [
            ("data", np.float32, [4, 3]),
            ("indices", np.int64, [2, 3]),
            ("updates", np.float32, [2, 3]),
        ],
        {"reduction": "add"},
        opset=18,
    )


def _feeds():
    return {
        "data": np.arange(12, dtype=np.float32).reshape(4, 3),
        "indices": np.array([[0, 1, 3], [0, 3, 3]], np.int64),
        "updates": np.ones([2, 3], np.float32),
    }


def test_converts_in_place_like_convert():
    proto = _scatter_add()
    model = ir.serde.deserialize_model(proto)
    report = convert_model(model, "dml", strategy="lower")
    expected = convert(proto, "dml", strategy="lower")
    assert (
        report.to_dict()["summary"]
        == expected.report.to_dict()["summary"]
        == {"lowered": 1}
    )
    out = ir.serde.serialize_model(model)
    assert [n.op_type for n in out.graph.node] == [
        n.op_type for n in expected.model.graph.node
    ]
    onnx.checker.check_model(out, full_check=True)
    (got,) = run_cpu(out, _feeds())
    (want,) = run_cpu(proto, _feeds())  # ORT's CPU ScatterElements on the original
    np.testing.assert_array_equal(got, want)


def test_external_initializers_stay_external(tmp_path):
    proto = single_op(
        "CumSum",
        [("x", np.float64, [1000])],
        {},
        opset=14,
        inits={"axis": np.array(0, np.int64)},
    )
    proto.graph.initializer.append(onnx.numpy_helper.from_array(np.arange(1000.0), "w"))
    add = onnx.helper.make_node("Add", ["y0", "w"], ["y"])
    proto.graph.node[0].output[0] = "y0"
    proto.graph.node.append(add)
    path = tmp_path / "m.onnx"
    onnx.save(
        proto, path, save_as_external_data=True, location="m.data", size_threshold=0
    )
    model = ir.load(path)
    # (lower: the DML EP has no float64 Add, so `auto` keeps the CumSum beside it on the CPU)
    report = convert_model(model, "dml", strategy="lower")
    assert report.summary() == {"cast": 1}
    w = model.graph.initializers["w"].const_value
    assert isinstance(w, ir.ExternalTensor)
    np.testing.assert_array_equal(w.numpy(), np.arange(1000.0))


def test_refusal_leaves_the_model_unchanged():
    proto = single_op(
        "CumSum",
        [("x", np.float32, [3, 4])],
        {},
        opset=14,
        inits={"axis": np.array(5, np.int64)},
    )
    model = ir.serde.deserialize_model(proto)
    before = ir.serde.serialize_model(model).SerializeToString()
    with pytest.raises(UserError):
        convert_model(model, "dml")
    assert ir.serde.serialize_model(model).SerializeToString() == before


def test_folds_and_repairs_in_place_like_convert():
    """The If folding runs on the caller's onnx-ir model: the same graph, the same repaired
    output declaration and report lines as `convert`, and ORT's CPU EP computes what it
    computes on the original."""
    from .rules.test_fold_if import _rank_if_model

    proto = _rank_if_model(["n", 3], out_shape=["d"])
    model = ir.serde.deserialize_model(proto)
    report = convert_model(model, "dml")
    expected = convert(proto, "dml")
    assert report.normalized == expected.report.normalized
    assert any("If folded" in line for line in report.normalized)
    out = ir.serde.serialize_model(model)
    assert [n.op_type for n in out.graph.node] == [
        n.op_type for n in expected.model.graph.node
    ]
    assert out.graph.output[0] == expected.model.graph.output[0]
    onnx.checker.check_model(out, full_check=True)
    x = np.ones((2, 3), np.float32)
    np.testing.assert_array_equal(
        run_cpu(out, {"x": x})[0], run_cpu(proto, {"x": x})[0]
    )


def test_a_large_in_memory_initializer_is_never_copied():
    """A weight above large_tensors.STREAM_BYTES held in memory stays the very tensor object the
    caller gave (onnx's C API steps see it as a stub: light.serialize_light)."""
    proto = single_op(
        "CumSum",
        [("x", np.float64, [1 << 18])],
        {},
        opset=14,
        inits={"axis": np.array(0, np.int64)},
    )
    weights = np.linspace(0.0, 1.0, 1 << 18)  # 2 MiB of float64
    proto.graph.node[0].output[0] = "y0"
    proto.graph.node.append(onnx.helper.make_node("Add", ["y0", "w"], ["y"]))
    proto.graph.initializer.append(onnx.numpy_helper.from_array(weights[:1] * 0, "w"))
    proto.graph.initializer[-1].dims[0] = 1 << 18  # the bytes come from memory below
    del proto.graph.initializer[-1].double_data[:]
    model = ir.serde.deserialize_model(proto)
    tensor = ir.tensor(weights, name="w")
    model.graph.initializers["w"].const_value = tensor
    # (lower: the DML EP has no float64 Add, so `auto` keeps the CumSum beside it on the CPU)
    report = convert_model(model, "dml", strategy="lower")
    assert report.summary() == {"cast": 1}
    assert model.graph.initializers["w"].const_value is tensor
    out = ir.serde.serialize_model(model)
    # small integers: the float32 CumSum the cast rule runs is exact on them
    x = np.random.default_rng(1).integers(0, 4, 1 << 18).astype(np.float64)
    (got,) = run_cpu(out, {"x": x})
    np.testing.assert_array_equal(got, np.cumsum(x) + weights)
