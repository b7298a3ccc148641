"""Model loading and saving: one-line errors, loadable IR versions, atomic writes."""

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from ort_dml_ops import GraphBuilder, UserError
from ort_dml_ops.modelio import (
    MAX_IR_VERSION,
    fix_ir_version,
    load_model,
    save_model_atomic,
)


def small_model(opset=17):
    b = GraphBuilder(opset=opset)
    x = b.input("x", "float32", [3])
    return b.build(outputs={"y": b.cumsum(x, axis=0)})


@pytest.mark.parametrize("opset", [11, 17, 21, 25, 26])
def test_models_we_write_load_in_onnx_runtime(opset, tmp_path):
    model = small_model(opset)
    model.ir_version = 14  # what onnx 1.23 writes by default
    save_model_atomic(model, tmp_path / "m.onnx")
    saved = onnx.load(tmp_path / "m.onnx")
    assert saved.ir_version <= MAX_IR_VERSION
    if opset <= 25:  # onnxruntime refuses nothing here; CumSum runs
        sess = ort.InferenceSession(
            str(tmp_path / "m.onnx"), providers=["CPUExecutionProvider"]
        )
        assert np.array_equal(
            sess.run(None, {"x": np.array([1, 2, 3], np.float32)})[0], [1, 3, 6]
        )


def test_fix_ir_version_keeps_a_loadable_one():
    model = small_model()
    model.ir_version = 8
    assert fix_ir_version(model).ir_version == 8


def test_load_accepts_proto_bytes_and_path(tmp_path):
    model = small_model()
    onnx.save(model, tmp_path / "m.onnx")
    for source in (
        model,
        model.SerializeToString(),
        tmp_path / "m.onnx",
        str(tmp_path / "m.onnx"),
    ):
        assert load_model(source).graph.node[-1].op_type == model.graph.node[-1].op_type


@pytest.mark.parametrize(
    "content,message",
    [
        (None, "no such file"),
        (b"", "the file is empty"),
        (b"\x08\x07garbage\xff", "not an ONNX model"),
    ],
)
def test_load_errors_name_the_file_and_problem(tmp_path, content, message):
    path = tmp_path / "bad.onnx"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(UserError, match=message) as info:
        load_model(path)
    assert str(path) in str(info.value) and "\n" not in str(info.value)


def test_load_refuses_a_directory_and_odd_types(tmp_path):
    with pytest.raises(UserError, match="is a directory"):
        load_model(tmp_path)
    with pytest.raises(UserError, match=r"expected an onnx\.ModelProto"):
        load_model(42)


def test_truncated_protobuf_is_refused(tmp_path):
    data = small_model().SerializeToString()
    path = tmp_path / "cut.onnx"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(UserError, match=r"cut\.onnx"):
        load_model(path)


def test_save_refuses_to_overwrite_the_input(tmp_path):
    path = tmp_path / "m.onnx"
    onnx.save(small_model(), path)
    before = path.read_bytes()
    with pytest.raises(UserError, match="output path is the input model"):
        save_model_atomic(small_model(), path, source=path)
    assert path.read_bytes() == before


def test_save_into_a_missing_folder_is_refused(tmp_path):
    with pytest.raises(UserError, match="output folder does not exist"):
        save_model_atomic(small_model(), tmp_path / "nope" / "m.onnx")


def test_save_onto_a_folder_is_refused_and_leaves_nothing(tmp_path):
    (tmp_path / "m.onnx").mkdir()
    with pytest.raises(UserError, match="cannot write the output"):
        save_model_atomic(small_model(), tmp_path / "m.onnx")
    assert [p.name for p in tmp_path.iterdir()] == ["m.onnx"]
    assert list((tmp_path / "m.onnx").iterdir()) == []


def test_failed_save_leaves_no_partial_file(tmp_path, monkeypatch):
    def boom(self):
        raise RuntimeError("disk full")

    monkeypatch.setattr(onnx.ModelProto, "SerializeToString", boom)
    with pytest.raises(RuntimeError, match="disk full"):
        save_model_atomic(small_model(), tmp_path / "m.onnx")
    assert list(tmp_path.iterdir()) == []
