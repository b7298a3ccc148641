"""The bad-input corpus: builders for every case, generated at test time into a temporary folder.

Each builder takes the case folder and returns a dict of paths: `model` (the input the case is
about, possibly absent or not a file), and whatever else the case needs (`out`, `x`, ...).
Nothing binary is stored in the repository; `python -m tests.bad_inputs.corpus DIR` writes the
whole corpus into DIR to look at.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from ort_dml_ops import DOMAIN


def _save(model: onnx.ModelProto, path: Path) -> Path:
    path.write_bytes(model.SerializeToString())
    return path


def _model(nodes, inputs, outputs, inits=(), *, opset=17, domain_import=False, ir=10):
    graph = helper.make_graph(nodes, "bad", inputs, outputs, list(inits))
    imports = [helper.make_opsetid("", opset)] + (
        [helper.make_opsetid(DOMAIN, 1)] if domain_import else []
    )
    return helper.make_model(graph, opset_imports=imports, ir_version=ir)


def cumsum_model(
    *,
    axis_init=None,
    axis_type=TensorProto.INT64,
    axis_shape=(),
    domain="",
    op="CumSum",
):
    """x [N, 4] float32 -> op(x, axis) -> y; axis an input unless `axis_init` (an array) is given."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4])
    inputs, inits = [x], []
    if axis_init is None:
        inputs.append(
            helper.make_tensor_value_info("axis", axis_type, list(axis_shape))
        )
    else:
        inits.append(numpy_helper.from_array(np.asarray(axis_init), "axis"))
    node = helper.make_node(op, ["x", "axis"], ["y"], domain=domain, name="scan")
    return _model([node], inputs, [y], inits, domain_import=bool(domain))


def scatter_model(
    *,
    domain="",
    dshape=(4, 5),
    ishape=(2, 5),
    ushape=None,
    axis=0,
    reduction="add",
    opset=18,
):
    ushape = ishape if ushape is None else ushape
    inputs = [
        helper.make_tensor_value_info("data", TensorProto.FLOAT, list(dshape)),
        helper.make_tensor_value_info("indices", TensorProto.INT64, list(ishape)),
        helper.make_tensor_value_info("updates", TensorProto.FLOAT, list(ushape)),
    ]
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, list(dshape))
    node = helper.make_node(
        "ScatterElements",
        ["data", "indices", "updates"],
        ["y"],
        domain=domain,
        name="scatter",
        axis=axis,
        reduction=reduction,
    )
    return _model(
        [node], inputs, [y], opset=17 if domain else opset, domain_import=bool(domain)
    )


def good_model() -> onnx.ModelProto:
    """A valid model with a DOMAIN::CumProd (fallback op) and a constant axis."""
    return cumsum_model(axis_init=np.array(1, np.int64), domain=DOMAIN, op="CumProd")


# --------------------------------------------------------------------------------------
# builders: folder -> {"model": path, ...}


def missing_file(d):
    return {"model": d / "no_such_model.onnx"}


def directory(d):
    (d / "folder.onnx").mkdir()
    return {"model": d / "folder.onnx"}


def empty_file(d):
    (d / "empty.onnx").write_bytes(b"")
    return {"model": d / "empty.onnx"}


