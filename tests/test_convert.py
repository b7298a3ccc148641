"""convert(): strategies, report, idempotency, subgraphs, functions, opsets, CumSum casts, CLI."""

from __future__ import annotations

import argparse
import json

import numpy as np
import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

from ort_dml_ops import DOMAIN
from ort_dml_ops.conversion import convert
from ort_dml_ops.errors import UserError

from .converter.rules._util import op_types, run_cpu, single_op
from .converter.rules.test_cumprod import ref_cumprod


def cumprod_model(opset=17, dtype=np.float32, shape=(3, 40)):
    return single_op(
        "CumProd",
        [("x", dtype, list(shape))],
        {"exclusive": 1},
        opset=opset,
        domain=DOMAIN,
        inits={"axis": np.array(1, np.int64)},
    )


def all_ops(model):
    out = set()

    def walk(g):
        for n in g.node:
            out.add((n.domain, n.op_type))
            for a in n.attribute:
                if a.type == onnx.AttributeProto.GRAPH:
                    walk(a.g)

    walk(model.graph)
    for f in model.functions:
        for n in f.node:
            out.add((n.domain, n.op_type))
    return out


@pytest.mark.parametrize("strategy", ["auto", "lower", "fallback", "native"])
def test_strategies_on_cumprod(strategy):
    r = convert(cumprod_model(), "dml", strategy=strategy)
    node = r.report.nodes[0]
    want = {
        "auto": "lowered",
        "lower": "lowered",
        "fallback": "fallback",
        "native": "native",
    }[strategy]
    assert node.action == want, node
    if want == "lowered":
        assert (DOMAIN, "CumProd") not in op_types(r.model) and node.emitted
        assert DOMAIN not in {o.domain for o in r.model.opset_import}
    else:
        assert (DOMAIN, "CumProd") in op_types(r.model)
    json.dumps(r.report.to_dict())
    onnx.checker.check_model(r.model, full_check=True)


def test_auto_keeps_native_scatter_and_cumsum():
    m = single_op(
        "ScatterElements",
        [
            ("data", np.float32, [4, 5]),
            ("indices", np.int64, [4, 2]),
            ("updates", np.float32, [4, 2]),
        ],
        {"axis": 1},
        opset=13,
    )
    r = convert(m, "dml")
    assert r.report.nodes[0].action == "native"
    m2 = single_op(
        "CumSum",
        [("x", np.float32, [4, 5])],
        opset=17,
        inits={"axis": np.array(1, np.int64)},
    )
    assert convert(m2, "dml").report.nodes[0].action == "native"


def test_auto_lowers_scatter_whose_indices_are_smaller_than_data_off_axis():
    # DirectML needs indices sized like data on every dim but the axis; the DML EP claims the
    # node anyway and session creation fails (seen on the lane), so auto must not keep it native.
    m = single_op(
        "ScatterElements",
        [
            ("data", np.float32, [4, 5]),
            ("indices", np.int64, [3, 2]),
            ("updates", np.float32, [3, 2]),
        ],
        {"axis": 1},
        opset=13,
    )
    r = convert(m, "dml")
    node = r.report.nodes[0]
    assert node.action == "lowered" and "indices sized like data" in node.reason, node
    rng = np.random.default_rng(0)
    feeds = {
        "data": rng.random((4, 5), dtype=np.float32),
        "indices": rng.integers(-5, 5, (3, 2)),
        "updates": rng.random((3, 2), dtype=np.float32),
    }
    np.testing.assert_array_equal(run_cpu(r.model, feeds)[0], run_cpu(m, feeds)[0])


def test_lower_lowers_reduction_and_opset18_scatter():
    """(auto keeps scatters this small on ORT's CPU kernel: test_cost's estimate tests)"""
    for opset, attrs in ((17, {"axis": 1, "reduction": "add"}), (18, {"axis": 1})):
        m = single_op(
            "ScatterElements",
            [
                ("data", np.float32, [4, 5]),
                ("indices", np.int64, [4, 2]),
                ("updates", np.float32, [4, 2]),
            ],
            attrs,
            opset=opset,
        )
        r = convert(m, "dml", strategy="lower")
        assert r.report.nodes[0].action == "lowered", r.report.nodes[0]
        assert ("", "ScatterElements") not in op_types(r.model)


def test_cpu_target_keeps_native_scatter_reduction():
    m = single_op(
        "ScatterElements",
        [
            ("data", np.float32, [4, 5]),
            ("indices", np.int64, [4, 2]),
            ("updates", np.float32, [4, 2]),
        ],
        {"axis": 1, "reduction": "max"},
        opset=18,
    )
    assert convert(m, "cpu").report.nodes[0].action == "native"


