"""Unit tests of `inspect` and the capability model (ort_dml_ops.targets) on generated models.

Where the installed onnxruntime can say it, the prediction is held against it: for target cpu,
a session is created iff inspect predicts a kernel for every node.
"""

from __future__ import annotations

import json

import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto as T
from onnx import helper as h

from ort_dml_ops import DOMAIN, UserError, inspect
from ort_dml_ops.targets import get_target

DML, CPU = "DmlExecutionProvider", "CPUExecutionProvider"
IR = 10


def _vi(name, elem, shape=(2, 3)):
    return h.make_tensor_value_info(name, elem, list(shape))


def model_of(nodes, inputs, outputs, opset, inits=(), extra_opsets=(), functions=()):
    g = h.make_graph(nodes, "g", inputs, outputs, list(inits))
    m = h.make_model(
        g,
        opset_imports=[h.make_opsetid("", opset), *extra_opsets],
        functions=list(functions),
    )
    m.ir_version = IR
    return m


def cumsum_model(opset, elem=T.FLOAT, const_axis=True):
    inits = [h.make_tensor("axis", T.INT64, [], [1])] if const_axis else []
    ins = [_vi("x", elem)] + ([] if const_axis else [_vi("axis", T.INT64, ())])
    return model_of(
        [h.make_node("CumSum", ["x", "axis"], ["y"], name="cumsum")],
        ins,
        [_vi("y", elem)],
        opset,
        inits,
    )


def scatter_model(op, opset, reduction=None, elem=T.FLOAT):
    kw = {"reduction": reduction} if reduction else {}
    if op == "ScatterElements":
        ins = [_vi("data", elem), _vi("idx", T.INT64), _vi("upd", elem)]
    else:
        ins = [_vi("data", elem), _vi("idx", T.INT64, (2, 1)), _vi("upd", elem, (2, 3))]
    node = h.make_node(op, ["data", "idx", "upd"], ["out"], name="scatter", **kw)
    return model_of([node], ins, [_vi("out", elem)], opset)


def only(report):
    assert len(report.nodes) == 1
    return report.nodes[0]


def cpu_session_ok(model) -> bool:
    try:
        ort.InferenceSession(
            model.SerializeToString(), providers=["CPUExecutionProvider"]
        )
        return True
    except Exception:  # noqa: BLE001 - any refusal of ORT's means "does not run"
        return False


# -- CumSum ------------------------------------------------------------------------------------

CUMSUM_DML = {T.FLOAT, T.FLOAT16, T.INT32, T.UINT32, T.INT64, T.UINT64}


@pytest.mark.parametrize("opset", range(11, 22))
@pytest.mark.parametrize(
    "elem", [T.FLOAT, T.FLOAT16, T.DOUBLE, T.INT32, T.UINT32, T.INT64, T.UINT64]
)
def test_cumsum_dtypes_dml(opset, elem):
    n = only(inspect(cumsum_model(opset, elem)))
    assert n.since_version == (11 if opset < 14 else 14)
    if elem == T.FLOAT16 and opset < 14:
        assert n.provider is None and n.reason.startswith(
            "invalid model"
        )  # CumSum-11 has no float16
    elif elem in CUMSUM_DML:
        assert n.provider == DML, n.reason
    elif elem == T.DOUBLE:
        assert (
            n.provider == CPU
            and "type not supported" in n.reason
            and "double" in n.reason
        )
    else:  # uint32/uint64 handled above; nothing else here
        raise AssertionError


@pytest.mark.parametrize("opset", [11, 14, 18, 21])
def test_cumsum_axis_input_is_cpu_side_no_copy(opset):
    r = inspect(cumsum_model(opset, const_axis=False))
    assert only(r).provider == DML
    assert (
        r.summary["copies"] == 0
    )  # axis is a CPU input of the DML kernel: no Memcpy node


