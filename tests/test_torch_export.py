"""ort_dml_ops.torch: every translation, exported by torch 2.13's real exporters (dynamo and
TorchScript), run by ONNX Runtime (as exported, through ort_dml_ops.InferenceSession, and
after `convert` for DirectML) and compared with torch's own outputs: exact, for float
(integer-valued, so every sum and quotient is exact) and int64, with duplicate indices, a
negative dim, an index larger than src, empty updates and negative integers (torch floors
an integer mean). torch itself rejects negative indices in all three ops (measured below), so
no export can carry one.
"""

from __future__ import annotations

import io
import logging
import warnings

import numpy as np
import onnx
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("onnxscript")

import ort_dml_ops
import ort_dml_ops.torch as odt

pytestmark = pytest.mark.filterwarnings("ignore")
logging.getLogger("torch.onnx").setLevel(logging.ERROR)
REDUCES = ("sum", "prod", "mean", "amax", "amin")


def _export(module, args, dynamo: bool, **kwargs) -> onnx.ModelProto:
    names = [f"in{k}" for k in range(len(args))]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if dynamo:
            return odt.export(
                module, args, input_names=names, verbose=False
            ).model_proto
        f = io.BytesIO()
        odt.export(module, args, f, dynamo=False, input_names=names, **kwargs)
        return onnx.load_model_from_string(f.getvalue())


def _check(module, args, dynamo: bool, **kwargs) -> None:
    """ORT's outputs on the export (as is, and converted for DML) equal torch's, bit for bit."""
    want = module(*args)
    want = [t.detach().numpy() for t in (want if isinstance(want, tuple) else (want,))]
    model = _export(module, args, dynamo, **kwargs)
    with odt.onnx_schemas():
        onnx.checker.check_model(model, full_check=True)
    feeds = {f"in{k}": a.numpy() for k, a in enumerate(args)}
    for label, candidate in (
        ("exported", model),
        ("converted", ort_dml_ops.convert(model, "dml").model),
    ):
        got = ort_dml_ops.InferenceSession(
            candidate, providers=["CPUExecutionProvider"]
        ).run(None, feeds)
        for g, w in zip(got, want):
            assert g.dtype == w.dtype and g.shape == w.shape, (
                label,
                g.dtype,
                g.shape,
                w.dtype,
                w.shape,
            )
            np.testing.assert_array_equal(g, w, err_msg=label)


class ScatterReduce(torch.nn.Module):
    def __init__(self, reduce, include_self, dim=1):
        super().__init__()
        self.reduce, self.include_self, self.dim = reduce, include_self, dim

    def forward(self, xf, xi, index, src):
        return (
            xf.scatter_reduce(
                self.dim,
                index,
                src.float(),
                self.reduce,
                include_self=self.include_self,
            ),
            xi.scatter_reduce(
                self.dim, index, src, self.reduce, include_self=self.include_self
            ),
        )


class IndexReduce(torch.nn.Module):
    def __init__(self, reduce, include_self, dim=0):
        super().__init__()
        self.reduce, self.include_self, self.dim = reduce, include_self, dim

    def forward(self, xf, xi, index, src):
        return (
            xf.index_reduce(
                self.dim,
                index,
                src.float(),
                self.reduce,
                include_self=self.include_self,
            ),
            xi.index_reduce(
                self.dim, index, src, self.reduce, include_self=self.include_self
            ),
        )


class IndexAdd(torch.nn.Module):
    def forward(self, xf, xi, index, src):
        return xf.index_add(0, index, src.float(), alpha=2), xi.index_add(0, index, src)


class SegmentReduce(torch.nn.Module):
    def __init__(self, reduce="sum", initial=None):
        super().__init__()
        self.reduce, self.initial = reduce, initial

    def forward(self, data, lengths):
        return torch.segment_reduce(
            data, self.reduce, lengths=lengths, initial=self.initial
        )


class CumProd(torch.nn.Module):
    def forward(self, xf, xi):
        return (
            torch.cumprod(xf, -1),
            torch.cumprod(xi, 0),
            torch.cumprod(xi, 1, dtype=torch.float32),
        )


def _ints(shape, low, high, seed):
    return torch.from_numpy(np.random.default_rng(seed).integers(low, high, shape))


def _scatter_args(index):
    x = _ints((3, 5), -9, 10, 1)
    src = _ints((3, 6), -4, 5, 2)  # wider than index: torch reads src[:index.shape]
    return x.float(), x, index, src


DUPLICATES = torch.tensor([[0, 0, 4, 0], [3, 3, 3, 3], [1, 2, 1, 4]])


