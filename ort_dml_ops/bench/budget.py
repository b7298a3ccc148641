"""Lowering budgets (issue 28): what a lowered node costs on the target EP, counted.

A lowering replaces one node by many ONNX ops, and each of them costs something:

* kernels: every non-view node the target EP runs is a GPU dispatch (about 5-20 µs each, so a
  lowering of a few hundred nodes costs milliseconds however small its tensors) and a kernel
  compiled when the session is created. Counted from `inspect` (ort_dml_ops/inspection.py),
  the project's model of ONNX Runtime's placement: nodes whose provider is the target EP, not
  removed by ORT before running (`removed_by`), not a view (`passes.VIEWS`: Reshape, Squeeze,
  Unsqueeze, Flatten, Identity only change metadata), not host-side (`HOST_SIDE`: Shape and
  Size read metadata and write host memory, no dispatch).
* passes: the memory traffic, as full-size write passes (bytes all kernels write / bytes of the
  op's output), from ONNX Runtime's own profile of one run on the CPU EP
  (`passes.count_passes`), views excluded.
* copies: host<->device transfers per run (`inspect(...).copies`): each one stalls the GPU.
  Item 2: after convert no more than the original's, or the one copy of the index guard's flag.

`count_kernels` counts one model; `measure_op` builds a single-op model, converts it with
strategy "lower" and measures what the lowering added; `measure_real_model` compares a model
of the real-export corpus with its conversion, session creation time on the CPU EP included.
tools/lowering_budget.py prints the tables.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

from .._domain import DOMAIN
from ..conversion import convert
from ..errors import UserError
from ..inspection import inspect
from .passes import VIEWS, count_passes
from .timing import interleaved, once, quiet_session_options

CPU = "CPUExecutionProvider"
#: kernels a GPU EP runs on the host: DmlOperatorShape and DmlOperatorSize
#: (onnxruntime/core/providers/dml/DmlExecutionProvider/src/Operators/DmlOperatorShape.cpp,
#: DmlOperatorSize.cpp) write the input's dims / element count from its metadata into an
#: output that AbiCustomRegistry.cpp places in CPU memory, and so does the WebGPU EP's Shape /
#: Size (the CPU kernels registered with a CPU-memory output; the kernel tables record both as
#: `cpu_outputs: [0]`). No shader runs and nothing is dispatched: they are not counted as kernels.
HOST_SIDE = ("Shape", "Size")

# -- the budgets ----------------------------------------------------------------------------------

#: kernels on the target EP a lowered scatter may add, by reduction
SCATTER_KERNELS = {"none": 12, "add": 40, "max": 40, "min": 40, "mul": 60}
CUMPROD_KERNELS = 25
CUMSUM_CAST_KERNELS = 4
#: symbolic shapes may cost this much more than static ones
SYMBOLIC_FACTOR = 1.25
MAX_PASSES = 30.0
#: session creation on the CPU EP, converted / original: geometric mean and worst model
SESSION_GEOMEAN = 2.0
SESSION_MAX = 5.0
#: at most this many interleaved session creations per model (fewer for slow sessions)
MAX_ROUNDS = 15

SCATTER_OPS = ("ScatterElements", "ScatterND")
REDUCTIONS = ("none", "add", "mul", "max", "min")
#: the element types CumSum-14 accepts (the ones `cumsum_dtypes` tries)
CUMSUM_DTYPES = (
    "float16",
    "float32",
    "float64",
    "bfloat16",
    "int32",
    "int64",
    "uint32",
    "uint64",
)
_ONNX_TYPE = {
    "float16": TensorProto.FLOAT16,
    "float32": TensorProto.FLOAT,
    "float64": TensorProto.DOUBLE,
    "bfloat16": TensorProto.BFLOAT16,
    "int32": TensorProto.INT32,
    "int64": TensorProto.INT64,
    "uint32": TensorProto.UINT32,
    "uint64": TensorProto.UINT64,
}


def kernel_budget(op: str, reduction: str | None, symbolic: bool) -> float | None:
    """Kernels a lowered `op` may add on the target EP (None: no budget for it)."""
    if op in SCATTER_OPS:
        base: float | None = SCATTER_KERNELS[reduction or "none"]
    elif op == "CumProd":
        base = CUMPROD_KERNELS
    elif op == "CumSum":
        base = CUMSUM_CAST_KERNELS  # a cast lowering: `measure_op` checks the action
    else:
        base = None
    return None if base is None else base * (SYMBOLIC_FACTOR if symbolic else 1)


# -- counting -------------------------------------------------------------------------------------


@dataclasses.dataclass
class Placement:
    kernels: int  # non-view nodes the target EP runs
    cpu: int  # non-view nodes the CPU EP runs
    copies: int  # host<->device copies per run
    unplaced: int = 0  # nodes no EP has a kernel for: ORT refuses the session


def count_kernels(model: onnx.ModelProto, target: str) -> Placement:
    """Where ONNX Runtime runs `model` on `target` (inspect), as counts: nodes removed before
    running and views left out, and the target EP's host-side Shape / Size (`HOST_SIDE`)."""
    report = inspect(model, target=target)
    running = [n for n in report.nodes if not n.removed_by and n.op_type not in VIEWS]
    return Placement(
        kernels=sum(
            1
            for n in running
            if n.provider and n.provider != CPU and n.op_type not in HOST_SIDE
        ),
        cpu=sum(1 for n in running if n.provider == CPU),
        copies=report.copies,
        unplaced=sum(1 for n in running if n.provider is None),
    )


