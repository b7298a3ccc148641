"""Zoo and real-export models converted for WebGPU, run on ONNX Runtime's WebGPU plugin EP.

For every model: `convert(target="webgpu")` gives the expected outputs on the plugin; no
CumSum / CumProd / Scatter* node runs on the CPU EP except those the convert report says stay
there (and why: data the plugin takes no kernel for, e.g. int64); and `inspect --target webgpu`
agrees with the plugin node for node, before and after convert. Placement is read from ORT's
assignment record (`session.record_ep_graph_assignment_info`), never assumed.

The comparison is node for node: every node ORT ran is listed by inspect as running, on the
same EP, and every node inspect lists as running is one ORT ran (nodes ORT's optimizers remove
are listed by inspect as removed, with the step; nodes ORT adds are listed as added). On files
with layout-sensitive ops (Conv, pools) this no longer holds: docs/webgpu.md, "Known limits",
and tests/webgpu/test_third_party_webgpu.py.
"""

from __future__ import annotations

import numpy as np
import pytest

from ort_dml_ops import inspect, zoo
from ort_dml_ops.conversion import convert

from .conftest import placement, webgpu_session

pytestmark = pytest.mark.webgpu

CPU, WEBGPU = "CPUExecutionProvider", "WebGpuExecutionProvider"
FAMILY = ("CumSum", "CumProd", "ScatterElements", "ScatterND", "Scatter")

try:  # the real-export corpus (tests/real_models.py), once it is on this branch
    from tests.real_models import REAL_MODELS
except ImportError:  # pragma: no cover - depends on the checkout
    REAL_MODELS = []


def _entries():
    out = [pytest.param(("zoo", m.name), id=f"zoo:{m.name}") for m in zoo.models()]
    out += [pytest.param(("real", r.name), id=f"real:{r.name}") for r in REAL_MODELS]
    return out


def _load(kind, name):
    """(model, feeds, compare(outputs) -> list of problems)."""
    if kind == "zoo":
        m = zoo.get(name)
        return m.load_model(), m.inputs(), m.compare
    r = next(r for r in REAL_MODELS if r.name == name)
    # torch's outputs, or what the model computes where the exporter wrote it wrong (r.reference)
    return r.load(), dict(r.inputs), r.compare


def _run(model, feeds):
    s = webgpu_session(model)
    outs = s.run(None, feeds)
    return placement(s), dict(zip([o.name for o in s.get_outputs()], outs))


def _agreement(model, where: dict) -> list[str]:
    """Disagreements between inspect(model, "webgpu") and the plugin's record, node for node:
    a node placed elsewhere, a node ORT ran that inspect does not list as running (one ORT
    added, or one inspect believes removed), a node inspect lists as running that ORT did not
    run (one ORT's optimizers removed)."""
    predicted = {n.name: n for n in inspect(model, "webgpu").nodes}
    bad = []
    for name, ep in where.items():
        n = predicted.get(name)
        if n is None or n.provider is None:
            bad.append(
                f"{name}: the plugin ran it on {ep}, inspect does not list it running"
            )
        elif n.provider != ep:
            bad.append(
                f"{name} ({n.op_type}): inspect says {n.provider}, the plugin ran it on {ep} ({n.reason})"
            )
    bad += [
        f"{name} ({n.op_type}): inspect says {n.provider}, ORT did not run it"
        for name, n in predicted.items()
        if n.provider is not None and name not in where
    ]
    return bad


@pytest.mark.parametrize("strategy", ["auto", "lower"])
@pytest.mark.parametrize("entry", _entries())
def test_converted_model_runs_on_webgpu_with_expected_outputs(
    entry, strategy, webgpu_lane
):
    """`auto` (what users get) and `lower` (every lowering the rules make, each exact on the
    plugin itself, not only on ORT's CPU EP)."""
    model, feeds, compare = _load(*entry)
    result = convert(model, "webgpu", strategy=strategy)
    where, outs = _run(result.model, feeds)
    assert compare(outs) == []
    # the nodes the report says stay on the CPU EP's kernel (the plugin takes no kernel for their data)
    left_on_cpu = {
        r.name
        for r in result.report.nodes
        if r.action == "native" and "stays on the CPU EP" in r.reason
    }
    family_ops = {n.name for n in result.model.graph.node if n.op_type in FAMILY}
    family_on_cpu = {n for n in where if where[n] == CPU and n in family_ops}
    assert family_on_cpu <= left_on_cpu, (
        f"family nodes on the CPU: {sorted(family_on_cpu - left_on_cpu)}"
    )


