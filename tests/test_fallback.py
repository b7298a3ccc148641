"""The Python fallback through ort_dml_ops.InferenceSession, held against ONNX Runtime's own
kernels (CumSum-14, CumProd-26, ScatterElements-18) and onnx's ReferenceEvaluator."""

import importlib

import ml_dtypes
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import ort_dml_ops
from ort_dml_ops import DOMAIN
from ort_dml_ops.fallback import registry
from ort_dml_ops.session import ProviderWarning
from tests.support import NP_TO_ONNX, assert_same, run_ort_cpu, run_reference

SCAN_DTYPES = [
    np.float32,
    np.float64,
    np.int32,
    np.int64,
    np.uint32,
    np.uint64,
    np.float16,
    ml_dtypes.bfloat16,
]
SCATTER_DTYPES = [
    np.float32,
    np.float64,
    np.int8,
    np.int16,
    np.int32,
    np.int64,
    np.uint8,
    np.uint16,
    np.uint32,
    np.uint64,
    np.bool_,
    np.float16,
    ml_dtypes.bfloat16,
]
NATIVE_OPSET = {"CumSum": 14, "CumProd": 26, "ScatterElements": 18}


def model_with(op, dtype, attrs, *, domain, opset, axis_dtype=np.int64, rank=3):
    """x (float32 at the boundary when dtype is bfloat16, which ORT's Python API cannot feed)
    -> [Cast] -> op -> [Cast] -> y. Scatter ops take indices and updates too."""
    boundary = np.float32 if dtype == ml_dtypes.bfloat16 else dtype
    elem, belem = NP_TO_ONNX[np.dtype(dtype)], NP_TO_ONNX[np.dtype(boundary)]
    nodes, inputs = [], [helper.make_tensor_value_info("x", belem, [None] * rank)]
    data = "x"
    if boundary != dtype:
        nodes.append(helper.make_node("Cast", ["x"], ["x_cast"], to=elem))
        data = "x_cast"
    if op == "ScatterElements":
        inputs += [
            helper.make_tensor_value_info(
                "i",
                TensorProto.INT32 if axis_dtype == np.int32 else TensorProto.INT64,
                [None] * rank,
            ),
            helper.make_tensor_value_info("u", belem, [None] * rank),
        ]
        upd = "u"
        if boundary != dtype:
            nodes.append(helper.make_node("Cast", ["u"], ["u_cast"], to=elem))
            upd = "u_cast"
        op_inputs = [data, "i", upd]
    else:
        inputs.append(
            helper.make_tensor_value_info("axis", NP_TO_ONNX[np.dtype(axis_dtype)], [])
        )
        op_inputs = [data, "axis"]
    nodes.append(
        helper.make_node(op, op_inputs, ["y_op"], domain=domain, name="the_op", **attrs)
    )
    nodes.append(helper.make_node("Cast", ["y_op"], ["y"], to=belem))
    graph = helper.make_graph(
        nodes, "g", inputs, [helper.make_tensor_value_info("y", belem, [None] * rank)]
    )
    imports = [helper.make_opsetid("", opset)] + (
        [helper.make_opsetid(DOMAIN, 1)] if domain == DOMAIN else []
    )
    model = helper.make_model(graph, opset_imports=imports)
    model.ir_version = 10 if opset < 23 else 13
    return model


def native_result(op, dtype, attrs, feeds, axis_dtype=np.int64):
    model = model_with(
        op, dtype, attrs, domain="", opset=NATIVE_OPSET[op], axis_dtype=axis_dtype
    )
    native_ok = dtype not in (np.float16, ml_dtypes.bfloat16) and not (
        op == "CumSum" and dtype in (np.uint32, np.uint64)
    )
    return run_ort_cpu(model, feeds) if native_ok else run_reference(model, feeds)


def feeds_for(op, dtype, rng, axis=1, axis_dtype=np.int64):
    boundary = np.float32 if dtype == ml_dtypes.bfloat16 else dtype
    shape = (3, 5, 4)

    def vals(s):
        if np.dtype(dtype).kind in "iu":
            return rng.integers(1, 9, size=s).astype(dtype)
        if np.dtype(dtype).kind == "b":
            return rng.random(s) < 0.5
        v = rng.choice(np.array([0.0, -1.5, 2.0, 0.5, np.nan, np.inf, 1.25]), size=s)
        return v.astype(dtype).astype(boundary)

    if op == "ScatterElements":
        ishape = (3, 7, 4)
        return {
            "x": vals(shape),
            "i": rng.integers(-5, 5, size=ishape).astype(axis_dtype),
            "u": vals(ishape),
        }
    return {"x": vals(shape), "axis": np.array(axis, axis_dtype)}


