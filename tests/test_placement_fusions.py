"""ORT's level-1 fusions that `inspect` models, each checked against ONNX Runtime itself.

For every small graph below, the nodes `inspect --target cpu` lists as running are exactly the
nodes ORT's CPU EP records in its assignment record (`session.record_ep_graph_assignment_info`),
by name and op: MatMulAddFusion (matmul_add_fusion.py), GemmTransposeFusion
(gemm_transpose_fusion.py), DivMulFusion and EliminateSlice (rules.py), ReshapeFusion's Concat
shapes (reshape_shape_fusion.py), ConstantSharing, which leaves subgraphs alone, and CSE, which
leaves DequantizeLinear alone (cse.py), EnsureUniqueDQForNodeUnit (qdq.py) and
QDQPropagationTransformer (qdq_propagation.py).
Each case says what ORT does with it; both outcomes (fused and left alone) are pinned, and the
record, not this file, decides which is right.
"""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

from ort_dml_ops import inspect

F32 = T.FLOAT


def _model(nodes, inputs, outputs, inits=(), opset=17):
    """`outputs`: (name, type) typed as onnx infers them, or (name, type, dims)."""
    g = h.make_graph(
        nodes,
        "g",
        [h.make_tensor_value_info(n, t, s) for n, t, s in inputs],
        [
            h.make_tensor_value_info(o[0], o[1], o[2] if len(o) > 2 else None)
            for o in outputs
        ],
        [nh.from_array(np.asarray(v), k) for k, v in inits],
    )
    # the IR version that brought the opset (8: 18, 9: 19 and 20, 10: 21)
    ir = 8 if opset <= 18 else 9 if opset <= 20 else 10
    m = h.make_model(g, opset_imports=[h.make_opsetid("", opset)], ir_version=ir)
    # the outputs typed as onnx infers them (the checker's full check wants their shapes)
    done = onnx.shape_inference.infer_shapes(m).graph
    inferred = {v.name: v for v in list(done.value_info) + list(done.output)}
    for out in m.graph.output:
        if out.name in inferred and not out.type.tensor_type.HasField("shape"):
            out.type.CopyFrom(inferred[out.name].type)
    onnx.checker.check_model(m, full_check=True)
    return m


def _ran(model) -> list:
    so = ort.SessionOptions()
    so.log_severity_level = 3
    so.add_session_config_entry("session.record_ep_graph_assignment_info", "1")
    s = ort.InferenceSession(
        model.SerializeToString(), so, providers=["CPUExecutionProvider"]
    )
    return sorted(
        (n.name, n.op_type)
        for sg in s.get_provider_graph_assignment_info()
        for n in sg.get_nodes()
    )


def _predicted(model) -> list:
    return sorted(
        (n.name, n.op_type) for n in inspect(model, "cpu").nodes if n.provider
    )


W = np.arange(24, dtype=np.float32).reshape(8, 3)
B3 = np.ones(3, np.float32)


def _matmul_add(a_shape, *, a_type=F32, w=W, bias=B3, extra=(), transpose_b=False):
    nodes = []
    inputs = [("a", a_type, a_shape)]
    inits = [("bias", bias)]
    if transpose_b:
        nodes.append(h.make_node("Transpose", ["wt"], ["w"], name="tr", perm=[1, 0]))
        inputs.append(("wt", a_type, list(w.T.shape)))
    else:
        inits.append(("w", w))
    nodes += [
        h.make_node("MatMul", ["a", "w"], ["m"], name="mm"),
        h.make_node("Add", ["m", "bias"], ["y"], name="add"),
        *extra,
    ]
    outputs = [("y", a_type)] + [(e.output[0], a_type) for e in extra]
    return _model(nodes, inputs, outputs, inits)


def _matmul_add_bias_input():
    """A bias [M, 3] whose M is the same symbolic dim as A's rows: equal only by name."""
    return _model(
        [
            h.make_node("MatMul", ["a", "w"], ["m"], name="mm"),
            h.make_node("Add", ["m", "bias"], ["y"], name="add"),
        ],
        [("a", F32, ["M", 8]), ("bias", F32, ["M", 3])],
        [("y", F32)],
        [("w", W)],
    )


def _div_mul(one):
    return _model(
        [
            h.make_node("Sqrt", ["x"], ["s"], name="sqrt"),
            h.make_node("Div", ["one", "s"], ["r"], name="div"),
            h.make_node("Mul", ["y", "r"], ["z"], name="mul"),
        ],
        [("x", F32, [4]), ("y", F32, [4])],
        [("z", F32)],
        [("one", np.array([one], np.float32))],
    )