def measure_passes(model: onnx.ModelProto, feeds: dict, output_bytes: int) -> float:
    """Full-size write passes of one run of `model` on the CPU EP, views excluded."""
    so = quiet_session_options(log_severity_level=3)
    return count_passes(model, feeds, sess_options=so).passes(output_bytes, views=False)


# -- single-op models -----------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class OpCase:
    op: str  # ScatterElements, ScatterND, CumProd, CumSum
    dtype: str
    symbolic: bool = False  # every dim a named dim_param
    reduction: str | None = None  # scatters only
    axis: int = 1  # ScatterElements, CumProd, CumSum (2-D data)
    opset: int = 18  # scatters' ai.onnx import

    @property
    def label(self) -> str:
        name = self.op if self.op == "ScatterND" else f"{self.op} ax{self.axis}"
        return name if self.opset == 18 else f"{name} @{self.opset}"


def _model(nodes, inputs, output, dtype, inits=(), opset=18, domain=False):
    y = helper.make_tensor_value_info("y", _ONNX_TYPE[dtype], output)
    graph = helper.make_graph(nodes, "budget", inputs, [y], list(inits))
    imports = [helper.make_opsetid("", opset)]
    if domain:
        imports.append(helper.make_opsetid(DOMAIN, 1))
    return helper.make_model(graph, opset_imports=imports, ir_version=10)


def build_model(case: OpCase, n: int = 300) -> onnx.ModelProto:
    """The single-op model of `case` on [n, n] data (symbolic: dims d0, d1; the scatter's
    indices k0, k1 for ScatterElements, [k, 1] for ScatterND). Scatters: `case.opset`; CumProd:
    the project's domain under opset 21, as tools/bench_lowering.py builds it."""
    t = _ONNX_TYPE[case.dtype]
    data: list[str | int] = ["d0", "d1"] if case.symbolic else [n, n]

    def tensor(name, elem, dims):
        return helper.make_tensor_value_info(name, elem, dims)

    if case.op in SCATTER_OPS:
        attrs: dict = {}
        if case.reduction not in (None, "none"):
            attrs["reduction"] = case.reduction
        if case.op == "ScatterElements":
            attrs["axis"] = case.axis
            idx: list[str | int] = ["k0", "k1"] if case.symbolic else [n, n]
            upd = idx
        else:
            idx = ["k", 1] if case.symbolic else [n, 1]
            upd = [idx[0], data[1]]
        node = helper.make_node(case.op, ["data", "indices", "updates"], ["y"], **attrs)
        inputs = [
            tensor("data", t, data),
            tensor("indices", TensorProto.INT64, idx),
            tensor("updates", t, upd),
        ]
        return _model([node], inputs, data, case.dtype, opset=case.opset)
    custom = case.op == "CumProd"
    node = helper.make_node(
        case.op, ["x", "axis"], ["y"], domain=DOMAIN if custom else ""
    )
    axis = numpy_helper.from_array(np.array(case.axis, np.int64), "axis")
    return _model(
        [node],
        [tensor("x", t, data)],
        data,
        case.dtype,
        [axis],
        opset=21 if custom else 18,
        domain=custom,
    )