@pytest.mark.parametrize("opset", [11, 14, 21])
@pytest.mark.parametrize(
    "elem", [T.FLOAT, T.DOUBLE, T.INT32, T.INT64, T.FLOAT16, T.UINT32]
)
def test_cumsum_target_cpu_agrees_with_live_session(opset, elem):
    m = cumsum_model(opset, elem)
    n = only(inspect(m, target="cpu"))
    assert (n.provider is not None) == cpu_session_ok(m), n.reason
    if n.provider is not None:
        assert n.provider == CPU
    else:
        assert n.reason.startswith(("no kernel", "invalid model"))


# -- ScatterElements / ScatterND -----------------------------------------------------------------


def _valid_scatter_cases():
    """Only what ONNX defines: the reduction attribute from opset 16, max/min from opset 18."""
    for op in ("ScatterElements", "ScatterND"):
        for opset in (11, 13, 16, 17, 18, 21):
            for reduction in (None, "none", "add", "mul", "max", "min"):
                if reduction is not None and opset < 16:
                    continue
                if reduction in ("max", "min") and opset < 18:
                    continue
                yield op, opset, reduction


@pytest.mark.parametrize("op,opset,reduction", list(_valid_scatter_cases()))
def test_scatter_dml(op, opset, reduction):
    n = only(inspect(scatter_model(op, opset, reduction)))
    if opset >= 18:
        assert (
            n.provider == CPU
            and "since-version 18" in n.reason
            and "11, 13, 16" in n.reason
        )
    elif reduction in (None, "none"):
        assert n.provider == DML
    else:
        assert (
            n.provider == CPU and "QueryScatter" in n.reason and reduction in n.reason
        )


@pytest.mark.parametrize("op", ["ScatterElements", "ScatterND"])
@pytest.mark.parametrize("opset", [11, 16, 18, 21])
def test_scatter_target_cpu_agrees_with_live_session(op, opset):
    m = scatter_model(op, opset, "add" if opset >= 16 else None)
    n = only(inspect(m, target="cpu"))
    assert (n.provider == CPU) == cpu_session_ok(m)


def test_no_kernel_predicted_and_session_fails():
    m = cumsum_model(
        14, T.BFLOAT16
    )  # no bfloat16 CumSum on the CPU EP, no float16 either -> no cast
    n = only(inspect(m, target="cpu"))
    assert n.provider is None and n.reason.startswith("no kernel")
    assert not cpu_session_ok(m)
    # the same on target dml: DML lacks bfloat16 too; the CPU EP of 1.24.4 has nothing
    n = only(inspect(m, target="dml"))
    assert n.provider is None and "DML" in n.reason


def test_float16_node_runs_on_cpu_through_casts():
    x = _vi("x", T.FLOAT16)
    m = model_of(
        [h.make_node("Softplus", ["x"], ["y"], name="sp")],
        [x],
        [_vi("y", T.FLOAT16)],
        22,
    )
    n = only(inspect(m, target="cpu"))
    assert n.provider == CPU and "Casts" in n.reason
    assert cpu_session_ok(m)


# -- domains, functions, subgraphs, new opsets -----------------------------------------------------


def test_custom_domain_op_runs_on_cpu_with_copies():
    nodes = [
        h.make_node("Relu", ["x"], ["a"], name="relu"),
        h.make_node("CumProd", ["a", "axis"], ["b"], name="cumprod", domain=DOMAIN),
        h.make_node("Neg", ["b"], ["y"], name="neg"),
    ]
    m = model_of(
        nodes,
        [_vi("x", T.FLOAT)],
        [_vi("y", T.FLOAT)],
        17,
        [h.make_tensor("axis", T.INT64, [], [0])],
        [h.make_opsetid(DOMAIN, 1)],
    )
    r = inspect(m)
    assert [n.provider for n in r.nodes] == [DML, CPU, DML]
    assert "custom op" in r.nodes[1].reason
    assert r.summary == {"gpu_nodes": 2, "cpu_nodes": 1, "copies": 2}


def test_unregistered_domain_goes_to_cpu():
    m = model_of(
        [h.make_node("Foo", ["x"], ["y"], name="foo", domain="com.example")],
        [_vi("x", T.FLOAT)],
        [_vi("y", T.FLOAT)],
        17,
        extra_opsets=[h.make_opsetid("com.example", 1)],
    )
    n = only(inspect(m))
    assert n.provider == CPU and "com.example" in n.reason


