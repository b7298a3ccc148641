"""Zoo and real-export models converted for WebGPU, run on ONNX Runtime's WebGPU plugin EP.

For every model: `convert(target="webgpu")` gives the expected outputs on the plugin; no
CumSum / CumProd / Scatter* node runs on the CPU EP except those the convert report says stay
there (and why: data the plugin takes no kernel for, e.g. int64); and `inspect --target webgpu`
agrees with the plugin node for node, before and after convert. Placement is read from ORT's
assignment record (`session.record_ep_graph_assignment_info`), never assumed.

The comparison covers every model node ORT ran. Nodes ORT's optimizers remove before placement
(Identity elimination, common-subexpression elimination of repeated Shape(x)/Size chains,
constant folding, Reshape fusion, the transpose optimizer) have no placement to compare: inspect
models only part of those rewrites (docs/webgpu.md, "Known limits"). Nodes ORT made itself
("*_new_reshape", a "Gather" of its own, the fallback's dtype casts) are not the model's.
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
#: node kinds ORT's default graph optimizations may remove (see module docstring)
ORT_REMOVES = {
    "Identity",
    "Reshape",
    "Constant",
    "Squeeze",
    "Unsqueeze",
    "Shape",
    "Cast",
    "Expand",
}

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
    """Disagreements between inspect(model, "webgpu") and the plugin's record, over every node
    of the model that ORT ran."""
    predicted = {n.name: n for n in inspect(model, "webgpu").nodes}
    bad = []
    for name, ep in where.items():
        n = predicted.get(name)
        if n is not None and n.provider != ep:
            bad.append(
                f"{name} ({n.op_type}): inspect says {n.provider}, the plugin ran it on {ep} ({n.reason})"
            )
    return bad


@pytest.mark.parametrize("entry", _entries())
def test_converted_model_runs_on_webgpu_with_expected_outputs(entry, webgpu_lane):
    model, feeds, compare = _load(*entry)
    result = convert(model, "webgpu")
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
