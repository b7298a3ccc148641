"""rules/narrow.py (WebGPU's exact int32 dtype rules): every converted model is run on ORT's CPU
EP and compared with ORT's own kernel on the original (or numpy), bit for bit; the refusals say
why; a sum whose bound is known only at run time fails the run, never wraps."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

from ort_dml_ops.conversion import convert

from ._util import run_cpu, single_op

SMALL = [np.bool_, np.int8, np.uint8, np.int16, np.uint16]


def _node(result):
    (node,) = result.report.nodes
    return node


#: bool max / min: ORT's CPU kernel refuses them (test_bool_max_min_are_not_narrowed)
SMALL_CASES = [
    (d, r)
    for d in SMALL
    for r in ("none", "max", "min")
    if d is not np.bool_ or r == "none"
]


@pytest.mark.parametrize(
    "dtype, reduction",
    SMALL_CASES,
    ids=[f"{np.dtype(d).name}-{r}" for d, r in SMALL_CASES],
)
def test_small_scatter_elements_exact(dtype, reduction):
    rng = np.random.default_rng(3)
    info = np.iinfo(dtype) if dtype is not np.bool_ else None
    lo, hi = (0, 2) if info is None else (info.min, info.max + 1)
    x = rng.integers(lo, hi, [4, 6]).astype(dtype)
    idx = np.array([[0, 5, 5, 2], [1, 1, 3, 0], [4, 4, 4, 4], [2, 0, 1, 5]])
    u = rng.integers(lo, hi, [4, 4]).astype(dtype)
    m = single_op(
        "ScatterElements",
        [("x", dtype, [4, 6]), ("i", np.int64, [4, 4]), ("u", dtype, [4, 4])],
        {"axis": 1, "reduction": reduction},
        opset=18,
    )
    r = convert(m, "webgpu")
    node = _node(r)
    assert node.action == "cast" and "int32-narrow" in node.reason, node.reason
    feeds = {"x": x, "i": idx, "u": u}
    if reduction == "none":
        idx = np.array([[0, 5, 3, 2], [1, 4, 3, 0], [4, 2, 0, 1], [2, 0, 1, 5]])
        feeds["i"] = idx
    np.testing.assert_array_equal(run_cpu(r.model, feeds)[0], run_cpu(m, feeds)[0])


def test_bool_scatter_nd_exact():
    m = single_op(
        "ScatterND",
        [("x", np.bool_, [5, 3]), ("i", np.int64, [2, 1]), ("u", np.bool_, [2, 3])],
        opset=18,
    )
    r = convert(m, "webgpu")
    assert _node(r).action == "cast"
    feeds = {
        "x": np.zeros([5, 3], bool),
        "i": np.array([[4], [1]]),
        "u": np.array([[True, False, True], [True, True, False]]),
    }
    np.testing.assert_array_equal(run_cpu(r.model, feeds)[0], run_cpu(m, feeds)[0])


def _cumsum_of_cast(source: int, length) -> onnx.ModelProto:
    """y = CumSum(Cast(x, int64), 1): the position-ids pattern, x of `source` type."""
    g = h.make_graph(
        [
            h.make_node("Cast", ["x"], ["x64"], to=T.INT64),
            h.make_node("CumSum", ["x64", "axis"], ["y"]),
        ],
        "g",
        [h.make_tensor_value_info("x", source, [2, length])],
        [h.make_tensor_value_info("y", T.INT64, [2, length])],
        [nh.from_array(np.array(1, np.int64), "axis")],
    )
    return h.make_model(g, opset_imports=[h.make_opsetid("", 17)], ir_version=10)


def test_int64_cumsum_of_a_mask_exact_with_a_symbolic_length():
    m = _cumsum_of_cast(T.BOOL, "n")
    r = convert(m, "webgpu")
    node = _node(r)
    assert node.action == "cast" and "at run time" in node.note, node.note
    x = np.random.default_rng(0).integers(0, 2, [2, 300]).astype(bool)
    (y,) = run_cpu(r.model, {"x": x})
    assert y.dtype == np.int64
    np.testing.assert_array_equal(y, np.cumsum(x.astype(np.int64), 1))


def test_int64_cumsum_fails_the_run_where_int32_would_wrap():
    """uint16 values (up to 65535): more than 32768 of them along the axis may pass 2^31 - 1,
    so that run fails (the graph's guard); a shorter one is exact."""
    m = _cumsum_of_cast(T.UINT16, "n")
    # (forced: the plugin casts no uint16, so the Cast runs on the CPU and `auto` keeps the
    # CumSum beside it: test_auto_keeps_a_cast_between_cpu_neighbours_on_the_cpu)
    r = convert(m, "webgpu", strategy="lower")
    short = np.full([2, 32768], 65535, np.uint16)
    np.testing.assert_array_equal(
        run_cpu(r.model, {"x": short})[0], np.cumsum(short.astype(np.int64), 1)
    )
    with pytest.raises(Exception, match="IndexOrSizeOutOfRange"):
        run_cpu(r.model, {"x": np.ones([2, 32769], np.uint16)})


def test_int64_cumsum_refused_where_the_static_length_overflows():
    m = _cumsum_of_cast(T.UINT16, 40000)
    node = _node(convert(m, "webgpu"))
    assert node.action != "cast"
    assert any(r["code"] == "sum-may-overflow" for r in node.refusals), node.refusals


def test_int64_cumsum_of_an_int32_is_not_narrowed():
    """Any int32 value may be near its bound: no length keeps the sum in int32."""
    node = _node(convert(_cumsum_of_cast(T.INT32, "n"), "webgpu"))
    assert any(r["code"] == "range-too-wide" for r in node.refusals), node.refusals


def test_int64_cumsum_of_a_graph_input_is_not_narrowed():
    m = single_op(
        "CumSum", [("x", np.int64, [2, 5])], inits={"axis": np.array(1, np.int64)}
    )
    node = _node(convert(m, "webgpu"))
    assert any(r["code"] == "range-unknown" for r in node.refusals), node.refusals


def _counts_model(reduction: str, through: str) -> onnx.ModelProto:
    """An MoE router's expert counts: ScatterElements(zeros int64, experts, ones int64),
    the zeros an initializer or a ConstantOfShape, the ones an Expand of a constant."""
    nodes = [
        h.make_node("Shape", ["experts"], ["n"]),
        h.make_node("Expand", ["one", "n"], ["ones"]),
        h.make_node(
            "ScatterElements", ["zeros", "experts", "ones"], ["y"], reduction=reduction
        ),
    ]
    inits = [nh.from_array(np.array([1], np.int64), "one")]
    if through == "ConstantOfShape":
        nodes.insert(
            0,
            h.make_node(
                "ConstantOfShape",
                ["eight"],
                ["zeros"],
                value=nh.from_array(np.array([0], np.int64)),
            ),
        )
        inits.append(nh.from_array(np.array([8], np.int64), "eight"))
    else:
        inits.append(nh.from_array(np.zeros(8, np.int64), "zeros"))
    g = h.make_graph(
        nodes,
        "g",
        [h.make_tensor_value_info("experts", T.INT64, ["tokens"])],
        [h.make_tensor_value_info("y", T.INT64, [8])],
        inits,
    )
    return h.make_model(g, opset_imports=[h.make_opsetid("", 18)], ir_version=10)


@pytest.mark.parametrize("through", ["initializer", "ConstantOfShape"])
@pytest.mark.parametrize("reduction", ["add", "max", "none"])
def test_int64_expert_counts_exact(reduction, through):
    m = _counts_model(reduction, through)
    # (forced: with the ones made on the CPU, `auto` keeps the node there, see below)
    r = convert(m, "webgpu", strategy="lower")
    assert _node(r).action == "cast", _node(r).reason
    experts = np.array([3, 1, 3, 7, 0, 3, 1])
    if reduction == "none":
        experts = np.array([3, 1, 7, 0])
    (y,) = run_cpu(r.model, {"experts": experts})
    np.testing.assert_array_equal(y, run_cpu(m, {"experts": experts})[0])
    assert y.dtype == np.int64


@pytest.mark.parametrize("reduction", ["max", "min"])
def test_bool_max_min_are_not_narrowed(reduction):
    m = single_op(
        "ScatterElements",
        [("x", np.bool_, [6]), ("i", np.int64, [2]), ("u", np.bool_, [2])],
        {"reduction": reduction},
        opset=18,
    )
    node = _node(convert(m, "webgpu", strategy="lower"))
    assert any(
        r["rule"] == "int32-narrow" and r["code"] == "dtype-unsupported"
        for r in node.refusals
    ), node.refusals


def test_int64_mul_is_not_narrowed():
    node = _node(
        convert(_counts_model("mul", "initializer"), "webgpu", strategy="lower")
    )
    assert node.action != "cast"
    assert any(r["code"] == "dtype-unsupported" for r in node.refusals), node.refusals


def test_small_add_is_not_narrowed():
    m = single_op(
        "ScatterElements",
        [("x", np.int8, [6]), ("i", np.int64, [2]), ("u", np.int8, [2])],
        {"reduction": "add"},
        opset=18,
    )
    node = _node(convert(m, "webgpu", strategy="lower"))
    assert node.action != "cast"
    assert any(r["rule"] == "int32-narrow" for r in node.refusals), node.refusals


def _masked_scatter(transposed: bool) -> onnx.ModelProto:
    """hf_top_p's mask update: a bool ScatterND whose data and updates come from bool
    Transposes (which the WebGPU plugin does not run) and whose result goes to one, or the bare
    node between the graph's inputs and output."""
    pre = "t_" if transposed else ""
    nodes = [h.make_node("ScatterND", [pre + "x", "i", pre + "u"], [pre + "y"])]
    data, updates = ([3, 5], [3, 2]) if transposed else ([5, 3], [2, 3])
    if transposed:
        nodes = [
            h.make_node("Transpose", ["x"], ["t_x"], perm=[1, 0]),
            h.make_node("Transpose", ["u"], ["t_u"], perm=[1, 0]),
            *nodes,
            h.make_node("Transpose", ["t_y"], ["y"], perm=[1, 0]),
        ]
    g = h.make_graph(
        nodes,
        "g",
        [
            h.make_tensor_value_info("x", T.BOOL, data),
            h.make_tensor_value_info("i", T.INT64, [2, 1]),
            h.make_tensor_value_info("u", T.BOOL, updates),
        ],
        [h.make_tensor_value_info("y", T.BOOL, data)],
    )
    return h.make_model(g, opset_imports=[h.make_opsetid("", 18)], ir_version=10)


def test_auto_keeps_a_cast_between_cpu_neighbours_on_the_cpu():
    """A cast rule moves the node onto the plugin between Casts; where its data is made and read
    on the CPU, that move copies more a run than ORT's CPU kernel, and `auto` leaves it there
    (the report's cost refusal names the count). `inspect` of the whole graph agrees: the cast
    version copies more than the original, auto's as much. The bare node, fed by the graph's
    inputs, is still cast."""
    from ort_dml_ops import inspect

    m = _masked_scatter(transposed=True)
    scatter = next(
        n for n in convert(m, "webgpu").report.nodes if n.op_type == "ScatterND"
    )
    assert scatter.action == "native", scatter.reason
    assert [r["code"] for r in scatter.refusals] == ["cpu-path-cheaper"]
    assert "its neighbours run on the CPU" in scatter.refusals[0]["message"]
    cast = convert(m, "webgpu", strategy="lower").model
    auto = convert(m, "webgpu").model
    original = inspect(m, "webgpu").copies
    assert inspect(cast, "webgpu").copies > original
    assert inspect(auto, "webgpu").copies == original
    bare = _masked_scatter(transposed=False)
    assert _node(convert(bare, "webgpu")).action == "cast"
    feeds = {
        "x": np.zeros([3, 5], bool),
        "i": np.array([[2], [0]]),
        "u": np.array([[True, False], [False, True], [True, True]]),
    }
    np.testing.assert_array_equal(run_cpu(auto, feeds)[0], run_cpu(m, feeds)[0])