def build_feeds(case: OpCase, n: int = 300, seed: int = 0) -> dict:
    """Inputs for the static model of `case`: every element updated once (reduction none: a
    permutation per line) or with duplicates (the reductions)."""
    rng = np.random.default_rng(seed)
    dtype = np.dtype(case.dtype)
    if case.op in ("CumProd", "CumSum"):
        return {"x": rng.uniform(0.999, 1.001, (n, n)).astype(dtype)}
    data = rng.uniform(0, 1, (n, n)).astype(dtype)
    unique = case.reduction in (None, "none")
    if (
        case.op == "ScatterND"
    ):  # indices [n, 1]: every row once, or rows with duplicates
        idx = rng.permutation(n) if unique else rng.integers(0, n, n)
        idx = idx.reshape(n, 1)
    elif unique:  # a permutation per line along the axis
        idx = np.argsort(rng.random((n, n)), axis=case.axis)
    else:
        idx = rng.integers(0, n, (n, n))
    updates = rng.uniform(0.999, 1.001, (n, n)).astype(dtype)
    return {"data": data, "indices": idx.astype(np.int64), "updates": updates}


@dataclasses.dataclass
class OpRow:
    target: str
    op: str
    reduction: str
    dtype: str
    shape: str  # static / symbolic
    action: str = (
        ""  # the converter's action(s) for the node: lowered, cast, native, ...
    )
    kernels: int | None = None  # non-view kernels on the target EP, converted model
    added: int | None = None  # ... minus the original model's
    cpu: int | None = None
    copies: int | None = None
    passes: float | None = None
    budget: float | None = None
    status: str = ""  # OK, OVER, ERROR, "-" (no budget applies)
    note: str = ""


def measure_op(case: OpCase, target: str, n: int = 300, passes: bool = True) -> OpRow:
    """Convert the single-op model of `case` for `target` (strategy "lower", index guard on)
    and count what the lowering added; passes on static shapes only."""
    row = OpRow(
        target,
        case.label,
        case.reduction or "-",
        case.dtype,
        "symbolic" if case.symbolic else "static",
    )
    original = build_model(case, n)
    try:
        result = convert(original, target=target, strategy="lower", with_inspect=False)
    except UserError as exc:
        row.status, row.note = "ERROR", str(exc)
        return row
    row.action = ",".join(sorted({node.action for node in result.report.nodes}))
    before = count_kernels(original, target)
    after = count_kernels(result.model, target)
    row.kernels, row.cpu, row.copies = after.kernels, after.cpu, after.copies
    added = after.kernels - before.kernels
    row.added = added
    # the budgets are for lowerings: a CumSum's is for the cast one (a dtype the EP lacks)
    budgeted = row.action == ("cast" if case.op == "CumSum" else "lowered")
    notes = []
    if budgeted:
        row.budget = kernel_budget(case.op, case.reduction, case.symbolic)
    if passes and not case.symbolic:
        if case.dtype == "bfloat16":
            notes.append("passes: numpy has no bfloat16 feeds for ORT")
        else:
            feeds = build_feeds(case, n)
            output_bytes = next(iter(feeds.values())).nbytes
            try:
                row.passes = measure_passes(result.model, feeds, output_bytes)
            except Exception as exc:  # noqa: BLE001 - ORT's errors, reported in the row
                notes.append(f"passes: {str(exc).splitlines()[0][:120]}")
    over: list[str] = []
    if row.budget is not None and added > row.budget:
        over.append(f"kernels {added} > {row.budget:g}")
    allowed_copies = max(before.copies, 1)  # the original's, or the guard's one flag
    if before.unplaced:
        # the original does not run (a bfloat16 CumSum has no kernel on any EP): no baseline
        notes.append("copies unchecked: the original has a node no EP runs")
    elif after.copies > allowed_copies:
        over.append(f"copies {after.copies} > {allowed_copies}")
    if case.dtype == "float16" and row.passes is not None:
        # ORT's CPU EP has few float16 kernels: it runs them in float32 between Casts it inserts
        # (InsertCastTransformer), which a GPU EP does not: the measured passes are too high
        notes.append(
            "passes overstated: fp16 runs as float32 on the CPU EP; not checked"
        )
    elif budgeted and row.passes is not None and row.passes > MAX_PASSES:
        over.append(f"passes {row.passes:.2f} > {MAX_PASSES:g}")
    row.status = "OVER" if over else ("OK" if budgeted else "-")
    row.note = "; ".join(over + notes)
    return row