def test_idempotent():
    for strategy in ("auto", "lower", "fallback"):
        once = convert(cumprod_model(), "dml", strategy=strategy).model
        twice = convert(once, "dml", strategy=strategy).model
        assert once.SerializeToString() == twice.SerializeToString(), strategy


def test_io_and_names_unchanged_and_unique():
    m = cumprod_model()
    r = convert(m, "dml")
    assert [i.name for i in r.model.graph.input] == ["x"] and [
        o.name for o in r.model.graph.output
    ] == ["y"]
    assert r.model.graph.output[0].type == m.graph.output[0].type
    names = [n.name for n in r.model.graph.node]
    assert len(names) == len(set(names))
    values = [o for n in r.model.graph.node for o in n.output] + [
        i.name for i in r.model.graph.initializer
    ]
    assert len(values) == len(set(values))


def test_input_model_untouched():
    m = cumprod_model()
    before = m.SerializeToString()
    convert(m, "dml")
    assert m.SerializeToString() == before


def test_cumsum_float64_cast_with_note():
    m = single_op(
        "CumSum",
        [("x", np.float64, [3, 6])],
        {"reverse": 1},
        opset=17,
        inits={"axis": np.array(-1, np.int64)},
    )
    r = convert(m, "dml")
    node = r.report.nodes[0]
    assert node.action == "cast" and "float32" in node.note
    x = np.random.default_rng(0).normal(size=[3, 6])
    (y,) = run_cpu(r.model, {"x": x})
    want = np.flip(np.cumsum(np.flip(x, -1), -1), -1)
    assert y.dtype == np.float64
    np.testing.assert_allclose(y, want, rtol=0, atol=6 * 2**-24 * np.abs(x).sum())


def test_if_subgraph_converted():
    def branch(name, excl):
        n = h.make_node(
            "CumProd",
            ["x", "ax"],
            [f"{name}_y"],
            domain=DOMAIN,
            exclusive=excl,
            name=f"{name}_cp",
        )
        c = h.make_node(
            "Constant",
            [],
            ["ax"],
            value=nh.from_array(np.array(1, np.int64)),
            name=f"{name}_c",
        )
        return h.make_graph(
            [c, n], name, [], [h.make_tensor_value_info(f"{name}_y", T.FLOAT, [2, 5])]
        )

    # the two branches share the value name "ax": convert must keep names unique anyway
    node = h.make_node(
        "If",
        ["cond"],
        ["y"],
        then_branch=branch("then", 0),
        else_branch=branch("else", 1),
    )
    g = h.make_graph(
        [node],
        "g",
        [
            h.make_tensor_value_info("cond", T.BOOL, []),
            h.make_tensor_value_info("x", T.FLOAT, [2, 5]),
        ],
        [h.make_tensor_value_info("y", T.FLOAT, [2, 5])],
    )
    m = h.make_model(
        g,
        opset_imports=[h.make_opsetid("", 17), h.make_opsetid(DOMAIN, 1)],
        ir_version=10,
    )
    r = convert(m, "dml")
    assert [n.action for n in r.report.nodes] == ["lowered", "lowered"]
    assert (DOMAIN, "CumProd") not in all_ops(r.model)
    x = np.random.default_rng(1).uniform(0.5, 1.5, [2, 5]).astype(np.float32)
    for cond, excl in ((True, 0), (False, 1)):
        (y,) = run_cpu(r.model, {"cond": np.array(cond), "x": x})
        np.testing.assert_allclose(y, ref_cumprod(x, 1, excl), rtol=1e-6)


def _function_model(
    body, calls, inputs, outputs, *, attributes=(), fn_opset=17, opset=17
):
    """A model whose main graph calls local::F (`body`) from the nodes `calls`."""
    fn = h.make_function(
        "local",
        "F",
        sorted(
            {v for n in body for v in n.input} - {o for n in body for o in n.output}
        ),
        [body[-1].output[0]],
        body,
        opset_imports=[h.make_opsetid("", fn_opset), h.make_opsetid(DOMAIN, 1)],
        attribute_protos=list(attributes),
    )
    g = h.make_graph(
        calls,
        "g",
        [h.make_tensor_value_info(*i) for i in inputs],
        [h.make_tensor_value_info(*o) for o in outputs],
    )
    return h.make_model(
        g,
        opset_imports=[h.make_opsetid("", opset), h.make_opsetid("local", 1)],
        functions=[fn],
        ir_version=10,
    )


def _axis0():
    return h.make_node(
        "Constant", [], ["ax"], value=nh.from_array(np.array(0, np.int64))
    )


def _inlined(r):
    assert not r.model.functions and any(
        "local::F inlined" in n for n in r.report.normalized
    )
    onnx.checker.check_model(r.model, full_check=True)