def truncated_protobuf(d):
    data = good_model().SerializeToString()
    return {"model": _write(d / "truncated.onnx", data[: len(data) // 2])}


def garbage_bytes(d):
    return {"model": _write(d / "garbage.onnx", np.random.default_rng(7).bytes(300))}


def text_file(d):
    return {"model": _write(d / "notes.onnx", b'{"this": "is json, not a model"}\n')}


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def checker_fails(d):
    """A node reads a value nothing defines."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])
    node = helper.make_node("Add", ["x", "ghost"], ["y"], name="add")
    return {"model": _save(_model([node], [x], [y]), d / "checker.onnx")}


def unknown_op(d):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])
    node = helper.make_node("NoSuchOp", ["x"], ["y"], name="mystery")
    return {"model": _save(_model([node], [x], [y]), d / "unknown_op.onnx")}


def unknown_domain_op(d):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])
    node = helper.make_node(
        "Frobnicate", ["x"], ["y"], name="mystery", domain="com.example"
    )
    m = _model([node], [x], [y])
    m.opset_import.append(helper.make_opsetid("com.example", 1))
    return {"model": _save(m, d / "unknown_domain.onnx")}


def _with_external(d, location: str, *, write_file: Path | None = None):
    m = cumsum_model(axis_init=np.array(1, np.int64))
    init = m.graph.initializer[0]
    init.ClearField("raw_data")
    init.ClearField("int64_data")
    init.data_location = TensorProto.EXTERNAL
    for k, v in {"location": location, "offset": "0", "length": "8"}.items():
        entry = init.external_data.add()
        entry.key, entry.value = k, v
    if write_file is not None:
        write_file.write_bytes(np.array(1, np.int64).tobytes())
    sub = d / "model_dir"
    sub.mkdir(exist_ok=True)
    return {"model": _save(m, sub / "external.onnx")}


def external_outside_folder(d):
    """The initializer's data is `../secret.bin`: outside the model's folder (refused)."""
    return _with_external(d, "../secret.bin", write_file=d / "secret.bin")


def external_absolute_path(d):
    return _with_external(
        d, str((d / "abs_secret.bin").resolve()), write_file=d / "abs_secret.bin"
    )


def external_missing_file(d):
    return _with_external(d, "weights.bin")


def missing_input(d):
    return {"model": _save(good_model(), d / "model.onnx")}


def _npy(d, name, arr):
    p = d / f"{name}.npy"
    np.save(p, arr)
    return p


def axis_out_of_range_native(d):
    """ONNX CumSum, axis 5 fed at run time for a rank-2 input."""
    return {
        "model": _save(cumsum_model(), d / "cumsum.onnx"),
        "x": _npy(d, "x", np.ones((3, 4), np.float32)),
        "axis": _npy(d, "axis", np.array(5, np.int64)),
    }


def axis_out_of_range_fallback(d):
    """DOMAIN::CumProd (Python fallback), axis 5 fed at run time for a rank-2 input."""
    return {
        "model": _save(cumsum_model(domain=DOMAIN, op="CumProd"), d / "cumprod.onnx"),
        "x": _npy(d, "x", np.ones((3, 4), np.float32)),
        "axis": _npy(d, "axis", np.array(5, np.int64)),
    }


def axis_out_of_range_constant(d):
    """DOMAIN::CumProd with a constant axis 7 (rank 2): convert, inspect and run."""
    return {
        "model": _save(
            cumsum_model(axis_init=np.array(7, np.int64), domain=DOMAIN, op="CumProd"),
            d / "axis7.onnx",
        ),
        "x": _npy(d, "x", np.ones((3, 4), np.float32)),
    }


def axis_not_scalar(d):
    """DOMAIN::CumProd fed axis [0, 1] (two elements) at run time."""
    return {
        "model": _save(
            cumsum_model(domain=DOMAIN, op="CumProd", axis_shape=(2,)), d / "axis2.onnx"
        ),
        "x": _npy(d, "x", np.ones((3, 4), np.float32)),
        "axis": _npy(d, "axis", np.array([0, 1], np.int64)),
    }


def axis_not_integer(d):
    """ONNX CumSum whose axis is a float tensor: the model breaks CumSum's type constraint."""
    return {
        "model": _save(
            cumsum_model(axis_init=np.array(1.0, np.float32)), d / "axis_float.onnx"
        ),
        "x": _npy(d, "x", np.ones((3, 4), np.float32)),
    }


def axis_not_integer_fallback(d):
    """DOMAIN::CumProd whose axis is a float graph input."""
    return {
        "model": _save(
            cumsum_model(domain=DOMAIN, op="CumProd", axis_type=TensorProto.FLOAT),
            d / "axis_ffb.onnx",
        ),
        "x": _npy(d, "x", np.ones((3, 4), np.float32)),
        "axis": _npy(d, "axis", np.array(1.0, np.float32)),
    }


def _scatter_feeds(d, indices, ushape=None):
    data = np.zeros((4, 5), np.float32)
    updates = np.ones(ushape or indices.shape, np.float32)
    return {
        "data": _npy(d, "data", data),
        "indices": _npy(d, "indices", indices),
        "updates": _npy(d, "updates", updates),
    }


BAD_INDICES = np.array(
    [[0, 1, 2, 3, -4], [9, 0, 0, 0, 0]], np.int64
)  # 9 is outside [-4, 3]


def indices_out_of_range_fallback(d):
    return {
        "model": _save(scatter_model(domain=DOMAIN), d / "scatter_fb.onnx"),
        **_scatter_feeds(d, BAD_INDICES),
    }


def indices_out_of_range_native(d):
    return {
        "model": _save(scatter_model(), d / "scatter.onnx"),
        **_scatter_feeds(d, BAD_INDICES),
    }


def indices_out_of_range_lowered_checked(d):
    """The lowered scatter, converted with check_indices=True: a Gather fails on the bad index."""
    from ort_dml_ops import convert

    src = _save(scatter_model(), d / "scatter.onnx")
    low = convert(src, "dml", strategy="lower", check_indices=True).model
    return {
        "model": _save(low, d / "scatter_lowered_checked.onnx"),
        **_scatter_feeds(d, BAD_INDICES),
    }


def shapes_mismatch_fallback(d):
    """indices [2, 5] but updates [2, 3] (DOMAIN::ScatterElements, dynamic shapes)."""
    m = scatter_model(
        domain=DOMAIN, dshape=("A", "B"), ishape=("I", "J"), ushape=("U", "V")
    )
    return {
        "model": _save(m, d / "mismatch_fb.onnx"),
        **_scatter_feeds(d, BAD_INDICES, (2, 3)),
    }


def shapes_mismatch_native(d):
    m = scatter_model(dshape=("A", "B"), ishape=("I", "J"), ushape=("U", "V"))
    return {
        "model": _save(m, d / "mismatch.onnx"),
        **_scatter_feeds(d, BAD_INDICES, (2, 3)),
    }


def shapes_mismatch_static(d):
    """indices [2, 5] and updates [2, 3] declared in the model: the checker rejects it."""
    return {"model": _save(scatter_model(ushape=(2, 3)), d / "mismatch_static.onnx")}


def scatter_axis_out_of_range(d):
    return {"model": _save(scatter_model(axis=3), d / "scatter_axis3.onnx")}


def good(d):
    return {
        "model": _save(good_model(), d / "model.onnx"),
        "x": _npy(d, "x", np.ones((3, 4), np.float32)),
    }


def output_parent_is_file(d):
    paths = good(d)
    (d / "plain_file").write_text("I am a file, not a folder\n")
    return {**paths, "out": d / "plain_file" / "out.onnx"}


def output_folder_missing(d):
    return {**good(d), "out": d / "no_such_folder" / "out.onnx"}


def output_is_directory(d):
    paths = good(d)
    (d / "out_dir.onnx").mkdir()
    return {**paths, "out": d / "out_dir.onnx"}


def output_read_only_folder(d):
    """An immutable folder (chattr +i): even root cannot create a file in it."""
    paths = good(d)
    ro = d / "readonly"
    ro.mkdir()
    return {**paths, "out": ro / "out.onnx", "immutable": ro}


def output_equals_input(d):
    paths = good(d)
    return {**paths, "out": paths["model"]}


def output_equals_input_other_spelling(d):
    paths = good(d)
    (d / "sub").mkdir()
    return {**paths, "out": d / "sub" / ".." / "model.onnx"}


def output_symlink_to_input(d):
    paths = good(d)
    link = d / "link.onnx"
    os.symlink(paths["model"], link)
    return {**paths, "out": link}


def report_equals_input(d):
    paths = good(d)
    return {**paths, "out": d / "out.onnx", "report": paths["model"]}


def input_npy_missing(d):
    return {**good(d), "x": d / "no_such.npy"}


def input_npy_garbage(d):
    paths = good(d)
    return {**paths, "x": _write(d / "x_garbage.npy", b"not numpy at all")}


def input_wrong_dtype(d):
    return {
        "model": _save(good_model(), d / "model.onnx"),
        "x": _npy(d, "x", np.ones((3, 4), np.float64)),
    }


def input_wrong_rank(d):
    return {
        "model": _save(good_model(), d / "model.onnx"),
        "x": _npy(d, "x", np.ones((3, 4, 2), np.float32)),
    }


def output_dir_missing(d):
    return {**good(d), "out_dir": d / "missing_out_dir"}


BUILDERS = {
    name: fn
    for name, fn in globals().items()
    if callable(fn)
    and getattr(fn, "__module__", None) == __name__
    and not name.startswith("_")
    and name not in ("cumsum_model", "scatter_model", "good_model", "good")
}


def main(argv=None) -> int:
    out = Path((argv or sys.argv[1:] or ["bad_inputs_corpus"])[0])
    out.mkdir(parents=True, exist_ok=True)
    for name, build in BUILDERS.items():
        folder = out / name
        folder.mkdir(exist_ok=True)
        print(name, {k: str(v) for k, v in build(folder).items()})
    return 0


if __name__ == "__main__":
    sys.exit(main())