@pytest.mark.parametrize("dynamo", [True, False], ids=["dynamo", "torchscript"])
@pytest.mark.parametrize("include_self", [True, False], ids=["self", "noself"])
@pytest.mark.parametrize("reduce", REDUCES)
def test_scatter_reduce(reduce, include_self, dynamo):
    _check(ScatterReduce(reduce, include_self), _scatter_args(DUPLICATES), dynamo)


@pytest.mark.parametrize("dynamo", [True, False], ids=["dynamo", "torchscript"])
def test_scatter_reduce_negative_dim(dynamo):
    _check(ScatterReduce("mean", False, dim=-1), _scatter_args(DUPLICATES), dynamo)


@pytest.mark.parametrize("dynamo", [True, False], ids=["dynamo", "torchscript"])
def test_scatter_reduce_empty_updates(dynamo):
    _check(
        ScatterReduce("amax", False),
        _scatter_args(torch.zeros((3, 0), dtype=torch.int64)),
        dynamo,
    )


def _index_args(index):
    x = _ints((5, 3), -9, 10, 3)
    return x.float(), x, index, _ints((len(index), 3), -4, 5, 4)


@pytest.mark.parametrize("dynamo", [True, False], ids=["dynamo", "torchscript"])
@pytest.mark.parametrize("include_self", [True, False], ids=["self", "noself"])
@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
def test_index_reduce(reduce, include_self, dynamo):
    _check(
        IndexReduce(reduce, include_self),
        _index_args(torch.tensor([0, 4, 0, 2, 0, 4])),
        dynamo,
    )


@pytest.mark.parametrize("dynamo", [True, False], ids=["dynamo", "torchscript"])
def test_index_reduce_negative_dim_and_empty_index(dynamo):
    x = _ints((3, 5), -9, 10, 5)
    _check(
        IndexReduce("mean", False, dim=-1),
        (x.float(), x, torch.tensor([1, 1, 4]), _ints((3, 3), -4, 5, 6)),
        dynamo,
    )
    _check(
        IndexReduce("amin", True),
        _index_args(torch.zeros(0, dtype=torch.int64)),
        dynamo,
    )


@pytest.mark.parametrize("dynamo", [True, False], ids=["dynamo", "torchscript"])
def test_index_add_duplicates(dynamo):
    _check(IndexAdd(), _index_args(torch.tensor([0, 4, 0, 2, 0, 4])), dynamo)


@pytest.mark.parametrize("dynamo", [True, False], ids=["dynamo", "torchscript"])
def test_cumprod(dynamo):
    x = _ints((3, 6), -3, 4, 7)
    x[1, 2] = 0
    _check(CumProd(), (x.float(), x), dynamo)


@pytest.mark.parametrize("dynamo", [True, False], ids=["dynamo", "torchscript"])
@pytest.mark.parametrize("initial", [None, 3.0], ids=["no-initial", "initial"])
@pytest.mark.parametrize("reduce", ["sum", "mean", "prod", "max", "min"])
def test_segment_reduce(reduce, initial, dynamo):
    """lengths with an empty segment (torch: the identity, NaN for mean, or `initial`)."""
    data = _ints((6, 3), -4, 5, 13).float()
    _check(SegmentReduce(reduce, initial), (data, torch.tensor([2, 0, 3, 1])), dynamo)