def cumsum_actions(target: str) -> dict[str, str]:
    """{dtype: the converter's action for a CumSum of that dtype} with strategy "lower" ("cast":
    a dtype the target EP lacks, summed through Cast; "error: ..." where convert refuses)."""
    out = {}
    for dtype in CUMSUM_DTYPES:
        model = build_model(OpCase("CumSum", dtype), n=8)
        try:
            report = convert(
                model, target=target, strategy="lower", with_inspect=False
            ).report
            out[dtype] = ",".join(sorted({n.action for n in report.nodes}))
        except UserError as exc:
            out[dtype] = f"error: {exc}"
    return out


def op_cases(target: str, cumsum: dict[str, str] | None = None) -> list[OpCase]:
    """Every single-op case of the budget for `target`: the scatters (float32, int32, and
    float16 where the converter lowers it), CumProd float32, and each CumSum dtype the
    converter casts (`cumsum`: `cumsum_actions(target)`)."""
    dtypes = ["float32", "int32"]
    f16 = OpCase("ScatterElements", "float16", reduction="add")
    if target == "webgpu" and _action(f16, target) == "lowered":
        dtypes.append("float16")
    cases = []
    for op, axis in (("ScatterElements", 1), ("ScatterElements", 0), ("ScatterND", 0)):
        for reduction in REDUCTIONS:
            for dtype in dtypes:
                for symbolic in (False, True):
                    cases.append(OpCase(op, dtype, symbolic, reduction, axis))
        if target == "webgpu":
            # before opset 18 (no reduction max for the winners, scatter_clean.py) a write
            # without reduction sorts the positions: another graph, counted too
            for dtype in dtypes:
                for symbolic in (False, True):
                    cases.append(OpCase(op, dtype, symbolic, "none", axis, opset=17))
    for symbolic in (False, True):
        cases.append(OpCase("CumProd", "float32", symbolic))
    if cumsum is None:
        cumsum = cumsum_actions(target)
    for dtype, action in cumsum.items():
        if action == "cast":
            for symbolic in (False, True):
                cases.append(OpCase("CumSum", dtype, symbolic))
    return cases


def _action(case: OpCase, target: str) -> str:
    try:
        report = convert(
            build_model(case, n=8), target=target, strategy="lower", with_inspect=False
        ).report
    except UserError:
        return "error"
    return ",".join(sorted({n.action for n in report.nodes}))


# -- whole models ---------------------------------------------------------------------------------