def test_model_local_function_is_inlined_under_model_opset():
    body = [
        h.make_node("ScatterElements", ["d", "i", "u"], ["o"], name="inner_scatter")
    ]
    f = h.make_function(
        "local.fn", "MyScatter", ["d", "i", "u"], ["o"], body, [h.make_opsetid("", 16)]
    )
    call = h.make_node(
        "MyScatter", ["data", "idx", "upd"], ["out"], name="call", domain="local.fn"
    )
    ins = [_vi("data", T.FLOAT), _vi("idx", T.INT64), _vi("upd", T.FLOAT)]
    for opset, want in ((16, DML), (18, CPU)):
        m = model_of(
            [call],
            ins,
            [_vi("out", T.FLOAT)],
            opset,
            extra_opsets=[h.make_opsetid("local.fn", 1)],
            functions=[f],
        )
        n = only(inspect(m))
        assert n.name == "call/inner_scatter" and n.since_version == (
            16 if opset == 16 else 18
        )
        assert n.provider == want


def _if_model(opset):
    then_g = h.make_graph(
        [h.make_node("CumSum", ["x", "ax"], ["t"], name="cs")],
        "then",
        [],
        [_vi("t", T.FLOAT)],
    )
    else_g = h.make_graph(
        [
            h.make_node(
                "ScatterElements", ["x", "idx", "x"], ["e"], name="se", reduction="add"
            )
        ],
        "else",
        [],
        [_vi("e", T.FLOAT)],
    )
    node = h.make_node(
        "If", ["c"], ["y"], name="if", then_branch=then_g, else_branch=else_g
    )
    return model_of(
        [node],
        [_vi("c", T.BOOL, ()), _vi("x", T.FLOAT), _vi("idx", T.INT64)],
        [_vi("y", T.FLOAT)],
        opset,
        [h.make_tensor("ax", T.INT64, [], [0])],
    )


def test_subgraph_nodes_are_listed_under_ort_names_with_their_graph():
    r = inspect(_if_model(17))
    d = {n.name: n for n in r.nodes}
    assert next(iter(d)) == "if" and set(d) == {"if", "cs", "se"}
    assert (d["cs"].graph, d["se"].graph) == ("if/then_branch", "if/else_branch")
    assert (
        d["cs"].to_dict()["graph"] == "if/then_branch"
        and "graph" not in d["if"].to_dict()
    )
    assert d["if"].provider == DML  # DML registers If (a CPU-implemented kernel) at 16
    assert d["cs"].provider == DML
    assert d["se"].provider == CPU
    assert all(n.provider == CPU for n in inspect(_if_model(17), target="cpu").nodes)


def test_loop_body_nodes_listed():
    body = h.make_graph(
        [
            h.make_node("Identity", ["cond_in"], ["cond_out"], name="cid"),
            h.make_node("Add", ["v_in", "v_in"], ["v_out"], name="add"),
        ],
        "body",
        [_vi("i", T.INT64, ()), _vi("cond_in", T.BOOL, ()), _vi("v_in", T.FLOAT)],
        [_vi("cond_out", T.BOOL, ()), _vi("v_out", T.FLOAT)],
    )
    loop = h.make_node("Loop", ["n", "c", "v"], ["vf"], name="loop", body=body)
    m = model_of(
        [loop],
        [_vi("n", T.INT64, ()), _vi("c", T.BOOL, ()), _vi("v", T.FLOAT)],
        [_vi("vf", T.FLOAT)],
        17,
    )
    r = inspect(m)
    d = {n.name: n.provider for n in r.nodes}
    assert d["loop"] == CPU  # the DML EP registers no Loop
    assert d["add"] == DML