def test_function_calls_of_other_types_and_ranks_converted():
    """One body, two calls (float rank 1, double rank 2), no value_info: each call is
    inlined and lowered with its own shapes (lowering the shared body had to guess them).
    Lowering forced: `auto` keeps the double CumProd on its fallback on DML, its lowering
    copying 18 times a run (cost.DML_OFF_DEVICE_CUMPROD)."""
    m = _function_model(
        [_axis0(), h.make_node("CumProd", ["a", "ax"], ["b"], domain=DOMAIN)],
        [
            h.make_node("F", ["x"], ["y"], domain="local"),
            h.make_node("F", ["z"], ["w"], domain="local"),
        ],
        [("x", T.FLOAT, [6]), ("z", T.DOUBLE, [2, 3])],
        [("y", T.FLOAT, [6]), ("w", T.DOUBLE, [2, 3])],
    )
    r = convert(m, "dml", strategy="lower")
    assert [n.action for n in r.report.nodes] == ["lowered", "lowered"]
    _inlined(r)
    x = np.arange(1, 7, dtype=np.float32)
    z = np.arange(1, 7, dtype=np.float64).reshape(2, 3)
    y, w = run_cpu(r.model, {"x": x, "z": z})
    np.testing.assert_array_equal(y, np.cumprod(x))
    np.testing.assert_array_equal(w, np.cumprod(z, 0))


def test_function_attribute_reference_takes_each_calls_value():
    """`reverse` is the function's attribute `rev` (ref_attr_name), 0 by default: the call that
    sets it gets a reversed product, the call that does not the default."""
    cp = h.make_node("CumProd", ["a", "ax"], ["b"], domain=DOMAIN)
    ref = onnx.AttributeProto()
    ref.name, ref.ref_attr_name, ref.type = "reverse", "rev", onnx.AttributeProto.INT
    cp.attribute.append(ref)
    m = _function_model(
        [_axis0(), cp],
        [
            h.make_node("F", ["x"], ["y"], domain="local", rev=1),
            h.make_node("F", ["x"], ["w"], domain="local"),
        ],
        [("x", T.FLOAT, [6])],
        [("y", T.FLOAT, [6]), ("w", T.FLOAT, [6])],
        attributes=[h.make_attribute("rev", 0)],
    )
    r = convert(m, "dml")
    assert [n.action for n in r.report.nodes] == ["lowered", "lowered"]
    _inlined(r)
    x = np.arange(1, 7, dtype=np.float32)
    y, w = run_cpu(r.model, {"x": x})
    np.testing.assert_array_equal(y, ref_cumprod(x, 0, 0, 1))
    np.testing.assert_array_equal(w, np.cumprod(x))


def test_function_calling_a_function_with_a_scatter_converted():
    """G calls F, F holds a ScatterElements(add): both are inlined, the scatter lowered and
    exact; a function without a family node stays a function."""
    scatter = h.make_function(
        "local",
        "F",
        ["a", "i", "u"],
        ["b"],
        [h.make_node("ScatterElements", ["a", "i", "u"], ["b"], reduction="add")],
        opset_imports=[h.make_opsetid("", 17)],
    )
    caller = h.make_function(
        "local",
        "G",
        ["a", "i", "u"],
        ["c"],
        [
            h.make_node("F", ["a", "i", "u"], ["b"], domain="local"),
            h.make_node("Relu", ["b"], ["c"]),
        ],
        opset_imports=[h.make_opsetid("", 17), h.make_opsetid("local", 1)],
    )
    plain = h.make_function(
        "local",
        "P",
        ["a"],
        ["b"],
        [h.make_node("Neg", ["a"], ["b"])],
        opset_imports=[h.make_opsetid("", 17)],
    )
    g = h.make_graph(
        [
            h.make_node("G", ["x", "i", "u"], ["s"], domain="local"),
            h.make_node("P", ["s"], ["y"], domain="local"),
        ],
        "g",
        [
            h.make_tensor_value_info("x", T.FLOAT, [6]),
            h.make_tensor_value_info("i", T.INT64, [4]),
            h.make_tensor_value_info("u", T.FLOAT, [4]),
        ],
        [h.make_tensor_value_info("y", T.FLOAT, [6])],
    )
    m = h.make_model(
        g,
        opset_imports=[h.make_opsetid("", 17), h.make_opsetid("local", 1)],
        functions=[scatter, caller, plain],
        ir_version=10,
    )
    r = convert(m, "dml", strategy="lower")
    assert [n.action for n in r.report.nodes] == ["lowered"]
    assert [f.name for f in r.model.functions] == ["P"]
    assert len(r.report.normalized) == 2  # F and G, a line each
    onnx.checker.check_model(r.model, full_check=True)
    x = np.arange(6, dtype=np.float32) - 3
    i = np.array([1, 1, 5, 0])
    u = np.array([2.0, -8.0, 1.0, 0.5], np.float32)
    (y,) = run_cpu(r.model, {"x": x, "i": i, "u": u})
    want = x.copy()
    np.add.at(want, i, u)
    np.testing.assert_array_equal(y, -np.maximum(want, 0))