def _slice(opset, ends_type=np.int64):
    return _model(
        [
            h.make_node("Relu", ["x"], ["r"], name="relu"),
            h.make_node("Slice", ["r", "st", "en", "ax"], ["s"], name="slice"),
            h.make_node("Neg", ["s"], ["y"], name="neg"),
        ],
        [("x", F32, [2, 3])],
        [("y", F32)],
        [
            ("st", np.array([0], ends_type)),
            ("en", np.array([np.iinfo(ends_type).max], ends_type)),
            ("ax", np.array([1], ends_type)),
        ],
        opset=opset,
    )


def _loop_with_equal_constants():
    body = h.make_graph(
        [
            h.make_node("Identity", ["cond"], ["cond_out"], name="keep"),
            h.make_node("Add", ["v", "c1"], ["a1"], name="add1"),
            h.make_node("Add", ["v", "c2"], ["a2"], name="add2"),
            h.make_node("Mul", ["a1", "a2"], ["v_out"], name="mul"),
        ],
        "body",
        [
            h.make_tensor_value_info("i", T.INT64, []),
            h.make_tensor_value_info("cond", T.BOOL, []),
            h.make_tensor_value_info("v", F32, [2]),
        ],
        [
            h.make_tensor_value_info("cond_out", T.BOOL, []),
            h.make_tensor_value_info("v_out", F32, [2]),
        ],
        [
            nh.from_array(np.array([1.0], np.float32), "c1"),
            nh.from_array(np.array([1.0], np.float32), "c2"),
        ],
    )
    return _model(
        [h.make_node("Loop", ["n", "t", "x"], ["y"], name="loop", body=body)],
        [("x", F32, [2])],
        [("y", F32, [2])],
        [("n", np.array(3, np.int64)), ("t", np.array(True))],
    )


def _qdq_model(after, outputs, *, scale_input=False, extra_inputs=()):
    """Quantized x (uint8) → DequantizeLinear `dq` → the `after` nodes. `scale_input`: the
    DQ's scale is a graph input (not a constant)."""
    nodes = [
        h.make_node("DequantizeLinear", ["xq", "s", "zp"], ["xf"], name="dq"),
        *after,
    ]
    inputs = [("xq", T.UINT8, [2, 3, 4])] + ([("s", F32, [])] if scale_input else [])
    inits = [("zp", np.array(128, np.uint8))]
    if not scale_input:
        inits.append(("s", np.array(0.5, np.float32)))
    return _model(nodes, inputs + list(extra_inputs), outputs, inits)


SHAPE_INITS = [
    ("i0", np.array(0, np.int64)),
    ("i1", np.array(1, np.int64)),
    ("m1", np.array([-1], np.int64)),
    ("ax", np.array([0], np.int64)),
]


def _view(
    extra=(),
    extra_outputs=(),
    shape_of="r",
    more=(),
    opset=17,
    concat=("u0", "u1", "m1"),
    z=None,
):
    """Reshape(r, Concat(Unsqueeze(Gather(Shape(.), 0)), Unsqueeze(Gather(Shape(.), 1)), [-1]))."""

    def unsqueeze(src, dst, name):
        if opset >= 13:
            return h.make_node("Unsqueeze", [src, "ax"], [dst], name=name)
        return h.make_node("Unsqueeze", [src], [dst], name=name, axes=[0])

    nodes = [
        h.make_node("Relu", ["x"], ["r"], name="relu"),
        *more,
        h.make_node("Shape", [shape_of], ["s"], name="shape"),
        h.make_node("Gather", ["s", "i0"], ["g0"], name="gather0", axis=0),
        h.make_node("Gather", ["s", "i1"], ["g1"], name="gather1", axis=0),
        unsqueeze("g0", "u0", "unsq0"),
        unsqueeze("g1", "u1", "unsq1"),
        h.make_node("Concat", list(concat), ["c"], name="concat", axis=0),
        h.make_node("Reshape", ["r", "c"], ["y"], name="reshape"),
        *extra,
    ]
    outputs = [("y", F32, [None, None, None])] + [(o, t) for o, t in extra_outputs]
    inputs = [("x", F32, ["N", "M", 5])] + ([("xz", F32, z)] if z else [])
    return _model(nodes, inputs, outputs, SHAPE_INITS, opset=opset)


def _view_chain(opset):
    """Relu → Reshape [6] → Reshape [3, 2] → Relu: FuseContiguousReshapes' case (a chain of
    views ending in a static shape becomes one Reshape, `<first>_new_reshape`)."""
    nodes = [
        h.make_node("Relu", ["x"], ["a"], name="relu0"),
        h.make_node("Reshape", ["a", "s1"], ["b"], name="r1"),
        h.make_node("Reshape", ["b", "s2"], ["c"], name="r2"),
        h.make_node("Relu", ["c"], ["y"], name="relu"),
    ]
    inits = [("s1", np.array([6], np.int64)), ("s2", np.array([3, 2], np.int64))]
    return _model(nodes, [("x", F32, [2, 3])], [("y", F32, [3, 2])], inits, opset)