@pytest.mark.parametrize("opset", [22, 23, 24, 25])
def test_ops_changed_at_22_and_later_leave_dml(opset):
    # Cast changed at 21, 23, 24, 25; Softplus at 22; TopK at 24; Pad at 23+: DML stops at 21
    m = model_of(
        [
            h.make_node("Cast", ["x"], ["y"], name="cast", to=T.INT32),
            h.make_node("Softplus", ["x"], ["s"], name="softplus"),
            h.make_node("Relu", ["x"], ["r"], name="relu"),
        ],
        [_vi("x", T.FLOAT)],
        [_vi("y", T.INT32), _vi("s", T.FLOAT), _vi("r", T.FLOAT)],
        opset,
    )
    d = {n.name: n for n in inspect(m).nodes}
    assert d["softplus"].provider == CPU and d["softplus"].since_version == 22
    assert d["relu"].provider == DML  # Relu-14 unchanged
    cast_since = onnx.defs.get_schema("Cast", opset, "").since_version
    assert d["cast"].since_version == cast_since
    assert d["cast"].provider == (DML if cast_since == 21 else CPU)
    assert all(n.provider == CPU for n in inspect(m, target="cpu").nodes)
    assert cpu_session_ok(m)


# -- graph-level rules -------------------------------------------------------------------------


def test_constant_folded_node_is_reported_and_not_counted():
    nodes = [
        h.make_node("Add", ["c1", "c2"], ["k"], name="fold_me"),
        h.make_node("Mul", ["x", "k"], ["y"], name="mul"),
    ]
    inits = [
        h.make_tensor("c1", T.FLOAT, [3], [1, 2, 3]),
        h.make_tensor("c2", T.FLOAT, [3], [1, 1, 1]),
    ]
    r = inspect(model_of(nodes, [_vi("x", T.FLOAT)], [_vi("y", T.FLOAT)], 17, inits))
    assert r.nodes[0].provider is None and r.nodes[0].reason.startswith(
        "constant-folded"
    )
    assert r.nodes[1].provider == DML
    assert r.summary == {"gpu_nodes": 1, "cpu_nodes": 0, "copies": 0}


def test_static_shape_is_folded_only_with_optimizations():
    m = model_of(
        [h.make_node("Shape", ["x"], ["s"], name="shape")],
        [_vi("x", T.FLOAT)],
        [_vi("s", T.INT64, (2,))],
        17,
    )
    assert only(inspect(m)).reason.startswith("constant-folded")
    assert only(inspect(m, optimized=False)).provider == DML


def test_shape_subgraph_stays_on_cpu():
    # dim 1 first: ORT's ReshapeFusion does not make this shape a constant (a Gather of another
    # dim than its place counts as -1, and the constant is -1 too: tests/test_placement_fusions.py)
    nodes = [
        h.make_node("Shape", ["x"], ["s"], name="shape"),
        h.make_node("Gather", ["s", "one"], ["d0"], name="gather", axis=0),
        h.make_node("Unsqueeze", ["d0", "ax0"], ["d0u"], name="unsq"),
        h.make_node("Concat", ["d0u", "minus1"], ["shp"], name="concat", axis=0),
        h.make_node("Reshape", ["x", "shp"], ["y"], name="reshape"),
    ]
    inits = [
        h.make_tensor("one", T.INT64, [], [1]),
        h.make_tensor("ax0", T.INT64, [1], [0]),
        h.make_tensor("minus1", T.INT64, [1], [-1]),
    ]
    x = h.make_tensor_value_info("x", T.FLOAT, ["N", 3])
    r = inspect(
        model_of(nodes, [x], [h.make_tensor_value_info("y", T.FLOAT, None)], 17, inits)
    )
    d = {n.name: n.provider for n in r.nodes}
    assert d["shape"] == DML and d["reshape"] == DML
    assert d["gather"] == d["unsq"] == d["concat"] == CPU
    assert "GetCpuPreferredNodes" in r.nodes[1].reason
    assert (
        r.summary["copies"] == 0
    )  # Shape's output and Reshape's shape input are CPU-side


def test_target_cpu_every_node_on_cpu_and_no_copies():
    r = inspect(_if_model(13), target="cpu")
    assert all(n.provider == CPU for n in r.nodes)
    assert r.summary["gpu_nodes"] == 0 and r.summary["copies"] == 0