class CumProdAlong(torch.nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return torch.cumprod(x, dim=self.dim)


class TwoCumProds(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.rows, self.flat = CumProdAlong(1), CumProdAlong(0)

    def forward(self, x, v):
        return self.rows(x), self.flat(v)


def test_cumprod_inside_module_functions():
    """TorchScript's `export_modules_as_functions`: both cumprods are calls of one local
    function, its `dim` a function attribute (`ref_attr_name`), the calls of rank 2 and 1.
    convert inlines the calls and lowers each (issue 32: the body alone cannot be lowered)."""
    x = _ints((3, 6), -3, 4, 5)
    args = (x.float(), _ints((7,), -2, 3, 6).float())
    model = _export(
        TwoCumProds(), args, False, export_modules_as_functions={CumProdAlong}
    )
    assert [f.name for f in model.functions] == ["CumProdAlong"]
    assert [n.action for n in ort_dml_ops.convert(model, "dml").report.nodes] == [
        "lowered",
        "lowered",
    ]
    _check(TwoCumProds(), args, False, export_modules_as_functions={CumProdAlong})


def test_cumprod_exports_as_domain_cumprod():
    model = _export(
        CumProd(), (torch.ones(2, 3), torch.ones(2, 3, dtype=torch.int64)), dynamo=True
    )
    assert {(n.domain, n.op_type) for n in model.graph.node} >= {
        (ort_dml_ops.DOMAIN, "CumProd")
    }
    assert {o.domain: o.version for o in model.opset_import}[
        ort_dml_ops.DOMAIN
    ] == ort_dml_ops.DOMAIN_VERSION


# --- what torch 2.13 does without this package (if one of these starts passing, torch fixed it) ---


def test_torch_alone_exports_scatter_reduce_mean_wrong():
    xf, xi, index, src = _scatter_args(DUPLICATES)
    args = (
        xf,
        xi,
        index,
        src[:, :4].contiguous(),
    )  # (a src wider than index fails in ORT: another bug)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = torch.onnx.export(
            ScatterReduce("mean", True), args, dynamo=True, verbose=False
        ).model_proto
    import onnxruntime as ort

    got = ort.InferenceSession(
        model.SerializeToString(), providers=["CPUExecutionProvider"]
    ).run(None, {i.name: a.numpy() for i, a in zip(model.graph.input, args)})
    assert not np.array_equal(got[1], ScatterReduce("mean", True)(*args)[1].numpy())


@pytest.mark.parametrize(
    "module,args",
    [
        (CumProd(), (torch.ones(2, 3), torch.ones(2, 3, dtype=torch.int64))),
        (IndexReduce("amax", True), _index_args(torch.tensor([0, 1]))),
        (SegmentReduce(), (torch.arange(6.0), torch.tensor([2, 4]))),
    ],
    ids=["cumprod", "index_reduce", "segment_reduce"],
)
def test_torch_alone_cannot_export(module, args):
    with warnings.catch_warnings(), pytest.raises(Exception, match="Failed to convert"):
        warnings.simplefilter("ignore")
        torch.onnx.export(module, args, dynamo=True, verbose=False)


@pytest.mark.parametrize(
    "call",
    [
        lambda x: x.index_add(0, torch.tensor([-1]), torch.ones(1)),
        lambda x: x.scatter_reduce(0, torch.tensor([-1]), torch.ones(1), "sum"),
        lambda x: x.index_reduce(0, torch.tensor([-1]), torch.ones(1), "amax"),
    ],
    ids=["index_add", "scatter_reduce", "index_reduce"],
)
def test_torch_rejects_negative_indices(call):
    with warnings.catch_warnings(), pytest.raises((RuntimeError, IndexError)):
        warnings.simplefilter("ignore")
        call(torch.zeros(5))


def test_translation_table_entries():
    ours = odt.custom_translation_table
    assert set(ours) == {
        torch.ops.aten.cumprod.default,
        torch.ops.aten.scatter_reduce.two,
        torch.ops.aten.index_reduce.default,
        torch.ops.aten.segment_reduce.default,
    }


def test_import_does_not_need_torch():
    import subprocess
    import sys

    code = (
        "import sys, ort_dml_ops, ort_dml_ops.torch; m = ort_dml_ops.convert; "
        "assert 'torch' not in sys.modules, 'torch imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_dynamic_shapes_export_converts_and_runs_exactly_at_other_sizes():
    """Symbolic batch and index widths (torch.export.Dim), run at sizes other than the example's."""

    class Model(torch.nn.Module):
        def forward(self, x, i, u):
            return torch.cumprod(x, 1).scatter_reduce(
                1, i, u, "mean", include_self=False
            )

    example = (
        _ints((2, 8), 1, 5, 8),
        torch.tensor([[0, 0, 7], [3, 3, 3]]),
        _ints((2, 3), -9, 9, 9),
    )
    batch, width = torch.export.Dim("batch"), torch.export.Dim("width")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = odt.export(
            Model(),
            example,
            input_names=["x", "i", "u"],
            verbose=False,
            dynamic_shapes=({0: batch}, {0: batch, 1: width}, {0: batch, 1: width}),
        ).model_proto
    dims = [
        [d.dim_param or d.dim_value for d in v.type.tensor_type.shape.dim]
        for v in model.graph.input
    ]
    assert isinstance(dims[0][0], str) and isinstance(dims[1][1], str)
    args = (
        _ints((5, 8), 1, 5, 10),
        _ints((5, 11), 0, 8, 11),
        _ints((5, 11), -9, 9, 12),
    )
    want = Model()(*args).numpy()
    feeds = dict(zip("xiu", (a.numpy() for a in args)))
    for candidate in (model, ort_dml_ops.convert(model, "dml").model):
        (got,) = ort_dml_ops.InferenceSession(
            candidate, providers=["CPUExecutionProvider"]
        ).run(None, feeds)
        np.testing.assert_array_equal(got, want)
