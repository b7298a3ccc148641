"""ORT's TransposeOptimizer as `inspect` models it (placement/transpose_optimizer.py), checked
against ONNX Runtime itself: for each small graph, the nodes `inspect --target cpu` lists as
running are exactly those ORT's CPU EP records (`session.record_ep_graph_assignment_info`), by
name and op. Names matter: a pushed Transpose's new nodes are named by ORT's name generator.
Each case also pins, on ORT's own record, whether the first Transpose was pushed away, so that
both outcomes of the cost check stay covered.
"""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto as T
from onnx import helper as h

from tests.test_placement_fusions import F32, _model, _predicted, _ran


def _transpose(src, dst, perm, name):
    return h.make_node("Transpose", [src], [dst], perm=perm, name=name)


def _kv_cache(shape_reader: bool):
    """A KV cache: Transpose -> single-input Concat -> Transpose (span_decoder's blocks). A
    second reader of the Concat (block 0's Shape) keeps ORT 1.31 from pushing."""
    nodes = [
        _transpose("x", "t1", [0, 2, 1, 3], "T1"),
        h.make_node("Concat", ["t1"], ["c"], axis=-2, name="C"),
        _transpose("c", "y", [0, 1, 3, 2], "T3"),
    ]
    outputs = [("y", F32)]
    if shape_reader:
        nodes.append(h.make_node("Shape", ["c"], ["s"], name="S"))
        outputs.append(("s", T.INT64))
    return _model(nodes, [("x", F32, ["a", "b", "c", "d"])], outputs)


def _broadcast():
    """Add with a lower-rank constant (reshaped and transposed in place) and Mul with a
    lower-rank graph input (an Unsqueeze and a Transpose added), between inverse Transposes."""
    nodes = [
        _transpose("x", "t", [0, 2, 1], "T0"),
        h.make_node("Add", ["t", "bias"], ["a"], name="A"),
        h.make_node("Mul", ["a", "z"], ["m"], name="M"),
        _transpose("m", "y", [0, 2, 1], "T1"),
    ]
    inputs = [("x", F32, [2, 3, 4]), ("z", F32, [4, 3])]
    return _model(nodes, inputs, [("y", F32)], [("bias", np.ones(3, np.float32))])


def _layer_norm():
    """A layer norm over channels between inverse Transposes (piper's, tashkeel's): ReduceMean,
    Sub, Add with a scalar, Sqrt, Div, Mul and Add with 1-D constants. Abs stands in for Pow so
    that ORT's LayerNormFusion (not modelled) leaves it alone."""
    nodes = [
        _transpose("x", "t", [0, 2, 1], "T0"),
        h.make_node("ReduceMean", ["t"], ["mean"], axes=[-1], name="RM"),
        h.make_node("Sub", ["t", "mean"], ["d"], name="Sub"),
        h.make_node("Abs", ["d"], ["p"], name="Abs"),
        h.make_node("ReduceMean", ["p"], ["var"], axes=[-1], name="RM1"),
        h.make_node("Add", ["var", "eps"], ["ve"], name="AddEps"),
        h.make_node("Sqrt", ["ve"], ["sd"], name="Sqrt"),
        h.make_node("Div", ["d", "sd"], ["n"], name="Div"),
        h.make_node("Mul", ["n", "gamma"], ["g"], name="Mul"),
        h.make_node("Add", ["g", "beta"], ["b"], name="Add"),
        _transpose("b", "y", [0, 2, 1], "T1"),
    ]
    inits = [
        ("eps", np.array(1e-5, np.float32)),
        ("gamma", np.arange(8, dtype=np.float32)),
        ("beta", np.ones(8, np.float32)),
    ]
    return _model(nodes, [("x", F32, ["n", 8, "t"])], [("y", F32)], inits)


def _glu():
    """Transpose -> Split -> Sigmoid / Mul -> Transpose (tashkeel's GLU): two outputs renamed."""
    nodes = [
        _transpose("x", "t", [0, 2, 1], "T0"),
        h.make_node("Split", ["t"], ["s0", "s1"], axis=1, num_outputs=2, name="Split"),
        h.make_node("Sigmoid", ["s1"], ["g"], name="Sig"),
        h.make_node("Mul", ["s0", "g"], ["m"], name="Mul"),
        _transpose("m", "y", [0, 2, 1], "T1"),
    ]
    return _model(nodes, [("x", F32, ["n", 8, "t"])], [("y", F32)], opset=18)


def _gather(indices_shape):
    """Gather from a Transpose: ORT 1.31 pushes through one with rank-0 indices only."""
    nodes = [
        _transpose("x", "t", [0, 2, 1], "T0"),
        h.make_node("Gather", ["t", "i"], ["g"], axis=0, name="G"),
        h.make_node("Relu", ["g"], ["y"], name="R"),
    ]
    inits = [("i", np.zeros(indices_shape, np.int64))]
    return _model(nodes, [("x", F32, ["a", "b", "c"])], [("y", F32)], inits)


#: (case, the first Transpose pushed away by ORT)
CASES = {
    "kv_cache": (_kv_cache(False), "T1"),
    "kv_cache_with_shape_reader": (_kv_cache(True), None),
    "broadcast_unsqueeze": (_broadcast(), "T0"),
    "layer_norm": (_layer_norm(), "T0"),
    "glu_split": (_glu(), "T0"),
    "gather_scalar_indices": (_gather([]), "T0"),
    "gather_vector_indices": (_gather([2]), None),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_inspect_lists_the_nodes_ort_runs(case):
    model, pushed = CASES[case]
    ran = _ran(model)
    names = {name for name, _ in ran}
    # the case exercises what it says (ORT's record decides)
    assert (pushed is None) == ("T1" in names if "kv_cache" in case else "T0" in names)
    assert _predicted(model) == ran