def test_cuda_target_scatter_reduction_native_from_18():
    r = inspect(scatter_model("ScatterElements", 18, "add"), target="cuda")
    assert only(r).provider == "CUDAExecutionProvider"


# -- placement API (used by the converter) -------------------------------------------------------


def test_placement_api():
    t = get_target("dml")
    node = h.make_node("CumSum", ["x", "a"], ["y"])
    assert t.placement(node, 17, {"x": "tensor(double)"})[0] == CPU
    assert t.placement(node, {"": 17}, {"x": T.FLOAT})[0] == DML
    assert t.has_native_kernel(
        node, 21, {"x": h.make_tensor_type_proto(T.FLOAT16, None)}
    )
    d = t.explain(h.make_node("ScatterElements", ["d", "i", "u"], ["o"]), 18)
    assert not d.on_target and d.since_version == 18 and d.provider == CPU
    with pytest.raises(UserError):
        get_target("tpu")


# -- report format, CLI, errors --------------------------------------------------------------------


def test_to_dict_format_and_text():
    r = inspect(scatter_model("ScatterElements", 16, "add"))
    d = r.to_dict()
    assert (
        set(d) == {"target", "nodes", "summary", "counts", "copy_nodes"}
        and d["target"] == "dml"
    )
    assert set(d["nodes"][0]) == {
        "name",
        "op_type",
        "domain",
        "since_version",
        "provider",
        "reason",
    }
    assert set(d["summary"]) == {"gpu_nodes", "cpu_nodes", "copies"}
    assert set(d["counts"]) == {"cpu_shape_nodes", "removed_nodes", "failing_nodes"}
    assert len(d["copy_nodes"]) == d["summary"]["copies"]
    json.dumps(d)
    text = r.to_text()
    first = text.splitlines()[0]
    assert (
        first.startswith("dml (DmlExecutionProvider): ")
        and "1 on the CPU (1 compute, 0 shape-only)" in first
    )
    assert (
        "family nodes on the CPU: scatter (ScatterElements): support query: QueryScatter"
        in first
    )
    assert "compute nodes on the CPU" in text and "(removed)" not in text


def _main(argv):
    import argparse

    from ort_dml_ops.commands import inspect as cmd

    p = argparse.ArgumentParser(prog="ort-dml-ops")
    cmd.add_parser(p.add_subparsers(dest="verb"))
    args = p.parse_args(argv)
    return args.func(args)