def fallback_run(model, feeds):
    return ort_dml_ops.InferenceSession(model, providers=["CPUExecutionProvider"]).run(
        None, feeds
    )[0]


@pytest.mark.parametrize("dtype", SCAN_DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("op", ["CumSum", "CumProd"])
@pytest.mark.parametrize("exclusive,reverse", [(0, 0), (1, 0), (0, 1), (1, 1)])
def test_scan_fallback_matches_native(op, dtype, exclusive, reverse):
    rng = np.random.default_rng(exclusive * 2 + reverse)
    attrs = {"exclusive": exclusive, "reverse": reverse}
    feeds = feeds_for(op, dtype, rng, axis=-2)
    got = fallback_run(model_with(op, dtype, attrs, domain=DOMAIN, opset=17), feeds)
    assert_same(got, native_result(op, dtype, attrs, feeds))


def scatter_grid():
    for dtype in SCATTER_DTYPES:
        for reduction in ["none", "add", "mul", "max", "min"]:
            if dtype == np.bool_ and reduction in ("max", "min", "mul"):
                continue  # ONNX Runtime has no bool max/min/mul reduction to compare with
            yield pytest.param(
                dtype, reduction, id=f"{np.dtype(dtype).name}-{reduction}"
            )


@pytest.mark.parametrize("dtype,reduction", list(scatter_grid()))
def test_scatter_fallback_matches_native(dtype, reduction):
    rng = np.random.default_rng(len(reduction))
    attrs = {"axis": 1, "reduction": reduction}
    feeds = feeds_for("ScatterElements", dtype, rng)
    got = fallback_run(
        model_with("ScatterElements", dtype, attrs, domain=DOMAIN, opset=17), feeds
    )
    if dtype in (np.float16, ml_dtypes.bfloat16) and reduction in (
        "none",
        "max",
        "min",
    ):
        # These only move values: ORT's float32 kernel, cast back, is the exact expectation.
        f32 = {k: (v.astype(np.float32) if k != "i" else v) for k, v in feeds.items()}
        want = (
            native_result("ScatterElements", np.float32, attrs, f32)
            .astype(np.dtype(dtype))
            .astype(got.dtype)
        )
    else:
        want = native_result("ScatterElements", dtype, attrs, feeds)
    assert_same(got, want)


@pytest.mark.parametrize("op", ["CumProd", "ScatterElements"])
def test_int32_axis_and_indices(op):
    rng = np.random.default_rng(0)
    attrs = (
        {"axis": 1, "reduction": "add"} if op == "ScatterElements" else {"exclusive": 1}
    )
    feeds = feeds_for(op, np.float32, rng, axis=1, axis_dtype=np.int32)
    got = fallback_run(
        model_with(op, np.float32, attrs, domain=DOMAIN, opset=17, axis_dtype=np.int32),
        feeds,
    )
    assert_same(got, native_result(op, np.float32, attrs, feeds, axis_dtype=np.int32))


def test_user_model_is_not_changed():
    model = model_with("CumProd", np.float16, {"exclusive": 1}, domain=DOMAIN, opset=17)
    before = model.SerializeToString()
    ort_dml_ops.InferenceSession(model, providers=["CPUExecutionProvider"])
    assert model.SerializeToString() == before


def test_model_as_path_bytes_and_proto(tmp_path):
    model = model_with("CumProd", np.float32, {}, domain=DOMAIN, opset=17)
    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    feeds = feeds_for("CumProd", np.float32, np.random.default_rng(1))
    want = native_result("CumProd", np.float32, {}, feeds)
    for source in (model, model.SerializeToString(), str(path), path):
        assert_same(fallback_run(source, feeds), want)


def test_registration_is_idempotent_across_imports_and_sessions():
    path = registry.register()
    count = len(registry._state()["kernels"])
    reloaded = importlib.reload(registry)
    assert reloaded.register() == path
    importlib.import_module("ort_dml_ops.fallback").register()
    assert len(registry._state()["kernels"]) == count
    model = model_with("CumSum", np.float32, {}, domain=DOMAIN, opset=17)
    feeds = feeds_for("CumSum", np.float32, np.random.default_rng(2))
    want = native_result("CumSum", np.float32, {}, feeds)
    for _ in range(5):
        assert_same(fallback_run(model, feeds), want)


def test_shared_session_options_register_the_library_once():
    import onnxruntime as ort

    so = ort.SessionOptions()
    model = model_with("CumSum", np.float32, {}, domain=DOMAIN, opset=17)
    for _ in range(2):
        ort_dml_ops.InferenceSession(
            model, providers=["CPUExecutionProvider"], sess_options=so
        )


def test_other_pyops_in_the_process_keep_the_stock_path_and_strings_work():
    from onnxruntime_extensions import PyCustomOpDef, onnx_op

    @onnx_op(
        op_type="StringUpperForTest",
        inputs=[PyCustomOpDef.dt_string],
        outputs=[PyCustomOpDef.dt_string],
    )
    def upper(s):
        return np.array([v.upper() for v in s.reshape(-1)], dtype=object).reshape(
            s.shape
        )

    node = helper.make_node(
        "StringUpperForTest", ["s"], ["t"], domain="ai.onnx.contrib"
    )
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info("s", TensorProto.STRING, [2])],
        [helper.make_tensor_value_info("t", TensorProto.STRING, [2])],
    )
    model = helper.make_model(
        graph,
        opset_imports=[
            helper.make_opsetid("", 17),
            helper.make_opsetid("ai.onnx.contrib", 1),
        ],
    )
    model.ir_version = 10
    import onnxruntime as ort

    registry.register()  # our fast hook is installed
    so = ort.SessionOptions()
    so.register_custom_ops_library(registry.get_library_path())
    out = ort.InferenceSession(
        model.SerializeToString(), so, providers=["CPUExecutionProvider"]
    ).run(None, {"s": np.array(["ab", "cd"], dtype=object)})[0]
    assert out.tolist() == ["AB", "CD"]