CASES = {
    # MatMulAddFusion
    "matmul_add_2d_fused": lambda: _matmul_add([4, 8]),
    "matmul_add_3d_static_reshaped": lambda: _matmul_add([2, 4, 8]),
    "matmul_add_3d_symbolic_kept": lambda: _matmul_add(["N", 4, 8]),
    "matmul_add_int32_kept": lambda: _matmul_add(
        [4, 8], a_type=T.INT32, w=W.astype(np.int32), bias=B3.astype(np.int32)
    ),
    "matmul_read_twice_kept": lambda: _matmul_add(
        [4, 8], extra=[h.make_node("Relu", ["m"], ["r"], name="relu")]
    ),
    "matmul_add_bias_rows_by_dim_name": lambda: _matmul_add(
        ["M", 8], bias=np.ones((1, 3), np.float32)
    ),
    "matmul_add_bias_of_named_rows": _matmul_add_bias_input,
    "matmul_add_bias_too_wide_kept": lambda: _matmul_add(
        [4, 8], bias=np.ones((2, 4, 3), np.float32)
    ),
    # GemmTransposeFusion after it
    "matmul_add_of_a_transpose_folded": lambda: _matmul_add([4, 8], transpose_b=True),
    # DivMulFusion
    "div_mul_of_one_fused": lambda: _div_mul(1.0),
    "div_mul_of_two_kept": lambda: _div_mul(2.0),
    # EliminateSlice
    "slice_everything_opset11_removed": lambda: _slice(11),
    "slice_everything_opset13_removed": lambda: _slice(13),
    "slice_int32_ends_kept": lambda: _slice(11, np.int32),
    # ConstantSharing: main graph only
    "loop_body_equal_constants_kept": _loop_with_equal_constants,
    # ReshapeFusion: a Concat-built shape
    "view_of_own_dims_fused": lambda: _view(),
    "view_of_own_dims_opset11_fused": lambda: _view(opset=11),
    # Reshape-19 and -21: ORT 1.31 fuses them; onnxruntime-directml 1.24.4 fuses neither rule
    # (Target.reshape_fusion_versions), so the lane's run of these cases keeps every node
    "view_of_own_dims_opset19": lambda: _view(opset=19),
    "view_of_own_dims_opset21": lambda: _view(opset=21),
    "view_chain_opset17_fused": lambda: _view_chain(17),
    "view_chain_opset19": lambda: _view_chain(19),
    "view_chain_opset21": lambda: _view_chain(21),
    "view_shape_read_elsewhere_keeps_shape": lambda: _view(
        extra=[h.make_node("Gather", ["s", "i1"], ["gc"], name="gatherc", axis=0)],
        extra_outputs=[("gc", T.INT64)],
    ),
    "view_gather_read_elsewhere_keeps_gather": lambda: _view(
        extra=[h.make_node("Neg", ["g0"], ["ng"], name="neg")],
        extra_outputs=[("ng", T.INT64)],
    ),
    "view_shape_of_an_equal_shaped_value_fused": lambda: _view(
        shape_of="r2", more=[h.make_node("Relu", ["r"], ["r2"], name="relu2")]
    ),
    "view_shape_of_another_shape_kept": lambda: _view(
        shape_of="t",
        more=[h.make_node("Transpose", ["r"], ["t"], name="tr", perm=[1, 0, 2])],
    ),
    "view_two_minus_ones_kept": lambda: _view(concat=("u0", "m1", "m1")),
    # EnsureUniqueDQForNodeUnit (before the optimizers and in each round); CSE keeps DQs apart
    "dq_read_twice_duplicated": lambda: _qdq_model(
        [
            h.make_node("Relu", ["xf"], ["a"], name="relu"),
            h.make_node("Neg", ["xf"], ["b"], name="neg"),
        ],
        [("a", F32), ("b", F32)],
    ),
    "dq_read_after_a_removed_cast_duplicated": lambda: _qdq_model(
        [
            h.make_node("Cast", ["xf"], ["c"], name="cast", to=T.FLOAT),
            h.make_node("Relu", ["c"], ["a"], name="relu"),
            h.make_node("Neg", ["c"], ["b"], name="neg"),
        ],
        [("a", F32), ("b", F32)],
    ),
    "two_equal_dqs_kept_apart": lambda: _qdq_model(
        [
            h.make_node("DequantizeLinear", ["xq", "s", "zp"], ["xf2"], name="dq2"),
            h.make_node("Add", ["xf", "xf2"], ["a"], name="add"),
        ],
        [("a", F32)],
    ),
    # QDQPropagationTransformer
    "dq_propagated_past_a_transpose": lambda: _qdq_model(
        [
            h.make_node("Transpose", ["xf"], ["t"], name="tr", perm=[0, 2, 1]),
            h.make_node("Relu", ["t"], ["a"], name="relu"),
        ],
        [("a", F32)],
    ),
    "dq_propagated_past_a_reshape_to_two_readers": lambda: _qdq_model(
        [
            h.make_node("Reshape", ["xf", "shape"], ["r"], name="reshape"),
            h.make_node("Relu", ["r"], ["a"], name="relu"),
            h.make_node("Neg", ["r"], ["b"], name="neg"),
        ],
        [("a", F32), ("b", F32)],
        extra_inputs=[("shape", T.INT64, [2])],
    ),
    "dq_before_a_compute_node_not_propagated": lambda: _qdq_model(
        [
            h.make_node("Relu", ["xf"], ["r"], name="relu"),
            h.make_node("Transpose", ["r"], ["a"], name="tr", perm=[0, 2, 1]),
        ],
        [("a", F32)],
    ),
    "q_propagated_back_past_a_transpose": lambda: _model(
        [
            h.make_node("Relu", ["y"], ["r"], name="relu"),
            h.make_node("Transpose", ["r"], ["t"], name="tr", perm=[1, 0]),
            h.make_node("QuantizeLinear", ["t", "s", "zp"], ["q"], name="q"),
        ],
        [("y", F32, [3, 4])],
        [("q", T.UINT8)],
        [("s", np.array(0.5, np.float32)), ("zp", np.array(128, np.uint8))],
    ),
    # ORT 1.31 compares only the gathered dims of another value's shape, by value or name
    "view_shape_of_a_value_alike_in_gathered_dims_fused": lambda: _view(
        shape_of="z",
        more=[h.make_node("Relu", ["xz"], ["z"], name="reluz")],
        z=["N", "M", 6, 7],
    ),
    "view_shape_of_a_value_with_other_names_kept": lambda: _view(
        shape_of="z",
        more=[h.make_node("Relu", ["xz"], ["z"], name="reluz")],
        z=["N", "K", 5],
    ),
    "view_shape_of_unnamed_dims_kept": lambda: _view(
        shape_of="z",
        more=[h.make_node("Relu", ["xz"], ["z"], name="reluz")],
        z=[None, None, 5],
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_inspect_lists_the_nodes_ort_runs(case):
    model = CASES[case]()
    assert _predicted(model) == _ran(model)


def test_the_cases_cover_both_outcomes_of_each_fusion():
    """Each rule fires on some case and not on another (else a case would pin nothing)."""
    fired = {}
    for name, build in CASES.items():
        steps = {n.removed_by for n in inspect(build(), "cpu").nodes if n.removed_by}
        fired[name] = steps
    for step in (
        "MatMulAddFusion",
        "GemmTransposeFusion",
        "DivMulFusion",
        "EliminateSlice",
        "ReshapeFusion",
    ):
        assert any(step in s for s in fired.values()), step
        assert any(step not in s for s in fired.values()), step
    added = {
        name: {n.added_by for n in inspect(build(), "cpu").nodes if n.added_by}
        for name, build in CASES.items()
    }
    for step in ("EnsureUniqueDQForNodeUnit", "QDQPropagationTransformer"):
        assert any(step in s for s in added.values()), step
        assert any(step not in s for s in added.values()), step


def test_dq_is_duplicated_even_without_optimizations():
    """ORT makes QDQ node units whole before any optimizer runs, at every level
    (`InferenceSession::TransformGraph`): with ORT_DISABLE_ALL a shared DequantizeLinear is
    still copied, and `inspect(optimized=False)` lists the copy too."""
    model = CASES["dq_read_twice_duplicated"]()
    so = ort.SessionOptions()
    so.log_severity_level = 3
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.add_session_config_entry("session.record_ep_graph_assignment_info", "1")
    s = ort.InferenceSession(
        model.SerializeToString(), so, providers=["CPUExecutionProvider"]
    )
    ran = sorted(
        (n.name, n.op_type)
        for sg in s.get_provider_graph_assignment_info()
        for n in sg.get_nodes()
    )
    listed = sorted(
        (n.name, n.op_type)
        for n in inspect(model, "cpu", optimized=False).nodes
        if n.provider
    )
    assert listed == ran
    assert ("dq/duplicated", "DequantizeLinear") in ran