def test_cli_json(tmp_path, capsys):
    path = tmp_path / "m.onnx"
    onnx.save(scatter_model("ScatterElements", 18), str(path))
    assert _main(["inspect", str(path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["nodes"][0]["provider"] == CPU and out["summary"]["cpu_nodes"] == 1
    assert _main(["inspect", str(path), "--target", "cpu"]) == 0
    assert "CPUExecutionProvider" in capsys.readouterr().out


def test_cli_via_main_when_all_verbs_import(tmp_path, capsys):
    from ort_dml_ops import cli

    path = tmp_path / "m.onnx"
    onnx.save(cumsum_model(17), str(path))
    rc = cli.main(["inspect", str(path), "--json"])
    assert rc == 0 and json.loads(capsys.readouterr().out)["summary"]["gpu_nodes"] == 1
    assert cli.main(["inspect", str(tmp_path / "missing.onnx")]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no such file" in err


@pytest.mark.parametrize("bad", ["missing", "empty", "garbage"])
def test_bad_input_one_line_errors(tmp_path, bad):
    p = tmp_path / "x.onnx"
    if bad == "empty":
        p.write_bytes(b"")
    elif bad == "garbage":
        p.write_bytes(b"\x00\x01not a model at all" * 3)
    with pytest.raises(UserError) as exc:
        inspect(str(p))
    assert "\n" not in str(exc.value)
    with pytest.raises(UserError):
        inspect(cumsum_model(17), target="nope")


def test_inspect_leaves_the_garbage_collector_as_it_found_it():
    """inspect pauses Python's cyclic collector while it places (a speed choice, see
    ort_dml_ops.collector); the caller's setting is back afterwards, on or off."""
    import gc

    from ort_dml_ops.bench.models import chain_model

    model = chain_model(20)
    assert gc.isenabled()
    inspect(model, "dml")
    assert gc.isenabled()
    gc.disable()
    try:
        inspect(model, "dml")
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_inspect_models_the_fallback_rewrite_of_a_domain_op_inside_a_function():
    """A DOMAIN op held in a model-local function still gets the fallback rewrite that
    ort_dml_ops.InferenceSession hands ORT (fallback.prepare rewrites function bodies too): the
    node ORT places is the per-dtype kernel, on the CPU EP."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    from ort_dml_ops import DOMAIN
    from ort_dml_ops.fallback import KERNEL_DOMAIN

    fn = helper.make_function(
        "local",
        "f",
        ["x", "ax"],
        ["y"],
        [helper.make_node("CumProd", ["x", "ax"], ["y"], domain=DOMAIN)],
        [helper.make_opsetid("", 17), helper.make_opsetid(DOMAIN, 1)],
    )
    g = helper.make_graph(
        [helper.make_node("f", ["x", "ax"], ["y"], domain="local", name="call")],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
        [numpy_helper.from_array(np.array(1, np.int64), "ax")],
    )
    model = helper.make_model(
        g,
        opset_imports=[
            helper.make_opsetid("", 17),
            helper.make_opsetid(DOMAIN, 1),
            helper.make_opsetid("local", 1),
        ],
        functions=[fn],
        ir_version=10,
    )
    nodes = inspect(model, "dml").to_dict()["nodes"]
    assert [(n["op_type"], n["domain"], n["provider"]) for n in nodes] == [
        ("CumProd_float32", KERNEL_DOMAIN, "CPUExecutionProvider")
    ]


def _listed_and_ran(target, label, reduction, symbolic) -> tuple[set, set]:
    """(the nodes `inspect` lists as running, the nodes ORT's CPU EP runs) for the budget's
    single-op float32 scatter (`label`, `reduction`, sizes static or run-time), lowered for
    `target`."""
    from ort_dml_ops.bench import budget
    from ort_dml_ops.conversion import convert
    from tests.support import nodes_ort_cpu_runs

    (case,) = [
        c
        for c in budget.op_cases(target)
        if c.label == label
        and c.reduction == reduction
        and c.dtype == "float32"
        and c.symbolic == symbolic
    ]
    model = convert(budget.build_model(case, 50), target=target, strategy="lower").model
    listed = {n.name for n in inspect(model, "cpu").nodes if n.provider}
    return listed, nodes_ort_cpu_runs(model)


@pytest.mark.parametrize("target", ["dml", "webgpu"])
@pytest.mark.parametrize("label", ["ScatterElements ax0", "ScatterND"])
@pytest.mark.parametrize("reduction", ["add", "mul", "max"])
def test_lowered_scatters_rows_are_the_nodes_ort_runs(target, label, reduction):
    """A lowered scatter that reads its updates as rows (a Transpose, static sizes) lists the
    nodes ORT runs, node for node: no Reshape to its own shape follows the Transpose, which
    ORT's transpose optimizer would merge into a new, renamed Transpose (HandleReshape) —
    seen on onnx's test_scatternd_multiply and on the WebGPU variant's axis-0 scatters."""
    listed, ran = _listed_and_ran(target, label, reduction, False)
    assert listed == ran


@pytest.mark.parametrize("label", ["ScatterElements ax1", "ScatterND"])
@pytest.mark.parametrize("reduction", ["add", "mul"])
def test_block_folds_at_run_time_sizes_are_the_nodes_ort_runs(label, reduction):
    """A float block fold whose sizes are known only at run time cuts its last level's masks
    from constants by a Slice (blocksum._sliced_masks): `inspect` lists exactly the nodes ORT's
    CPU EP runs, the Slice of a constant whose ends come from the CPU included."""
    listed, ran = _listed_and_ran("dml", label, reduction, True)
    assert listed == ran
