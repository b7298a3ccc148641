"""`inspect --target dml` against the real DML EP's own assignment record, on real graphs.

Every zoo model before and after convert(target="dml"), and every model of the real-export
corpus (tests/real_models.py's REAL_MODELS, when that module is present) before and after
convert: ORT (onnxruntime-directml 1.24.4 in the Wine lane) records which EP its partitioner gave
each node (`session.record_ep_graph_assignment_info`), and the Memcpy nodes that ran come from a
profile after one complete run (tools/dml_lane/truth.py). Each node must be predicted on
ORT's EP under ORT's name, no node ORT removed may be predicted to run, and the copy count must
be equal. Sessions run with ORT's default options and DML graph fusion off (the emulator crashes
on large fused graphs, docs/dml-lane.md; fusion comes after partitioning and does not move a
node or a copy: measured equal on the models where both run). Where the run itself fails under
the emulator, the copies ORT logged adding at session creation are compared instead.

ONE lane batch for the whole module.
"""

from __future__ import annotations

import pytest

from ort_dml_ops import DOMAIN, inspect, zoo
from ort_dml_ops.conversion import convert
from ort_dml_ops.placement.compare import compare

# an exhaustive sweep (every zoo and real-export model, before and after convert, against ORT's record on the lane): `make test-full`
pytestmark = [pytest.mark.dml, pytest.mark.full]


def _real_models() -> list:
    try:
        from tests.real_models import REAL_MODELS
    except ImportError:  # the corpus is not in this checkout
        return []
    return list(REAL_MODELS)


def _cases():
    cases = []
    for m in zoo.models():
        model = m.load_model()
        fallback = any(i.domain == DOMAIN for i in model.opset_import)
        cases.append((f"zoo/{m.name}", model, m.inputs(), fallback))
        cases.append(
            (
                f"zoo/{m.name}:dml",
                convert(model, "dml", strategy="auto").model,
                m.inputs(),
                False,
            )
        )
    for r in _real_models():
        model = r.load()
        cases.append((f"real/{r.name}", model, r.inputs, r.uses_domain_ops))
        cases.append(
            (
                f"real/{r.name}:dml",
                convert(model, "dml", strategy="auto").model,
                r.inputs,
                False,
            )
        )
    return cases


CASES = _cases()


@pytest.fixture(scope="module")
def truths(lane_ready):
    from dml_lane.truth import record

    results = record(
        [(name, model, feeds) for name, model, feeds, _ in CASES],
        fusion=False,
        use_fallback=[fb for *_, fb in CASES],
    )
    return {name: r for (name, *_), r in zip(CASES, results)}


@pytest.mark.parametrize("name", [c[0] for c in CASES])
def test_inspect_equals_ort_assignment(name, truths):
    model = next(c[1] for c in CASES if c[0] == name)
    truth = truths[name]
    assert truth.get("assignment"), (
        f"{name}: no assignment record ({truth.get('stage')}: {truth.get('error')})"
    )
    a = compare(name, inspect(model, "dml"), truth)
    assert not a.problems, "\n".join(a.problems)
    assert a.copies_predicted == a.copies_real, (
        a.copies_source,
        truth.get("memcpy"),
        truth.get("memcpy_logged"),
    )