def test_string_scatter_fallback():
    node = helper.make_node(
        "ScatterElements", ["d", "i", "u"], ["y"], domain=DOMAIN, axis=0
    )
    graph = helper.make_graph(
        [node],
        "g",
        [
            helper.make_tensor_value_info("d", TensorProto.STRING, [3]),
            helper.make_tensor_value_info("i", TensorProto.INT64, [2]),
            helper.make_tensor_value_info("u", TensorProto.STRING, [2]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.STRING, [3])],
    )
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(DOMAIN, 1)],
    )
    feeds = {
        "d": np.array(["a", "b", "c"], object),
        "i": np.array([2, -3]),
        "u": np.array(["x", "y"], object),
    }
    native = helper.make_model(
        helper.make_graph(
            [helper.make_node("ScatterElements", ["d", "i", "u"], ["y"], axis=0)],
            "g",
            list(graph.input),
            list(graph.output),
        ),
        opset_imports=[helper.make_opsetid("", 18)],
    )
    native.ir_version = 10
    assert fallback_run(model, feeds).tolist() == run_ort_cpu(native, feeds).tolist()


def test_fallback_inside_an_if_subgraph():
    def branch(name, exclusive):
        n = helper.make_node(
            "CumProd", ["x", "axis"], [f"{name}_y"], domain=DOMAIN, exclusive=exclusive
        )
        return helper.make_graph(
            [n],
            name,
            [],
            [
                helper.make_tensor_value_info(
                    f"{name}_y", TensorProto.FLOAT, [None, None]
                )
            ],
        )

    node = helper.make_node(
        "If", ["c"], ["y"], then_branch=branch("then", 1), else_branch=branch("else", 0)
    )
    graph = helper.make_graph(
        [node],
        "g",
        [
            helper.make_tensor_value_info("c", TensorProto.BOOL, []),
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3]),
            helper.make_tensor_value_info("axis", TensorProto.INT64, []),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
    )
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(DOMAIN, 1)],
    )
    x = np.array([[1, 2, 3], [4, 5, 6]], np.float32)
    for cond, exclusive in ((True, 1), (False, 0)):
        feeds = {"c": np.array(cond), "x": x, "axis": np.array(1)}
        want = native_result(
            "CumProd",
            np.float32,
            {"exclusive": exclusive},
            {"x": x.reshape(2, 3, 1), "axis": np.array(1)},
        )
        assert_same(fallback_run(model, feeds), want.reshape(2, 3))