def session_creator(model: onnx.ModelProto, **options) -> Callable[[], object]:
    """A callable that creates a CPU-EP session of `model`: plain onnxruntime, or, for a model
    with the project's domain ops, ort_dml_ops.InferenceSession (which registers their Python
    fallback kernels: what a user of such a model pays). `options`: SessionOptions attributes
    (tools/bench_session.py turns `enable_mem_reuse` off)."""
    from .. import fallback
    from ..session import InferenceSession

    def so():
        return quiet_session_options(log_severity_level=3, **options)

    if fallback.uses_fallback(model):
        return lambda: InferenceSession(model, providers=[CPU], sess_options=so())
    data = model.SerializeToString()
    return lambda: ort.InferenceSession(data, so(), providers=[CPU])


@dataclasses.dataclass
class ModelRow:
    name: str
    actions: dict  # the convert report's summary: {action: nodes}
    copies: tuple[int, int]  # (original, converted)
    kernels: tuple[int, int]
    cpu: tuple[int, int]
    session_ms: tuple[float, float]  # median session creation on the CPU EP
    ratio: float  # converted / original session creation
    rounds: int = 0  # interleaved creations of each
    status: str = ""
    note: str = ""


def measure_real_model(
    name: str,
    model: onnx.ModelProto,
    target: str = "dml",
    reps: int = 3,
    strategy: str = "auto",
    input_shapes: dict | None = None,
) -> ModelRow:
    """`model` against its conversion for `target` (`strategy`: auto, what users get; lower,
    what the lowerings cost): copies, kernels, CPU nodes, session creation time on the CPU EP
    (median of at least `reps` interleaved creations each, after one untimed creation each)."""
    result = convert(
        model,
        target=target,
        strategy=strategy,
        with_inspect=False,
        input_shapes=input_shapes,
    )
    before = count_kernels(model, target)
    after = count_kernels(result.model, target)
    creators = {
        "original": session_creator(model),
        "converted": session_creator(result.model),
    }
    # one untimed creation each (one-time costs: the fallback library, lazy imports); models
    # whose sessions take milliseconds get more rounds, up to about a second of creations
    first = {k: once(create)[1] for k, create in creators.items()}
    rounds = max(reps, min(MAX_ROUNDS, int(1.0 / max(sum(first.values()), 1e-3))))
    times = interleaved(creators, rounds)
    ms = (times["original"]["median_s"] * 1e3, times["converted"]["median_s"] * 1e3)
    row = ModelRow(
        name,
        result.report.summary(),
        (before.copies, after.copies),
        (before.kernels, after.kernels),
        (before.cpu, after.cpu),
        ms,
        ms[1] / max(ms[0], 1e-6),
        rounds,
    )
    over = []
    if after.copies > before.copies:
        over.append(f"copies {before.copies} -> {after.copies}")
    if row.ratio > SESSION_MAX:
        over.append(f"session x{row.ratio:.1f} > {SESSION_MAX:g}")
    row.status = "OVER" if over else "OK"
    row.note = "; ".join(over)
    return row


def summarize_models(rows: list[ModelRow]) -> dict:
    """Geometric mean and max of the session-creation ratios, models whose copies grew."""
    ratios = [r.ratio for r in rows]
    geomean = math.exp(sum(math.log(r) for r in ratios) / len(ratios)) if rows else 1.0
    worst = max(rows, key=lambda r: r.ratio, default=None)
    grew = [r.name for r in rows if r.copies[1] > r.copies[0]]
    over = []
    if geomean > SESSION_GEOMEAN:
        over.append(f"session geomean x{geomean:.2f} > {SESSION_GEOMEAN:g}")
    slow = [r.name for r in rows if r.ratio > SESSION_MAX]
    if slow:
        over.append(f"{len(slow)} models above x{SESSION_MAX:g}")
    if grew:
        over.append(f"copies grew in {len(grew)} models")
    return {
        "models": len(rows),
        "session_geomean": geomean,
        "session_max": worst.ratio if worst else None,
        "session_max_model": worst.name if worst else None,
        "copies_grew": grew,
        "status": "OVER" if over else "OK",
        "over": over,
    }
