"""The named run-time dims of converted models (converter/dim_names.py, passes/dim_names.py).

A name written into value_info tells ONNX Runtime's allocation planner that two dims are equal,
and it then hands one tensor's buffer to another: a name shared by dims that differ at run time
fails the run ("Shape mismatch attempting to re-use buffer"). So each case runs the converted
model on ONNX Runtime at several run-time shapes (zeros and ones included), with every named
value also a graph output, and checks against the shapes ONNX Runtime itself produced that each
name stands for one size per run; the outputs are checked against ORT's CPU kernel on the
original model."""

from __future__ import annotations

import collections

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

from ort_dml_ops.conversion import convert
from ort_dml_ops.converter.dim_names import PREFIX, Disagreement, dim_names
from tests.real_models import REAL_MODELS

_SO = ort.SessionOptions()
_SO.log_severity_level = 3


def _named_infos(model: onnx.ModelProto) -> list[onnx.ValueInfoProto]:
    return [
        vi
        for vi in model.graph.value_info
        if any(d.dim_param.startswith(PREFIX) for d in vi.type.tensor_type.shape.dim)
    ]


def _sizes_per_name(model: onnx.ModelProto, feeds: dict) -> dict[str, set[int]]:
    """Run `model` with every named value as an output: the sizes each name took."""
    infos = _named_infos(model)
    exposed = onnx.ModelProto()
    exposed.CopyFrom(model)
    outputs = {o.name for o in exposed.graph.output}
    for vi in infos:
        if vi.name not in outputs:
            out = exposed.graph.output.add()
            out.name = vi.name
            out.type.tensor_type.elem_type = vi.type.tensor_type.elem_type
    options = ort.SessionOptions()
    options.log_severity_level = 3
    # ORT's optimizers could fold or fuse a value away; these shapes are the kernels' own
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(
        exposed.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )
    got = dict(zip((o.name for o in session.get_outputs()), session.run(None, feeds)))
    sizes: dict[str, set[int]] = collections.defaultdict(set)
    for vi in infos:
        for axis, dim in enumerate(vi.type.tensor_type.shape.dim):
            if dim.dim_param.startswith(PREFIX):
                sizes[dim.dim_param].add(got[vi.name].shape[axis])
    return sizes


def _two_scatters(reduction: str) -> onnx.ModelProto:
    """Two scatters of one reduction into data of one symbolic shape, with indices of
    another: the lowered graphs share their sizes."""
    nodes = [
        helper.make_node(
            "ScatterElements", ["x", "i", "u"], ["y1"], axis=0, reduction=reduction
        ),
        helper.make_node(
            "ScatterElements", ["x2", "i", "u2"], ["y2"], axis=0, reduction=reduction
        ),
    ]
    f = TensorProto.FLOAT
    graph = helper.make_graph(
        nodes,
        "g",
        [
            helper.make_tensor_value_info("x", f, ["rows", "cols"]),
            helper.make_tensor_value_info("x2", f, ["rows", "cols"]),
            helper.make_tensor_value_info("i", TensorProto.INT64, ["k", "cols"]),
            helper.make_tensor_value_info("u", f, ["k", "cols"]),
            helper.make_tensor_value_info("u2", f, ["k", "cols"]),
        ],
        [
            helper.make_tensor_value_info("y1", f, ["rows", "cols"]),
            helper.make_tensor_value_info("y2", f, ["rows", "cols"]),
        ],
    )
    return helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=9
    )


