"""The recorded kernel tables hold the facts the project rests on (DESIGN.md)."""

from __future__ import annotations

from ort_dml_ops.targets import kernels

DML = kernels.recorded("dml_1.24.4.json")
CPU = kernels.recorded("cpu_1.24.4.json")


def _versions(table, op, domain=""):
    return sorted(k.since for k in table.kernels(op, domain))


def test_dml_table_source_is_recorded():
    assert DML.build == "onnxruntime-directml 1.24.4"
    assert len(DML.source["revision"]) == 40 and DML.source["file"].endswith(
        "OperatorRegistration.cpp"
    )
    assert CPU.build.startswith("onnxruntime 1.24.4")


def test_dml_registration_facts():
    assert _versions(DML, "CumSum") == [11, 14]
    assert DML.kernels("CumSum", "")[0].types["T"] == frozenset(
        f"tensor({t})"
        for t in ("float16", "float", "int32", "uint32", "int64", "uint64")
    )
    assert DML.kernels("CumSum", "")[0].cpu_inputs == {1}
    assert _versions(DML, "ScatterElements") == [11, 13, 16]
    assert _versions(DML, "ScatterND") == [11, 13, 16]
    assert _versions(DML, "Scatter") == [9, 11, 13]
    assert not DML.kernels("CumProd", "")
    assert all(k.end is None for ks in DML.by_op.values() for k in ks)
    assert max(k.since for (d, _), ks in DML.by_op.items() if d == "" for k in ks) == 21
    assert {k.query for k in DML.kernels("ScatterElements", "")} == {
        None,
        "QueryScatter",
    }


def test_cpu_1_24_has_no_cumprod_and_scatter_reductions():
    assert not CPU.kernels("CumProd", "")
    assert 18 in _versions(CPU, "ScatterElements")