@pytest.mark.parametrize(
    "op,feeds,message",
    [
        (
            "CumProd",
            {"x": np.ones((2, 3, 4), np.float32), "axis": np.array(5)},
            r"CumProd.*axis 5 is out of range for rank 3",
        ),
        (
            "CumProd",
            {"x": np.ones((2, 3, 4), np.float32), "axis": np.array([1, 2])},
            r"CumProd.*scalar or a 1-element",
        ),
        (
            "ScatterElements",
            {
                "x": np.ones((2, 3, 4), np.float32),
                "i": np.full((2, 3, 4), 9),
                "u": np.ones((2, 3, 4), np.float32),
            },
            r"ScatterElements.*index 9 is out of range for axis 1 of size 3",
        ),
    ],
)
def test_bad_runtime_input_gives_an_ort_error_naming_op_and_problem(op, feeds, message):
    attrs = {"axis": 1} if op == "ScatterElements" else {}
    model = model_with(op, np.float32, attrs, domain=DOMAIN, opset=17)
    if op == "CumProd" and feeds["axis"].ndim:
        model.graph.input[1].type.tensor_type.shape.dim.add()
    session = ort_dml_ops.InferenceSession(model, providers=["CPUExecutionProvider"])
    with pytest.raises(Exception, match=message):
        session.run(None, feeds)


def test_unsupported_dtype_is_a_clear_user_error():
    node = helper.make_node("CumProd", ["x", "axis"], ["y"], domain=DOMAIN)
    graph = helper.make_graph(
        [node],
        "g",
        [
            helper.make_tensor_value_info("x", TensorProto.INT8, [3]),
            helper.make_tensor_value_info("axis", TensorProto.INT64, []),
        ],
        [helper.make_tensor_value_info("y", TensorProto.INT8, [3])],
    )
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(DOMAIN, 1)],
    )
    with pytest.raises(
        ort_dml_ops.UserError, match="element type int8 is not supported"
    ):
        ort_dml_ops.InferenceSession(model)


def test_default_providers_and_warning_for_an_inactive_one():
    model = model_with("CumSum", np.float32, {}, domain=DOMAIN, opset=17)
    import onnxruntime as ort

    session = ort_dml_ops.InferenceSession(model)
    best = [
        p
        for p in ("DmlExecutionProvider", "CUDAExecutionProvider")
        if p in ort.get_available_providers()
    ]
    assert session.get_providers()[0] == (best[0] if best else "CPUExecutionProvider")
    if "CUDAExecutionProvider" not in ort.get_available_providers():
        with pytest.warns(ProviderWarning, match="CUDAExecutionProvider"):
            ort_dml_ops.InferenceSession(model, providers=["cuda", "cpu"])


def test_dml_is_requested_with_a_device_id():
    from ort_dml_ops.session import resolve_providers

    assert resolve_providers(["dml", "cpu"]) == [
        ("DmlExecutionProvider", {"device_id": "0"}),
        "CPUExecutionProvider",
    ]
    assert resolve_providers(["DmlExecutionProvider"]) == [
        ("DmlExecutionProvider", {"device_id": "0"})
    ]


def test_session_keeps_working_after_a_runtime_error():
    model = model_with("CumProd", np.float32, {}, domain=DOMAIN, opset=17)
    session = ort_dml_ops.InferenceSession(model, providers=["CPUExecutionProvider"])
    good = feeds_for("CumProd", np.float32, np.random.default_rng(4))
    with pytest.raises(Exception, match="axis 7 is out of range"):
        session.run(None, {**good, "axis": np.array(7)})
    assert_same(
        session.run(None, good)[0], native_result("CumProd", np.float32, {}, good)
    )


def test_kernels_still_run_if_another_library_reinstalls_the_stock_hook():
    from onnxruntime_extensions import PyCustomOpDef, _ocos

    model = model_with("CumProd", np.float32, {"reverse": 1}, domain=DOMAIN, opset=17)
    session = ort_dml_ops.InferenceSession(model, providers=["CPUExecutionProvider"])
    feeds = feeds_for("CumProd", np.float32, np.random.default_rng(5))
    PyCustomOpDef.install_hooker(_ocos._on_pyop_invocation)
    try:
        got = session.run(None, feeds)[0]
    finally:
        PyCustomOpDef.install_hooker(registry._fast_invoke)
    assert_same(got, native_result("CumProd", np.float32, {"reverse": 1}, feeds))