@pytest.mark.parametrize("stage", ["original", "converted"])
@pytest.mark.parametrize("entry", _entries())
def test_inspect_agrees_with_the_plugin(entry, stage, webgpu_lane):
    model, feeds, _ = _load(*entry)
    if stage == "converted":
        model = convert(model, "webgpu").model
    where, _ = _run(model, feeds)
    assert _agreement(model, where) == []


def test_plugin_keeps_cpu_fed_nodes_on_webgpu(webgpu_lane):
    """Pinned (minimal repro): unlike the in-tree GPU EPs, the WebGPU plugin does not apply
    GetCpuPreferredNodes (fallback_cpu_capability.cc). An Add whose inputs are a CPU-side value
    (ConstantOfShape has no WebGPU kernel) and a small initializer stays on WebGPU, where ORT's
    in-tree rule would move it to the CPU. `Target("webgpu").cpu_preferred` is False because of it.
    """
    from onnx import TensorProto as T
    from onnx import helper as h

    nodes = [
        h.make_node(
            "ConstantOfShape",
            ["s"],
            ["c"],
            name="cos",
            value=h.make_tensor("v", T.FLOAT, [1], [1.0]),
        ),
        h.make_node("Add", ["c", "b"], ["y"], name="add"),
    ]
    g = h.make_graph(
        nodes,
        "g",
        [h.make_tensor_value_info("s", T.INT64, [2])],
        [h.make_tensor_value_info("y", T.FLOAT, None)],
        [h.make_tensor("b", T.FLOAT, [1], [2.0])],
    )
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)], ir_version=8)
    s = webgpu_session(m)
    assert placement(s) == {"cos": CPU, "add": WEBGPU}
    assert {n.name: n.provider for n in inspect(m, "webgpu").nodes} == {
        "cos": CPU,
        "add": WEBGPU,
    }
    np.testing.assert_array_equal(
        s.run(None, {"s": np.array([2, 3])})[0], np.full([2, 3], 3.0, np.float32)
    )


def test_layout_sensitive_nodes_run_in_nhwc_on_webgpu_as_inspect_says(webgpu_lane):
    """ORT's layout transformation moves the plugin's Conv and MaxPool to NHWC: the record
    names them `<name>_token_<n>` on WebGPU (the Transposes around them pushed out past the
    Relu); inspect models the step (placement/layout_transformation.py): the same node list,
    the renamed nodes on WebGPU with the note, the originals listed as not running."""
    import re

    from onnx import TensorProto as T
    from onnx import helper as h
    from onnx import numpy_helper

    from ort_dml_ops.targets.target import NHWC_NOTE

    w = numpy_helper.from_array(np.ones([4, 3, 3, 3], np.float32), "w")
    nodes = [
        h.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
        h.make_node("Relu", ["c"], ["r"], name="relu"),
        h.make_node("MaxPool", ["r"], ["y"], name="pool", kernel_shape=[2, 2]),
    ]
    g = h.make_graph(
        nodes,
        "g",
        [h.make_tensor_value_info("x", T.FLOAT, [1, 3, 8, 8])],
        [h.make_tensor_value_info("y", T.FLOAT, [1, 4, 4, 4])],
        [w],
    )
    model = h.make_model(g, opset_imports=[h.make_opsetid("", 17)], ir_version=8)
    ran = placement(webgpu_session(model))
    renamed = {re.sub(r"_token_\d+$", "", n): ep for n, ep in ran.items()}
    assert {n for n in ran if n.startswith(("conv_token_", "pool_token_"))}
    assert renamed["conv"] == renamed["relu"] == renamed["pool"] == WEBGPU
    predicted = {n.name: n for n in inspect(model, "webgpu").nodes}
    assert {n: r.provider for n, r in predicted.items() if r.provider} == ran
    for name in ran:
        if name.startswith(("conv_token_", "pool_token_")):
            assert NHWC_NOTE in predicted[name].reason
            assert predicted[name].domain == "com.ms.internal.nhwc"
    assert predicted["conv"].provider is None and predicted["conv"].removed_by
    assert NHWC_NOTE not in predicted["relu"].reason
