"""opset (converter/rules/opset.py): dml serves ai.onnx up to 21; a model importing 22-26 is
moved to 21 when every node reads the same at 21, ONNX CumProd-26 becomes DOMAIN::CumProd,
and a node that has no opset-21 twin keeps the model's opset (the report names it). Outputs
against ORT's CPU kernels on the unconverted model."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

from ort_dml_ops import DOMAIN
from ort_dml_ops.conversion import convert

from ._util import op_types, run_cpu, single_op


def _opset(model) -> dict:
    return {o.domain: o.version for o in model.opset_import}


@pytest.mark.parametrize("opset", [22, 23, 24, 25, 26])
def test_cumsum_model_moves_to_21(opset):
    model = single_op(
        "CumSum",
        [("x", np.float32, [3, 4])],
        {"reverse": 1},
        opset=opset,
        inits={"axis": np.array(1, np.int64)},
    )
    result = convert(model, "dml")
    assert result.report.opset["from"] == opset and result.report.opset["to"] == 21
    assert _opset(result.model)[""] == 21
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    np.testing.assert_array_equal(
        run_cpu(result.model, {"x": x})[0], run_cpu(model, {"x": x})[0]
    )


def test_onnx_cumprod_26_becomes_the_domain_op():
    model = single_op(
        "CumProd",
        [("x", np.float32, [2, 5])],
        {"exclusive": 1},
        opset=26,
        inits={"axis": np.array(1, np.int64)},
    )
    result = convert(model, "dml", strategy="fallback")
    assert _opset(result.model)[""] == 21 and DOMAIN in _opset(result.model)
    assert op_types(result.model) == {(DOMAIN, "CumProd")}


def test_a_node_without_an_opset_21_twin_keeps_the_opset():
    # RMSNormalization exists from opset 23 only
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])
    s = helper.make_tensor_value_info("s", TensorProto.FLOAT, [4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])
    nodes = [
        helper.make_node("RMSNormalization", ["x", "s"], ["n"], name="rms"),
        helper.make_node("CumSum", ["n", "axis"], ["y"], name="cs"),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [x, s],
        [y],
        [helper.make_tensor("axis", TensorProto.INT64, [], [1])],
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 23)], ir_version=10
    )
    result = convert(model, "dml")
    assert _opset(result.model)[""] == 23
    assert result.report.opset["to"] == 23 and "rms" in result.report.opset["reason"]


def test_other_targets_keep_the_opset():
    model = single_op(
        "CumSum",
        [("x", np.float32, [3])],
        {},
        opset=23,
        inits={"axis": np.array(0, np.int64)},
    )
    for target in ("cpu", "cuda", "webgpu"):
        assert _opset(convert(model, target).model)[""] == 23


# -- 18–26 -> 17: a scatter without a reduction gets the DML EP's own kernel -----------------


def _graph_model(nodes, inputs, outputs, inits=(), opset=20):
    """A model of `nodes`: inputs / outputs as (name, numpy dtype, shape)."""

    def info(name, dtype, shape):
        elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
        return helper.make_tensor_value_info(name, elem, shape)

    graph = helper.make_graph(
        nodes,
        "g",
        [info(*i) for i in inputs],
        [info(*o) for o in outputs],
        [
            helper.make_tensor(
                n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape, a.ravel()
            )
            for n, a in inits
        ],
    )
    return helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=10
    )


def _scatter_after_reduce(opset, axes_input, reduction="none", extra=()):
    """y = ScatterElements(data, indices, ReduceMax(updates, axes, keepdims=1) + updates):
    a Reduce*-18 (axes an input: a constant, or a graph input) before a scatter."""
    inits = [("axes", np.array([1], np.int64))] if axes_input == "const" else []
    inputs = [
        ("data", np.float32, [4, 5]),
        ("indices", np.int64, [4, 3]),
        ("updates", np.float32, [4, 3]),
    ]
    if axes_input == "input":
        inputs.append(("axes", np.int64, [1]))
    nodes = [
        helper.make_node(
            "ReduceMax", ["updates", "axes"], ["peak"], keepdims=1, name="peak"
        ),
        helper.make_node("Add", ["updates", "peak"], ["shifted"]),
        helper.make_node(
            "ScatterElements",
            ["data", "indices", "shifted"],
            ["y"],
            axis=1,
            reduction=reduction,
            name="scatter",
        ),
        *extra,
    ]
    return _graph_model(nodes, inputs, [("y", np.float32, [4, 5])], inits, opset)


def _feeds(rng, axes=False):
    feeds = {
        "data": rng.normal(size=(4, 5)).astype(np.float32),
        # a permutation per row, some negative: every index once
        "indices": np.stack([rng.permutation(5)[:3] for _ in range(4)])
        - 5 * (rng.random((4, 3)) < 0.5),
        "updates": rng.normal(size=(4, 3)).astype(np.float32),
    }
    if axes:
        feeds["axes"] = np.array([1], np.int64)
    return feeds


@pytest.mark.parametrize("opset", [18, 19, 20, 21, 22])
def test_a_scatter_without_reduction_moves_the_model_to_17_for_the_dml_kernel(opset):
    """At 18 on no DML kernel serves ScatterElements (registered at 11, 13, 16 only): the model
    moves to 17, the scatter stays itself (native), a constant Reduce*-18 axes input becomes
    Reduce*-13's attribute, and the outputs are ORT's on the original, bit for bit."""
    model = _scatter_after_reduce(opset, "const")
    result = convert(model, "dml")
    assert result.report.opset["to"] == 17 and result.report.opset["changed"]
    reason = result.report.opset["reason"]
    assert "ScatterElements / ScatterND without a reduction" in reason
    # the DML kernel's unordered writes of repeated indices are said, not left silent
    assert "repeated indices in no fixed order" in reason
    assert "--strategy lower" in reason
    assert _opset(result.model)[""] == 17
    assert [n.action for n in result.report.nodes] == ["native"]
    peak = next(n for n in result.model.graph.node if n.op_type == "ReduceMax")
    assert list(peak.input) == ["updates"]
    assert [list(a.ints) for a in peak.attribute if a.name == "axes"] == [[1]]
    feeds = _feeds(np.random.default_rng(opset))
    (want,) = run_cpu(model, feeds)
    (got,) = run_cpu(result.model, feeds)
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


def test_scatternd_without_reduction_moves_too():
    data = ("data", np.float32, [6, 2])
    nodes = [helper.make_node("ScatterND", ["data", "indices", "updates"], ["y"])]
    model = _graph_model(
        nodes,
        [data, ("indices", np.int64, [3, 1]), ("updates", np.float32, [3, 2])],
        [("y", np.float32, [6, 2])],
        opset=18,
    )
    result = convert(model, "dml")
    assert result.report.opset["to"] == 17
    assert [n.action for n in result.report.nodes] == ["native"]
    feeds = {
        "data": np.arange(12, dtype=np.float32).reshape(6, 2),
        "indices": np.array([[4], [-6], [2]], np.int64),
        "updates": -np.arange(6, dtype=np.float32).reshape(3, 2),
    }
    np.testing.assert_array_equal(
        run_cpu(result.model, feeds)[0], run_cpu(model, feeds)[0]
    )


@pytest.mark.parametrize(
    "case,blocker",
    [
        ("axes-input", "peak"),  # axes from the graph: no attribute to move it into
        ("scatter-max", "reduction max exists from ScatterElements-18"),
        ("split-num-outputs", "Split"),
        ("pad-axes", "Pad"),
        ("pad-wrap", "Pad"),  # mode wrap: from Pad-19 on
    ],
)
def test_what_reads_otherwise_at_17_keeps_the_opset(case, blocker):
    """A node whose opset-17 schema would mean something else (or nothing) keeps the model at
    its opset; the report names it, and the scatter is not native (at these sizes auto keeps it
    on ORT's CPU kernel)."""
    extra: list = []
    axes = "input" if case == "axes-input" else "const"
    if case == "scatter-max":
        extra = [
            helper.make_node(
                "ScatterElements",
                ["data", "indices", "updates"],
                ["m"],
                axis=1,
                reduction="max",
            )
        ]
    if case == "split-num-outputs":
        extra = [
            helper.make_node("Split", ["data"], ["s0", "s1"], axis=0, num_outputs=2)
        ]
    if case == "pad-axes":
        extra = [helper.make_node("Pad", ["data", "pads", "", "pad_axes"], ["p"])]
    if case == "pad-wrap":
        extra = [helper.make_node("Pad", ["data", "pads4"], ["p"], mode="wrap")]
    model = _scatter_after_reduce(20, axes, extra=extra)
    if case.startswith("pad"):
        model.graph.initializer.extend(
            [
                helper.make_tensor("pads4", TensorProto.INT64, [4], [0, 1, 0, 1]),
                helper.make_tensor("pads", TensorProto.INT64, [2], [1, 1]),
                helper.make_tensor("pad_axes", TensorProto.INT64, [1], [1]),
            ]
        )
    result = convert(model, "dml")
    assert result.report.opset["to"] == 20 and not result.report.opset["changed"]
    assert blocker in result.report.opset["reason"]
    scatter = next(n for n in result.report.nodes if n.name == "scatter")
    assert scatter.action == "cpu", scatter.reason
    feeds = _feeds(np.random.default_rng(1), axes=axes == "input")
    np.testing.assert_array_equal(
        run_cpu(result.model, feeds)[0], run_cpu(model, feeds)[0]
    )


@pytest.mark.parametrize("strategy", ["lower", "fallback", "native"])
def test_only_auto_moves_to_17(strategy):
    """lower lowers the scatter and fallback keeps it on the CPU at any opset: no reason to move;
    native moves nothing."""
    model = _scatter_after_reduce(18, "const")
    result = convert(model, "dml", strategy=strategy)
    assert _opset(result.model)[""] == 18 and not result.report.opset["changed"]


def test_a_reduction_scatter_alone_keeps_the_opset():
    """ScatterElements add has no DML kernel at any opset (QueryScatter): nothing to gain."""
    model = _scatter_after_reduce(20, "const", reduction="add")
    result = convert(model, "dml")
    assert result.report.opset == {"from": 20, "to": 20, "changed": False, "reason": ""}


def test_a_pad_in_an_old_mode_moves_with_the_scatter():
    """Pad-19 with mode reflect and no axes reads the same as Pad-13: the model moves."""
    pad = helper.make_node("Pad", ["data", "pads4"], ["p"], mode="reflect")
    model = _scatter_after_reduce(20, "const", extra=[pad])
    model.graph.initializer.append(
        helper.make_tensor("pads4", TensorProto.INT64, [4], [0, 1, 0, 1])
    )
    model.graph.output.append(
        helper.make_tensor_value_info("p", TensorProto.FLOAT, [4, 7])
    )
    result = convert(model, "dml")
    assert result.report.opset["to"] == 17
    feeds = _feeds(np.random.default_rng(2))
    for got, want in zip(run_cpu(result.model, feeds), run_cpu(model, feeds)):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize(
    "indices_dims",
    [
        ["updates", 3],
        [6, 3],
    ],  # a length the graph does not bound; one longer than the data's
)
def test_a_scatter_directml_may_refuse_keeps_the_opset(indices_dims):
    """DirectML fails a ScatterElements whose indices are longer than the data on its axis
    (80070057 on the lane, at session creation or run), so a model whose shapes do not rule
    that out stays where the scatter is lowered; the report says why."""
    data = ("data", np.float32, ["rows", 3] if indices_dims[0] == "updates" else [5, 3])
    node = helper.make_node(
        "ScatterElements", ["data", "indices", "updates"], ["y"], axis=0
    )
    model = _graph_model(
        [node],
        [
            data,
            ("indices", np.int64, indices_dims),
            ("updates", np.float32, indices_dims),
        ],
        [("y", np.float32, data[2])],
        opset=20,
    )
    result = convert(model, "dml", strategy="auto")
    assert result.report.opset["to"] == 20 and not result.report.opset["changed"]
    assert "indices exceed the data on its axis" in result.report.opset["reason"]
    assert [n.action for n in result.report.nodes] != ["native"]


def test_a_scatter_in_a_local_function_keeps_the_opset():
    """A model-local function's ScatterElements has no shapes to prove it safe by (bodies are
    inlined after the opset step): the model keeps its opset even where the main graph's
    scatter alone would move it, and the outputs stay ORT's."""
    body = helper.make_function(
        "local",
        "Put",
        ["d", "i", "u"],
        ["o"],
        [helper.make_node("ScatterElements", ["d", "i", "u"], ["o"], axis=1)],
        opset_imports=[helper.make_opsetid("", 20)],
    )
    main = _scatter_after_reduce(
        20,
        "const",
        extra=[
            helper.make_node(
                "Put", ["data", "indices", "updates"], ["z"], domain="local"
            )
        ],
    )
    main.functions.append(body)
    main.opset_import.append(helper.make_opsetid("local", 1))
    main.graph.output.append(
        helper.make_tensor_value_info("z", TensorProto.FLOAT, [4, 5])
    )
    result = convert(main, "dml")
    assert result.report.opset["to"] == 20, result.report.opset
    assert "Put/ScatterElements" in result.report.opset["reason"]
    feeds = _feeds(np.random.default_rng(3))
    for got, want in zip(run_cpu(result.model, feeds), run_cpu(main, feeds)):
        np.testing.assert_array_equal(got, want)
