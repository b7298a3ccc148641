"""A model over 2 GB (external data), generated lazily: a sparse 2.1 GB data file, nothing written.

Part of the bad-input corpus (tests/test_bad_inputs.py): `run` and `inspect` must handle it,
the input is untouched, and convert must either produce a working model or refuse in one line.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import ort_dml_ops
from ort_dml_ops import DOMAIN
from ort_dml_ops.cli import main

BIG = 2**31 + 2**26  # bytes of external data: over the 2 GiB protobuf limit


@pytest.fixture(scope="module")
def big_model(tmp_path_factory):
    d = tmp_path_factory.mktemp("big")
    n = BIG // 4
    with open(d / "weights.bin", "wb") as f:  # sparse: no disk blocks, no time
        f.truncate(BIG)
    big = TensorProto(name="big", data_type=TensorProto.FLOAT, dims=[n])
    big.data_location = TensorProto.EXTERNAL
    for k, v in {"location": "weights.bin", "offset": "0", "length": str(BIG)}.items():
        e = big.external_data.add()
        e.key, e.value = k, v
    nodes = [
        helper.make_node("CumProd", ["x", "axis"], ["y"], domain=DOMAIN, name="scan"),
        helper.make_node("Shape", ["big"], ["n"], name="shape"),
    ]
    graph = helper.make_graph(
        nodes,
        "big",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
        [
            helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4]),
            helper.make_tensor_value_info("n", TensorProto.INT64, [1]),
        ],
        [big, helper.make_tensor("axis", TensorProto.INT64, [], [1])],
    )
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(DOMAIN, 1)],
        ir_version=10,
    )
    path = d / "big.onnx"
    path.write_bytes(model.SerializeToString())
    return path


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_run_big_model(big_model, capsys):
    """The fallback session keeps the external data where it is (no 2 GB protobuf in memory)."""
    before = _digest(big_model)
    sess = ort_dml_ops.InferenceSession(big_model, providers=["CPUExecutionProvider"])
    y, n = sess.run(None, {"x": np.full((2, 4), 2, np.float32)})
    assert np.array_equal(
        y, np.cumprod(np.full((2, 4), 2, np.float32), axis=1)
    ) and n.tolist() == [BIG // 4]
    assert _digest(big_model) == before
    assert sorted(p.name for p in big_model.parent.iterdir()) == [
        "big.onnx",
        "weights.bin",
    ]


def test_inspect_big_model(big_model, capsys):
    assert main(["inspect", str(big_model)]) == 0


@pytest.mark.slow  # copies 2.1 GB of (sparse) external data beside the output
def test_convert_big_model(big_model, tmp_path, capsys):
    before = _digest(big_model)
    out = tmp_path / "out.onnx"
    rc = main(["convert", str(big_model), "-o", str(out)])
    assert _digest(big_model) == before
    assert rc == 0, capsys.readouterr().err
    # the data stayed external: copied beside the output (holes kept), the graph points at it
    data = tmp_path / "out.onnx.data"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.onnx", "out.onnx.data"]
    assert data.stat().st_size >= BIG and data.stat().st_blocks * 512 < 2**26
    assert out.stat().st_size < 2**20
    onnx.checker.check_model(str(out), full_check=True)
    sess = ort_dml_ops.InferenceSession(out, providers=["CPUExecutionProvider"])
    y, n = sess.run(None, {"x": np.full((2, 4), 2, np.float32)})
    assert np.array_equal(
        y, np.cumprod(np.full((2, 4), 2, np.float32), axis=1)
    ) and n.tolist() == [BIG // 4]