def test_function_body_runs_under_the_models_opset():
    """ORT runs an inlined body under the model's version of ai.onnx (a function importing 13
    beside a model at 17 loads): convert inlines it the same way."""
    m = _function_model(
        [_axis0(), h.make_node("CumProd", ["a", "ax"], ["b"], domain=DOMAIN)],
        [h.make_node("F", ["x"], ["y"], domain="local")],
        [("x", T.FLOAT, [6])],
        [("y", T.FLOAT, [6])],
        fn_opset=13,
    )
    r = convert(m, "dml")
    _inlined(r)
    x = np.arange(1, 7, dtype=np.float32)
    np.testing.assert_array_equal(run_cpu(r.model, {"x": x})[0], np.cumprod(x))


def test_function_kept_by_strategy_native():
    m = _function_model(
        [_axis0(), h.make_node("CumSum", ["a", "ax"], ["b"])],
        [h.make_node("F", ["x"], ["y"], domain="local")],
        [("x", T.INT64, [6])],
        [("y", T.INT64, [6])],
    )
    r = convert(m, "dml", strategy="native")
    assert not r.report.normalized and [f.name for f in r.model.functions] == ["F"]


def test_opset26_cumprod_brought_to_21():
    m = single_op(
        "CumProd",
        [("x", np.float32, [2, 40])],
        {"reverse": 1},
        opset=26,
        inits={"axis": np.array(1, np.int64)},
    )
    r = convert(m, "dml")
    assert r.report.opset["changed"] and r.report.opset["to"] == 21
    assert next(o.version for o in r.model.opset_import if o.domain == "") == 21
    x = np.random.default_rng(2).uniform(0.5, 1.5, [2, 40]).astype(np.float32)
    (y,) = run_cpu(r.model, {"x": x})
    np.testing.assert_allclose(y, ref_cumprod(x, 1, 0, 1), rtol=1e-5)


def test_opset_refused_names_the_node():
    # RMSNormalization exists only from opset 23: the model cannot move to 21
    g = h.make_graph(
        [h.make_node("RMSNormalization", ["x", "s"], ["y"], name="the_norm")],
        "g",
        [
            h.make_tensor_value_info("x", T.FLOAT, [2, 4]),
            h.make_tensor_value_info("s", T.FLOAT, [4]),
        ],
        [h.make_tensor_value_info("y", T.FLOAT, [2, 4])],
    )
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 23)], ir_version=10)
    r = convert(m, "dml")
    assert not r.report.opset["changed"] and "the_norm" in r.report.opset["reason"]


def test_opset22_type_only_changes_accepted():
    g = h.make_graph(
        [h.make_node("Relu", ["x"], ["r"]), h.make_node("CumSum", ["r", "a"], ["y"])],
        "g",
        [h.make_tensor_value_info("x", T.FLOAT, [2, 4])],
        [h.make_tensor_value_info("y", T.FLOAT, [2, 4])],
        [nh.from_array(np.array(1, np.int64), "a")],
    )
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 22)], ir_version=10)
    r = convert(m, "dml")
    assert r.report.opset["changed"] and r.report.opset["to"] == 21


def test_bad_inputs_are_user_errors(tmp_path):
    with pytest.raises(UserError):
        convert(cumprod_model(), "tpu")
    with pytest.raises(UserError):
        convert(cumprod_model(), strategy="fast")
    with pytest.raises(UserError):
        convert(tmp_path / "missing.onnx")


# -- CLI --------------------------------------------------------------------------------
def cli(argv):
    from ort_dml_ops.commands import convert as cmd

    p = argparse.ArgumentParser()
    cmd.add_parser(p.add_subparsers())
    args = p.parse_args(["convert", *argv])
    return args.func(args)