def _feeds(rows: int, cols: int, k: int, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {
        "x": rng.standard_normal((rows, cols)).astype(np.float32),
        "x2": rng.standard_normal((rows, cols)).astype(np.float32),
        "i": rng.integers(0, max(rows, 1), (k, cols)).astype(np.int64),
        "u": rng.standard_normal((k, cols)).astype(np.float32),
        "u2": rng.standard_normal((k, cols)).astype(np.float32),
    }


@pytest.mark.parametrize("target", ["dml", "webgpu"])
@pytest.mark.parametrize("reduction", ["none", "add", "mul", "max", "min"])
def test_each_name_is_one_size_in_every_run(reduction, target):
    model = _two_scatters(reduction)
    converted = convert(model, target, strategy="lower").model
    onnx.checker.check_model(converted, full_check=True)
    assert _named_infos(converted), "the lowered values carry named dims"
    for rows, cols, k in [(5, 3, 7), (1, 1, 1), (4, 2, 0), (300, 2, 700)]:
        if reduction == "none":
            k = min(k, rows)  # ORT's order on duplicates is its loop's: distinct rows
        feeds = _feeds(rows, cols, k, seed=rows + k)
        if reduction == "none":
            feeds["i"] = np.stack(
                [np.random.default_rng(k).permutation(rows)[:k]] * cols, 1
            ).astype(np.int64)
        spread = {
            n: s for n, s in _sizes_per_name(converted, feeds).items() if len(s) > 1
        }
        assert spread == {}
        want = ort.InferenceSession(
            model.SerializeToString(), _SO, providers=["CPUExecutionProvider"]
        ).run(None, feeds)
        got = ort.InferenceSession(
            converted.SerializeToString(), _SO, providers=["CPUExecutionProvider"]
        ).run(None, feeds)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)


def test_scatters_of_one_shape_name_their_temporaries_alike():
    """What lets the planner reuse: the second scatter's values carry the first one's names."""
    converted = convert(_two_scatters("add"), "dml", strategy="lower").model
    shapes = collections.Counter(
        (
            vi.type.tensor_type.elem_type,
            tuple(d.dim_param or d.dim_value for d in vi.type.tensor_type.shape.dim),
        )
        for vi in _named_infos(converted)
    )
    assert max(shapes.values()) >= 4


@pytest.mark.parametrize("m", REAL_MODELS, ids=lambda m: m.name)
def test_named_dims_of_the_corpus_hold_at_its_inputs(m):
    converted = convert(m.load(), "dml", strategy="lower").model
    spread = {
        n: s for n, s in _sizes_per_name(converted, m.inputs).items() if len(s) > 1
    }
    assert spread == {}


def test_a_static_dim_the_numbering_contradicts_names_nothing():
    """onnx's inference is the check on the rules: a contradiction raises, and the pass then
    writes the model as before."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n"])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])
    # a value_info that says [3] where the numbering follows Identity(x): n
    model = helper.make_model(
        helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "g", [x], [y]),
        opset_imports=[helper.make_opsetid("", 18)],
    )
    model.graph.value_info.append(
        helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])
    )
    model.graph.input[0].type.tensor_type.shape.dim[0].Clear()
    model.graph.input[0].type.tensor_type.shape.dim[0].dim_value = 2
    with pytest.raises(Disagreement):
        dim_names(model, ["y"])


def test_one_count_reached_two_ways_gets_one_name():
    """Reshape(x, [-1]) of an [a, b] tensor and Range(0, Size(x)) are both a·b long: the
    numbering's canonical product gives them one name (and b·a is the same product)."""
    f, i64 = TensorProto.FLOAT, TensorProto.INT64
    nodes = [
        helper.make_node("Reshape", ["x", "minus_one"], ["flat"]),
        helper.make_node("Size", ["xt"], ["count"]),
        helper.make_node("Range", ["zero", "count", "one"], ["positions"]),
        helper.make_node("Identity", ["flat"], ["flat_out"]),
        helper.make_node("Identity", ["positions"], ["positions_out"]),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [
            helper.make_tensor_value_info("x", f, ["a", "b"]),
            helper.make_tensor_value_info("xt", f, ["b", "a"]),
        ],
        [
            helper.make_tensor_value_info("flat_out", f, None),
            helper.make_tensor_value_info("positions_out", i64, None),
        ],
        [
            helper.make_tensor("minus_one", i64, [1], [-1]),
            helper.make_tensor("zero", i64, [], [0]),
            helper.make_tensor("one", i64, [], [1]),
        ],
    )
    model = onnx.shape_inference.infer_shapes(
        helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    )
    names = dim_names(model, ["flat", "positions"])
    assert names["flat"] == names["positions"]
    assert names["flat"][0].startswith(PREFIX)