def test_cli_convert_verify_report(tmp_path, capsys):
    src = tmp_path / "m.onnx"
    onnx.save(cumprod_model(), src)
    out, rep = tmp_path / "o.onnx", tmp_path / "r.json"
    assert cli([str(src), "-o", str(out), "--verify", "--report", str(rep)]) == 0
    assert json.loads(rep.read_text())["summary"] == {"lowered": 1}
    onnx.checker.check_model(onnx.load(out), full_check=True)
    capsys.readouterr()
    assert cli([str(out), "-o", str(tmp_path / "o2.onnx"), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["nodes"] == [] and report["inspect"]["summary"]["cpu_nodes"] == 0


def test_cli_refuses_overwrite_and_bad_files(tmp_path):
    src = tmp_path / "m.onnx"
    onnx.save(cumprod_model(), src)
    before = src.read_bytes()
    with pytest.raises(UserError, match="input model"):
        cli([str(src), "-o", str(src)])
    assert src.read_bytes() == before
    junk = tmp_path / "junk.onnx"
    junk.write_text("not a model")
    with pytest.raises(UserError):
        cli([str(junk), "-o", str(tmp_path / "x.onnx")])
    assert not (tmp_path / "x.onnx").exists()


def test_verify_catches_a_difference():
    from ort_dml_ops.commands.convert import verify

    a = single_op("Relu", [("x", np.float32, [3])], opset=17)
    b = single_op("Neg", [("x", np.float32, [3])], opset=17)
    assert verify(a, b)


@pytest.mark.parametrize("which", ["input", "output"])
def test_cli_report_path_equal_to_a_model_refused_before_writing(tmp_path, which):
    src = tmp_path / "m.onnx"
    onnx.save(cumprod_model(), src)
    before = src.read_bytes()
    out = tmp_path / "o.onnx"
    rep = src if which == "input" else out
    with pytest.raises(UserError, match="report path"):
        cli([str(src), "-o", str(out), "--report", str(rep)])
    assert src.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.onnx"]  # nothing written


# -- invalid models whose error shows without running them: refused in one line naming the node


def _scatter(dshape, ishape, ushape, axis=0, op="ScatterElements", opset=18):
    return single_op(
        op,
        [
            ("data", np.float32, dshape),
            ("indices", np.int64, ishape),
            ("updates", np.float32, ushape),
        ],
        {} if op == "ScatterND" else {"axis": axis},
        opset=opset,
    )


@pytest.mark.parametrize(
    "model,match",
    [
        (
            single_op(
                "CumSum",
                [("x", np.float32, [3, 4])],
                opset=17,
                inits={"axis": np.array(2, np.int64)},
            ),
            r"CumSum node 'the_CumSum': axis 2 is out of range for rank 2",
        ),
        (
            single_op(
                "CumProd",
                [("x", np.float32, [3, 4])],
                opset=17,
                domain=DOMAIN,
                inits={"axis": np.array(-3, np.int32)},
            ),
            r"CumProd node 'the_CumProd': axis -3 is out of range for rank 2",
        ),
        (
            single_op(
                "CumSum",
                [("x", np.float32, [3, 4])],
                opset=17,
                inits={"axis": np.array(1.0, np.float32)},
            ),
            r"'the_CumSum': the axis must be an int32 or int64 tensor, got tensor\(float\)",
        ),
        (
            single_op(
                "CumProd",
                [("x", np.float32, [3, 4])],
                opset=17,
                domain=DOMAIN,
                inits={"axis": np.array([0, 1], np.int64)},
            ),
            r"'the_CumProd': the axis must be a scalar",
        ),
        (
            _scatter([4, 5], [2, 5], [2, 3]),
            r"'the_ScatterElements': indices dimensions \[2, 5\] and updates dimensions \[2, 3\] differ",
        ),
        (
            _scatter([4, 5], [2, 3], [2, 3], axis=-3),
            r"'the_ScatterElements': axis -3 is out of range for rank 2",
        ),
        (
            _scatter([4, 5], [2, 3], [2, 3], axis=2, opset=10, op="Scatter"),
            r"'the_Scatter': axis 2 is out of range",
        ),
        (
            _scatter([4, 5], [2, 1], [2, 4], op="ScatterND"),
            r"'the_ScatterND': updates dimensions \[2, 4\] differ",
        ),
        (
            _scatter([4, 5], [5, 2], [5, 2], axis=1),
            r"'the_ScatterElements': indices dimension 0 is 5, larger than the data's 4",
        ),
        (
            _scatter([4, 5, 3], [4, 2, 4], [4, 2, 4], axis=1, opset=10, op="Scatter"),
            r"'the_Scatter': indices dimension 2 is 4, larger than the data's 3",
        ),
    ],
)
@pytest.mark.parametrize("strategy", ["auto", "native"])
def test_statically_invalid_models_refused(model, match, strategy):
    with pytest.raises(UserError, match=match) as info:
        convert(model, "dml", strategy=strategy)
    assert "\n" not in str(info.value)


def test_indices_longer_than_the_data_off_the_axis_fail_in_ort_itself():
    """What the refusal above stands on: ORT loads such a model and its own kernel fails the run
    ("Indices dim=5 at pos=0 is greater than input dim=4", cpu/tensor/scatter.cc); along the
    axis the indices may be longer (9 updates into a row of 5)."""
    feeds = {
        "data": np.zeros((4, 5), np.float32),
        "indices": np.zeros((5, 2), np.int64),
        "updates": np.ones((5, 2), np.float32),
    }
    with pytest.raises(
        Exception, match="Indices dim=5 at pos=0 is greater than input dim=4"
    ):
        run_cpu(_scatter([4, 5], [5, 2], [5, 2], axis=1), feeds)
    longer_on_axis = _scatter([4, 5], [4, 9], [4, 9], axis=1)
    feeds = {
        "data": np.zeros((4, 5), np.float32),
        "indices": np.zeros((4, 9), np.int64),
        "updates": np.ones((4, 9), np.float32),
    }
    (want,) = run_cpu(longer_on_axis, feeds)
    (got,) = run_cpu(convert(longer_on_axis, "dml", strategy="lower").model, feeds)
    np.testing.assert_array_equal(got, want)


def test_dynamic_shapes_are_not_refused():
    m = _scatter(
        ["N", 5], ["K", 5], ["J", 5]
    )  # unknown dims: nothing is visible statically
    assert convert(m, "dml").model is not None


@pytest.mark.parametrize("yshape", [[None, None], ["A", None], ["unk__0", "unk__1"]])
def test_graph_outputs_kept_exactly(yshape):
    """Shape inference gives the output dims of its own (unk__0, or concrete ones); the converted
    model still declares the output as the user wrote it."""
    m = _scatter([5, 7], [5, 3], [5, 3], axis=1)
    del m.graph.output[:]
    m.graph.output.append(h.make_tensor_value_info("y", T.FLOAT, yshape))
    r = convert(m, "dml", strategy="lower")
    assert r.report.nodes[0].action == "lowered"
    assert list(r.model.graph.output) == list(m.graph.output) and list(
        r.model.graph.input
    ) == list(m.graph.input)
    feeds = {
        "data": np.zeros((5, 7), np.float32),
        "indices": np.ones((5, 3), np.int64),
        "updates": np.ones((5, 3), np.float32),
    }
    (y,) = run_cpu(r.model, feeds)
    (want,) = run_cpu(m, feeds)
    np.testing.assert_array_equal(y, want)


# -- external data: never loaded for the conversion, kept external by the CLI


def _external_model(folder, location="w.bin"):
    """DOMAIN::CumProd plus an Add of an external initializer `w` [3, 40]."""
    w = np.arange(120, dtype=np.float32).reshape(3, 40) / 7
    (folder / location).write_bytes(w.tobytes())
    t = T(name="w", data_type=T.FLOAT, dims=[3, 40], data_location=T.EXTERNAL)
    for k, v in {"location": location, "offset": "0", "length": str(w.nbytes)}.items():
        e = t.external_data.add()
        e.key, e.value = k, v
    nodes = [
        h.make_node("CumProd", ["x", "axis"], ["c"], domain=DOMAIN, name="scan"),
        h.make_node("Add", ["c", "w"], ["y"], name="add"),
    ]
    g = h.make_graph(
        nodes,
        "g",
        [h.make_tensor_value_info("x", T.FLOAT, [3, 40])],
        [h.make_tensor_value_info("y", T.FLOAT, [3, 40])],
        [t, h.make_tensor("axis", T.INT64, [], [1])],
    )
    m = h.make_model(
        g,
        opset_imports=[h.make_opsetid("", 17), h.make_opsetid(DOMAIN, 1)],
        ir_version=10,
    )
    path = folder / "m.onnx"
    path.write_bytes(m.SerializeToString())
    return path, w


def _expected(w):
    x = np.linspace(0.5, 1.5, 120, dtype=np.float32).reshape(3, 40)
    return x, ref_cumprod(x, 1, 0, 0) + w


def test_external_data_api_inline_or_kept(tmp_path):
    path, w = _external_model(tmp_path)
    x, want = _expected(w)
    r = convert(path, "dml")  # small: the result is self-contained
    assert r.external_data_dir is None and r.report.nodes[0].action == "lowered"
    np.testing.assert_allclose(run_cpu(r.model, {"x": x})[0], want, rtol=1e-5)
    kept = convert(path, "dml", keep_external_data=True)
    assert kept.external_data_dir == tmp_path
    (init,) = [t for t in kept.model.graph.initializer if t.name == "w"]
    assert init.data_location == T.EXTERNAL and not init.raw_data


def test_cli_external_data_written_beside_the_output(tmp_path):
    src_dir, out_dir = tmp_path / "in", tmp_path / "out"
    src_dir.mkdir(), out_dir.mkdir()
    path, w = _external_model(src_dir)
    before = {p.name: p.read_bytes() for p in src_dir.iterdir()}
    out = out_dir / "c.onnx"
    assert cli([str(path), "-o", str(out), "--verify"]) == 0
    assert {p.name: p.read_bytes() for p in src_dir.iterdir()} == before
    assert sorted(p.name for p in out_dir.iterdir()) == ["c.onnx", "c.onnx.data"]
    proto = onnx.load(out, load_external_data=False)
    (init,) = [t for t in proto.graph.initializer if t.name == "w"]
    assert (
        init.data_location == T.EXTERNAL
        and {e.key: e.value for e in init.external_data}["location"] == "c.onnx.data"
    )
    onnx.checker.check_model(str(out), full_check=True)
    x, want = _expected(w)
    import onnxruntime as ort

    y = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"]).run(
        None, {"x": x}
    )[0]
    np.testing.assert_allclose(y, want, rtol=1e-5)


def test_cli_refuses_to_overwrite_the_inputs_external_data(tmp_path):
    path, _ = _external_model(tmp_path, location="c.onnx.data")
    before = sorted(p.name for p in tmp_path.iterdir())
    with pytest.raises(UserError, match="would overwrite the input"):
        cli([str(path), "-o", str(tmp_path / "c.onnx")])
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_cpu_target_does_not_keep_float16_scatter_add_native():
    # ORT's CPU ScatterElements refuses float16 add/mul at run time (and 1.31.1 crashes on it
    # from about 1e6 elements): auto must not leave the node to it.
    m = single_op(
        "ScatterElements",
        [
            ("data", np.float16, [4, 5]),
            ("indices", np.int64, [4, 3]),
            ("updates", np.float16, [4, 3]),
        ],
        {"axis": 1, "reduction": "add"},
        opset=18,
    )
    rng = np.random.default_rng(1)
    feeds = {
        "data": rng.random((4, 5)).astype(np.float16),
        "indices": rng.integers(-5, 5, (4, 3)),
        "updates": rng.random((4, 3)).astype(np.float16),
    }
    with pytest.raises(Exception, match="MLFloat16 data type is not supported"):
        run_cpu(m, feeds)  # the refusal this rule is about
    r = convert(m, "cpu")
    node = r.report.nodes[0]
    assert node.action != "native" and "refuses float16" in node.reason, node
    exact = feeds["data"].astype(np.float64)
    magnitude = np.abs(exact)
    for row in range(4):
        for col in range(3):
            exact[row, feeds["indices"][row, col] % 5] += feeds["updates"][row, col]
            magnitude[row, feeds["indices"][row, col] % 5] += abs(
                float(feeds["updates"][row, col])
            )
    # docs/convert.md bound for a lowered scatter add: (ceil(log2 K) + 2) * u * sum|terms|, K = 3
    bound = (2 + 2) * 2.0**-11 * magnitude
    got = run_cpu(r.model, feeds)[0].astype(np.float64)
    assert (np.abs(got - exact) <= bound).all(), np.abs(got - exact).max()


def test_refused_lowering_keeps_ort_cpu_kernel_and_plain_onnxruntime_loads_it():
    """auto: native on the target, else lowered, else ONNX Runtime's own CPU kernel (the node
    untouched: the model still loads in plain onnxruntime), the Python fallback only last."""
    import onnxruntime as ort

    m = single_op(
        "ScatterND",
        [
            ("data", np.float32, [4, 3]),
            ("indices", np.int64, ["t", "q"]),
            ("updates", np.float32, ["t"]),
        ],
        {"reduction": "add"},
        opset=18,
        out_shape=[4, 3],
    )
    r = convert(m, "dml", strategy="auto")
    (node,) = r.report.nodes
    assert (
        node.action == "cpu"
        and "coordinates per update" in node.reason
        and "CPU kernel" in node.reason
    )
    assert not any(d == DOMAIN for d, _ in op_types(r.model))
    sess = ort.InferenceSession(
        r.model.SerializeToString(), providers=["CPUExecutionProvider"]
    )
    feeds = {
        "data": np.zeros((4, 3), np.float32),
        "indices": np.array([[1, 2], [1, 2], [-1, 0]]),
        "updates": np.array([1.0, 2.0, 5.0], np.float32),
    }
    want = np.zeros((4, 3), np.float32)
    want[1, 2], want[3, 0] = 3.0, 5.0
    np.testing.assert_array_equal(sess.run(None, feeds)[0], want)
    assert not r.report.changed


@pytest.mark.parametrize("reduction", ["none", "add", "mul", "max", "min"])
def test_fallback_strategy_handles_scatter_nd(reduction):
    from ort_dml_ops import InferenceSession

    m = single_op(
        "ScatterND",
        [
            ("data", np.float32, ["a", "b", "c"]),
            ("indices", np.int64, ["t", 2]),
            ("updates", np.float32, ["t", "c"]),
        ],
        {"reduction": reduction},
        opset=18,
        out_shape=["a", "b", "c"],
    )
    r = convert(m, "dml", strategy="fallback")
    assert r.report.nodes[0].action == "fallback"
    rng = np.random.default_rng(3)
    data = rng.normal(size=(4, 3, 5)).astype(np.float32)
    if reduction == "none":
        indices = np.array([[0, 1], [2, 2], [-1, 0]])
    else:
        indices = np.stack([rng.integers(-4, 4, 20), rng.integers(-3, 3, 20)], -1)
    updates = rng.normal(size=(len(indices), 5)).astype(np.float32)
    feeds = {"data": data, "indices": indices, "updates": updates}
    (want,) = run_cpu(m, feeds)
    np.testing.assert_allclose(
        InferenceSession(r.model).run(None, feeds)[0], want, rtol=1e-6, atol=1e-6
    )


def test_auto_lowers_scatter_whose_indices_are_longer_than_data_on_the_axis():
    """DirectML fails a ScatterElements whose indices are longer than the data on the axis
    (80070057, docs/dml-lane.md), though the DML EP claims it at opset 16: auto must not keep it
    native. One no longer than the data stays native. The lowering writes what ORT's CPU
    kernel writes, duplicates included (the last update of a run wins, as there)."""
    from ort_dml_ops.targets.dml_rules import scatter_fit

    def model(rows):
        return single_op(
            "ScatterElements",
            [
                ("data", np.float32, [5, 3]),
                ("indices", np.int64, [rows, 3]),
                ("updates", np.float32, [rows, 3]),
            ],
            {"axis": 0},
            opset=16,
        )

    longer = convert(model(6), "dml").report.nodes[0]
    assert longer.action == "lowered" and "longer than the data" in longer.reason
    assert convert(model(5), "dml").report.nodes[0].action == "native"
    rng = np.random.default_rng(3)
    feeds = {
        "data": rng.random((5, 3), dtype=np.float32),
        "indices": rng.integers(-5, 5, (6, 3)),
        "updates": rng.random((6, 3), dtype=np.float32),
    }
    converted = convert(model(6), "dml").model
    np.testing.assert_array_equal(
        run_cpu(converted, feeds)[0], run_cpu(model(6), feeds)[0]
    )
    # the rule itself: proven refusals, proofs, and what only the run can tell
    assert scatter_fit([5, 3], [6, 3], 0)[0] == "refused"
    assert scatter_fit([5, 3], [5, 2], 0)[0] == "refused"  # off the axis: must be equal
    assert scatter_fit([5, 3], [4, 3], 0) == ("fits", "")
    assert scatter_fit(["n", 3], ["n", 3], -2) == ("fits", "")
    assert scatter_fit(["n", 3], ["k", 3], 0)[0] == "unknown"
    assert scatter_fit([5, 3], [None, 3], 0)[0] == "unknown"
    assert scatter_fit([5, 3], [5], 0)[0] == "unknown"


def test_float16_scatter_nd_with_a_reduction_is_not_left_to_a_kernel_that_fails():
    """The WebGPU plugin takes a float16 ScatterND with a reduction and fails its first run, and
    ORT's CPU kernel refuses float16 with any ScatterND reduction (both measured: the plugin in
    tests/webgpu/test_scatter_clean_webgpu.py, the CPU EP here). Static coordinates: convert
    lowers it for webgpu, and the lowering writes what ORT's CPU kernel writes in float32.
    Symbolic coordinates (no lowering): refused, saying why, instead of `native`."""
    import onnxruntime as ort

    from ort_dml_ops import inspect

    def model(coords, elem=np.float16):
        return single_op(
            "ScatterND",
            [
                ("data", elem, [7, 3]),
                ("indices", np.int64, [4, coords]),
                ("updates", elem, [4, 3]),
            ],
            {"reduction": "max"},
            opset=18,
        )

    rng = np.random.default_rng(4)
    feeds = {
        "data": rng.integers(-3, 4, (7, 3)).astype(np.float16),
        "indices": np.array([[0], [2], [0], [6]], np.int64),
        "updates": rng.integers(-3, 4, (4, 3)).astype(np.float16),
    }
    with pytest.raises(Exception, match="MLFloat16 data type is not supported"):
        run_cpu(model(1), feeds)
    node = convert(model(1), "webgpu").report.nodes[0]
    assert node.action == "lowered" and "first run fails" in node.reason
    wide = {
        k: v.astype(np.float32) if v.dtype == np.float16 else v
        for k, v in feeds.items()
    }
    (want,) = run_cpu(model(1, np.float32), wide)
    got = ort.InferenceSession(
        convert(model(1), "webgpu").model.SerializeToString(),
        providers=["CPUExecutionProvider"],
    ).run(None, feeds)[0]
    np.testing.assert_array_equal(got, want.astype(np.float16))
    placed = inspect(model(1), "webgpu").to_dict()["nodes"][0]
    assert "first run fails" in placed["reason"]
    symbolic = convert(model("k"), "webgpu").report.nodes[0]
    assert symbolic.action == "refused" and "first run fails" in symbolic.reason
    # float32 is the plugin's own kernel, as before
    assert convert(model(1, np.float32), "webgpu").report.nodes[0].action == "native"
