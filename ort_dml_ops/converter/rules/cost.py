"""What each way of running a node costs: the figures `convert`'s report shows, and `auto` reads.

Three options per node (those that exist for it):

* ``native``: the target EP's own kernel — one pass over the data, no copy; except where a
  target's cost facts say its kernel does more (WebGPU's CumSum reads the whole prefix for every
  element: onnxruntime/core/providers/webgpu/math/cumsum.cc, about n / 2 reads per element
  along an axis of n);
* ``lowered``: the rule's rewrite on the target — the full-size write passes that ONNX Runtime's
  profiler counts for it (`bench/passes.py`: bytes the kernels write ÷ bytes of the op's output),
  measured at 1e6 float32 elements with `tools/bench_scatter.py` and the scan rules' bench, and
  the host↔device copies the rewrite itself makes (the scatter's index guard: one flag; on
  WebGPU, measured: the ops the plugin lacks);
* ``cpu``: the node on the CPU EP — one pass there, plus the copies ORT inserts around it
  (each device-side float input in, the output back; graph_partitioner.cc / Memcpy nodes).

A pass is a read and a write of the op's output size on the device; a copy moves one tensor
over the host bus, which on a discrete GPU costs many passes' worth of time — so the model does
not put the two on one scale, and `auto` decides only where one option is no worse on both
(`dominated`), or where a target's measured cost fact says so (`native_costlier`).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import onnx_ir as ir

from ._base import FLOATS, attr_int, attr_str, const_array, static_shape
from .scatter_clean import applies, writes_last

#: full-size write passes of the lowered scatter, (static shapes, every dim symbolic), measured
#: (bench/passes.py, views excluded) at [1000, 1000] float32 (int32 for int_max_min), K = 1e6
#: updates along the last axis, index guard on; symbolic shapes add the scan's run-time
#: padding and sizes. tests/converter/rules/test_cost.py measures them again.
SCATTER_PASSES = {
    # none: a stable sort so that only each position's last update writes (the DML EP orders
    # no writes to one position: docs/dml-lane.md)
    "none": (17.3, 21.5),
    # none where no two updates can land on one position (scatter.distinct_positions: the
    # indices of a TopK along the scatter's axis): no sort, every update writes
    "none_unique": (8.0, 15.2),
    # float add / mul: block folds (blocksum.py) — more bytes than the chain scan, a fourth of
    # its kernels; add writes data − the unpooled negated sums (scatter_lean.py); with static
    # rows the last level ends on row ends (blocksum.plan)
    "add": (30.9, 48.3),
    "mul": (31.9, 50.1),
    # the sort-based folds (scatter_lean.py): three sorts and a prefix count for float max /
    # min, two sorts for integers, one sort and one CumSum for integer add
    "max": (36.0, 40.3),
    "min": (36.0, 40.3),
    "int_max_min": (20.3, 23.3),
    "int_add": (28.5, 32.5),
    # integer mul: block folds by halving Muls (blocksum.INTEGER_PRODUCT) — twice the segmented
    # scan's bytes (26.5, 29.9) and more for less than a third of its kernels: static rows end
    # the folds on row ends in blocks of 125 block ends, each padded to 128 for the halving
    "int_mul": (64.2, 93.8),
}
#: Memcpy kernels of the lowered scatter on the WebGPU plugin (bench --target webgpu, 1e6, both
#: axes; mul and min have add's and max's graph shape): TopK (int32 keys), MaxUnpool, int32 /
#: bool Slice and bool Concat have no WebGPU kernel, so their neighbours copy
WEBGPU_SCATTER_COPIES = {
    "none": 7,
    "add": 55,
    "mul": 55,
    "max": 58,
    "min": 58,
    "int_max_min": 55,
}
#: the WebGPU-clean variant (scatter_clean.py: float / float16 data on webgpu), full-size passes
#: measured as SCATTER_PASSES (same models, CPU EP, views excluded); its one copy is the int64
#: indices' upload that the index guard's CPU-side min / max causes (none without the guard)
WEBGPU_CLEAN_SCATTER_PASSES = {
    # none from opset 18: the winners' int32 max scatter, then the write (last_writes); before
    # it ScatterElements has no max: the sort and the dummy slot
    "none": (6.0, 8.0),
    "none_sorted": (13.3, 13.3),
    "add": (31.9, 47.7),
    "mul": (36.3, 59.4),
    # float max / min: three sorts (scatter_clean.sorted_max_min), the value sort's keys padded
    # to a power of two (ORT's WebGPU TopK pads with ∓max itself: `_padded_to_power_of_two`),
    # and each run's last group start by an int32 ScatterElements max
    "max": (38.3, 40.3),
    "min": (38.3, 40.3),
}
WEBGPU_CLEAN_SCATTER_COPIES = 1
#: full-size passes of the scans CumProd and WebGPU's CumSum lower to (bench/passes.py on the
#: CPU EP, views apart, ÷ the output's bytes; float32 at [1000, 1000] unless said; pinned by
#: test_cost `test_scan_figures_are_what_the_lowered_graph_writes`). The blocked scan of a
#: static axis (blockscan.scan_static: 4.8 at [64, 64], 4.9 at [4, 100,000])
SCAN_PASSES = 4.9
#: ... and where the axis is one chain on x itself (a Split, the links' slices, a Concat)
CHAIN_PASSES = 3.0
#: the masked blocks of a float32 run-time axis (masked_scan.py): each block's masks hold B
#: flags an item, so the figure falls with the axis length — 20.8 at [4, 250,000], 55 at
#: [300, 300] with both dims run-time
MASKED_SCAN_PASSES = 29.5
#: the radix levels of a run-time axis beside static dims (blockscan_symbolic; int32, [4, n])
RADIX_SCAN_PASSES = 7.7
#: the doubling scan where every dim is run-time: a shift and the op a step, each writing the
#: whole tensor (int32, [4, 250,000])
DOUBLING_SCAN_PASSES = 62.0
#: the CumSum dtype rules on the DML EP: Cast, the EP's CumSum, Cast back (float64 through
#: float32: half a pass, half a pass, one)
CAST_SCAN_PASSES = 2.0

#: non-view kernels the DML EP runs for one lowered scatter, index guard included, (static,
#: every dim symbolic), counted with `inspect` by tools/lowering_budget.py on 2-D data with as
#: many updates (DML; 300 × 300 for static shapes). The segmented scan's count grows slowly with
#: the number of updates (one more level per ×16), float add's block sums by a level of about
#: ten kernels where `blocksum.plan` finds one worth its dispatches (14 kernels of sums at 300 ×
#: 300, 25 at 1000 × 1000, where static rows let the last level end on row ends; 25 and 36
#: without them: ScatterND), the sort-based folds' not at all. The graph's
#: one index guard is counted whole: the range check (ReduceMin, ReduceMax and two scalar ops)
#: and the Slice that takes the flag to the host (where a graph has several checks, each adds
#: its overrun — a Sub, and where the count is known only at run time a Range and a Min — and
#: they share a Concat and a ReduceMax: scatter_guard.guard_graph). Shape and Size are not
#: kernels: the EP runs them on the host (bench/budget.py HOST_SIDE).
#: tests/converter/rules/test_cost.py counts them again.
SCATTER_KERNELS = {
    "none": (19, 25),
    "none_unique": (11, 17),
    "add": (34, 63),
    "mul": (34, 63),
    "max": (38, 44),
    "min": (38, 44),
    "int_max_min": (21, 25),
    "int_add": (31, 36),
    "int_mul": (52, 107),
}
#: the lowered scatter on the DML EP for the float types its lowering's ops lack there, by
#: (element type, reduction): ((kernels), (copies)), each (static, every dim symbolic), counted
#: as SCATTER_KERNELS (`inspect`, 300 × 300). float64: the sorts, masks and scans have no
#: double kernel on the DML EP (the segmented scan and its neighbours bounce between the EPs);
#: bfloat16: hardly any op has one. Far more copies than the CPU path's three, so `auto` keeps
#: these on ONNX Runtime's CPU kernel (`dominated`, or the estimate where sizes are known);
#: without a reduction the float64 lowering stays on the device (one copy, the guard's flag).
DML_OFF_DEVICE_SCATTERS = {
    ("float64", "none"): ((19, 25), (1, 1)),
    ("float64", "add"): ((133, 185), (163, 187)),
    ("float64", "mul"): ((133, 185), (127, 151)),
    ("float64", "max"): ((245, 310), (128, 152)),
    ("float64", "min"): ((245, 310), (128, 152)),
    ("bfloat16", "none"): ((16, 57), (3, 22)),
    ("bfloat16", "add"): ((63, 124), (12, 38)),
    ("bfloat16", "mul"): ((63, 124), (12, 38)),
    ("bfloat16", "max"): ((140, 214), (46, 75)),
    ("bfloat16", "min"): ((140, 214), (46, 75)),
}
#: the same for the blocked CumProd scan (DML, float64: its Mul / Pad / Concat chain bounces
#: between the EPs), ((kernels), (copies)), counted with `inspect` at 300 × 300
DML_OFF_DEVICE_CUMPROD = {"float64": ((9, 31), (18, 62))}
#: the WebGPU-clean variant's kernels on the WebGPU plugin, counted the same way
WEBGPU_CLEAN_SCATTER_KERNELS = {
    "none": (5, 9),
    "none_sorted": (11, 14),
    "add": (30, 61),
    "mul": (28, 57),
    "max": (37, 42),
    "min": (37, 42),
}


@dataclasses.dataclass(frozen=True)
class DeviceModel:
    """What one run of an option costs on a discrete GPU, in microseconds: the figures `auto`
    weighs kernels, passes and copies with. Defaults and their sources:

    * ``dispatch_us`` 10: each kernel is a dispatch of about 5–20 µs whatever its size (the
      D3D12 command list, DirectML's operator dispatch and its barrier; issue 28's figure, the
      middle of the range);
    * ``device_gbps`` 200: device memory bandwidth a pass sees — mid-range discrete GPUs read
      and write 200–500 GB/s, integrated ones 50–100; the low side, since a pass both reads and
      writes;
    * ``copy_us`` 20 and ``bus_gbps`` 12: a host↔device copy is a synchronising transfer over
      PCIe 3.0 ×16 (about 12 GB/s in practice) with a fixed cost for the copy queue and fence;
    * ``cpu_update_ns`` 8 and ``cpu_op_us`` 5: ONNX Runtime's CPU scatter runs one thread over
      the updates (onnxruntime/core/providers/cpu/tensor/scatter.cc): measured on the project's
      2-core VM at 5.8 (none), 7.0 (max) and 9.8 (add) ns per update at 1e6 float32 updates,
      0.33–0.38 at 1e4 plus a launch of a few µs (ORT 1.24, one intra-op thread).

    A measurement on the user's own device beats this model (`tune`, issue 30)."""

    dispatch_us: float = 10.0
    device_gbps: float = 200.0
    copy_us: float = 20.0
    bus_gbps: float = 12.0
    cpu_update_ns: float = 8.0
    cpu_op_us: float = 5.0

    def device_us(
        self, kernels: int, passes: float, full_bytes: int, copies: int
    ) -> float:
        """An option on the device: its dispatches, its passes over the output's bytes, and its
        own tiny copies (the guard's flag: latency only)."""
        return (
            kernels * self.dispatch_us
            + passes * full_bytes / (self.device_gbps * 1e3)
            + copies * self.copy_us
        )

    def cpu_us(self, updates: int, copies: int, copied_bytes: int) -> float:
        """ORT's CPU kernel between copies: its loop over the updates, and each copy's fixed
        cost plus its bytes over the bus."""
        return (
            self.cpu_op_us
            + updates * self.cpu_update_ns / 1e3
            + copies * self.copy_us
            + copied_bytes / (self.bus_gbps * 1e3)
        )


DEVICE = DeviceModel()


@dataclasses.dataclass(frozen=True)
class OptionCost:
    passes: float  # full-size passes on the device where the option runs
    copies: int  # host<->device copies per run
    bytes_moved: int | None = (
        None  # passes x output bytes, where the output size is static
    )
    note: str = ""
    kernels: int | None = None  # kernels (dispatches) per run, where counted
    #: DeviceModel's estimate of one run, where the sizes are known (static or hinted)
    estimate_us: float | None = None
    #: the estimate is a worst case: taken at an upper bound of a size only the data decides
    #: (a NonZero's count, converter/size_hints.py known_sizes)
    upper_bound: bool = False
    #: without sizes: the size (elements of data, as many updates) above which this lowering's
    #: estimate beats the CPU path's (`break_even`), so that the report says what to weigh
    wins_above: int | None = None

    def to_dict(self) -> dict:
        fields = (
            ("passes", self.passes),
            ("copies", self.copies),
            ("kernels", self.kernels),
            ("bytes_moved", self.bytes_moved),
            ("estimate_us", self.estimate_us),
            ("estimate_is_upper_bound", self.upper_bound or None),
            ("wins_above_elements", self.wins_above),
            ("note", self.note),
        )
        return {k: v for k, v in fields if v not in (None, "")}


def node_costs(
    node: ir.Node,
    target: str,
    native: bool,
    lowerable: bool,
    cost_facts: dict,
    data_on_host: bool = False,
    hints: dict[str, tuple[int, ...]] | None = None,
    bounds: dict[str, tuple[int, ...]] | None = None,
    opset: int = 18,
) -> dict[str, OptionCost]:
    """The options of `node` on `target` with their costs (before any rewrite of the node).

    `data_on_host`: the target keeps this element type on the CPU EP anyway (WebGPU: int64,
    uint64, float64 and bfloat16, docs/webgpu.md) — its CPU path copies nothing, and a lowering
    there runs on the CPU EP too, its TopK and MaxUnpool included (no WebGPU kernel for
    either): no DeviceModel estimate, no crossover size; its passes and copies decide.
    `hints`: value name → dims, where the caller knows sizes the graph leaves symbolic
    (`convert --input-shape`); with static or hinted sizes each option gets an estimate.
    `bounds`: value name → upper bounds of dims only the data decides (a NonZero's count); the
    CPU path's estimate may be taken at them, as its worst case (`upper_bound`): its loop and
    its copies grow with the sizes. `opset`: the graph's (the WebGPU-clean variant sorts a
    scatter without reduction before 18)."""
    out_bytes = _bytes(node.outputs[0] if node.outputs else None, hints)
    family = _family(node)
    opts: dict[str, OptionCost] = {}
    off_device = None  # a scatter's lowering that bounces between the EPs (DML)
    if native:
        passes, note = 1.0, ""
        axis_len = _cumsum_axis(node, hints)
        if family == "cumsum" and "cumsum_native_max_axis" in cost_facts and axis_len:
            passes, note = (
                max(1.0, axis_len / 2),
                "its kernel reads the whole prefix per element",
            )
        opts["native"] = _option(passes, 0, out_bytes, note, kernels=1)
        if out_bytes is not None:
            opts["native"] = dataclasses.replace(
                opts["native"],
                estimate_us=round(DEVICE.device_us(1, passes, out_bytes, 0), 1),
            )
    if lowerable:
        clean = family == "scatter" and _clean(node, target)
        kind = _reduction(node) if family == "scatter" else None
        if clean and kind == "none" and not writes_last(kind, opset):
            kind = "none_sorted"
        elif kind == "none" and not clean and _unique_write(node, target):
            kind = "none_unique"
        counted_kernels, lowered_passes = _lowered_figures(
            node, family, clean, kind, target, opset
        )
        if family in ("scatter", "cumprod"):
            off_device = _dml_off_device(node, target, kind, family)
        if lowered_passes is not None:
            copies, note = 0, "measured at 1e6 elements"
            if clean:
                copies = WEBGPU_CLEAN_SCATTER_COPIES
                note += "; WebGPU-clean variant: the index guard's upload of the indices only"
            elif family == "scatter" and target == "webgpu":
                copies = WEBGPU_SCATTER_COPIES.get(kind or "", 55)
                note += "; copies measured on the WebGPU plugin (ops it lacks: TopK int32, MaxUnpool, int Slice)"
            elif off_device is not None:
                copies = off_device[1][0 if _static(node) else 1]
                note += "; copies measured on the DML EP (its kernels lack this element type)"
            elif family == "scatter" and target != "cpu":
                copies, note = 1, note + "; the index guard's flag (one per model)"
            kernels = (
                counted_kernels
                if off_device is None
                else off_device[0][0 if _static(node) else 1]
            )
            option = _option(lowered_passes, copies, out_bytes, note, kernels=kernels)
            # DeviceModel prices dispatches and device bandwidth: a lowering whose data stays
            # on the CPU EP has neither, so it gets no estimate (the passes and copies decide)
            on_device = target != "cpu" and not data_on_host
            if kernels is not None and out_bytes is not None and on_device:
                est = DEVICE.device_us(kernels, lowered_passes, out_bytes, copies)
                option = dataclasses.replace(option, estimate_us=round(est, 1))
            opts["lowered"] = option
    if target != "cpu":
        device_inputs = (
            2 if family == "scatter" else 1
        )  # data (+ updates); indices are int64 host-side
        copies = 0 if data_on_host else device_inputs + 1
        option = _option(
            1.0,
            copies,
            out_bytes,
            "ORT's CPU kernel"
            + ("" if data_on_host else " between copies")
            + (f"; {CPU_SCATTER_ND_RACE}" if _races_on_cpu(node) else ""),
            kernels=1,
        )
        updates = (
            node.inputs[2] if family == "scatter" and len(node.inputs) > 2 else None
        )
        upd_bytes = _bytes(updates, hints) if updates is not None else 0
        cpu_out, worst = out_bytes, False
        if family == "scatter" and bounds:
            if cpu_out is None and node.outputs:
                cpu_out = _bytes(node.outputs[0], bounds)
                worst = cpu_out is not None
            if upd_bytes is None and updates is not None:
                upd_bytes = _bytes(updates, bounds)
                worst = worst or upd_bytes is not None
        if cpu_out is not None and upd_bytes is not None and family == "scatter":
            assert updates is not None and updates.dtype is not None
            n_updates = upd_bytes // max(int(updates.dtype.itemsize), 1)
            moved = 0 if data_on_host else 2 * cpu_out + upd_bytes
            est = DEVICE.cpu_us(n_updates, copies, moved)
            option = dataclasses.replace(
                option,
                estimate_us=round(est, 1),
                upper_bound=worst,
                note=option.note
                + (
                    f"; at most {n_updates} updates (a NonZero's count is at most its "
                    "input's size)"
                    if worst
                    else ""
                ),
            )
        opts["cpu"] = option
    low, cpu = opts.get("lowered"), opts.get("cpu")
    if (
        family == "scatter"
        and low is not None
        and cpu is not None
        and low.kernels is not None
        and low.estimate_us is None
        and node.inputs[0] is not None
        and node.inputs[0].dtype is not None
        # its copies move whole tensors between the EPs, at every size, or it runs on the
        # CPU EP beside the kernel it would replace: it never wins
        and (off_device is None or off_device[1] == (1, 1))
        and not data_on_host
    ):
        wins = break_even(low, cpu, int(node.inputs[0].dtype.itemsize))
        opts["lowered"] = dataclasses.replace(low, wins_above=wins)
    return opts


def break_even(lowered: OptionCost, cpu: OptionCost, itemsize: int) -> int | None:
    """The elements n of data (and as many updates) above which DeviceModel estimates the
    lowering faster than ORT's CPU kernel between its copies; None where it never is.

    Both estimates are linear in n: the lowering pays its dispatches and flag copy once and
    its passes per byte; the CPU path pays its launch and copies once, its loop per update and
    the bus per byte moved (data in and out, the updates in: 3n elements, none where the data
    stays on the host)."""
    kernels = lowered.kernels or 0
    fixed = (
        kernels * DEVICE.dispatch_us
        + lowered.copies * DEVICE.copy_us
        - DEVICE.cpu_op_us
        - cpu.copies * DEVICE.copy_us
    )
    moved = 3 * itemsize if cpu.copies else 0
    slope = (
        DEVICE.cpu_update_ns / 1e3
        + moved / (DEVICE.bus_gbps * 1e3)
        - lowered.passes * itemsize / (DEVICE.device_gbps * 1e3)
    )
    if slope <= 0:
        return None
    return max(0, math.ceil(fixed / slope))


def cheaper_on_cpu(costs: dict[str, OptionCost]) -> str | None:
    """Why ORT's CPU kernel (between its copies) beats the lowering on this node, or None.

    Where both options have an estimate (the sizes are static or hinted), DeviceModel decides;
    without one, only a lowering no better in passes and copies loses (`dominated`)."""
    low, cpu = costs.get("lowered"), costs.get("cpu")
    if low is None or cpu is None:
        return None
    # kept as the original model runs it, and said where that kernel can lose updates
    caveat = f"; {CPU_SCATTER_ND_RACE}" if CPU_SCATTER_ND_RACE in cpu.note else ""
    if low.estimate_us is not None and cpu.estimate_us is not None:
        if cpu.estimate_us < low.estimate_us:
            return (
                f"at the sizes the model declares the CPU path is faster: "
                f"{'at most' if cpu.upper_bound else 'about'} {cpu.estimate_us:g} µs (its "
                f"kernel and {cpu.copies} copies"
                f"{', at the most updates the data allows' if cpu.upper_bound else ''}) against "
                f"{low.estimate_us:g} µs for the lowering ({low.kernels} kernels, "
                f"{low.passes:g} passes; cost.DeviceModel){caveat}"
            )
        return None
    if dominated(costs, "lowered", by="cpu"):
        return (
            f"the CPU path is no costlier in passes and copies (report: cost){caveat}"
        )
    return None


#: ORT's CPU ScatterND applies a reduction's update slices on its thread pool with a plain
#: read-modify-write (onnxruntime/core/providers/cpu/tensor/scatter_nd.cc,
#: `ScatterNDDispatchTarget`): where repeated indices meet on two threads an update is lost
#: (measured: tools/repro_ort_cpu_scatternd_race.py). The lowering has no such kernel.
CPU_SCATTER_ND_RACE = (
    "ORT's CPU ScatterND can lose updates of repeated indices when its thread pool splits the "
    "work (tools/repro_ort_cpu_scatternd_race.py); --strategy lower is exact"
)


def _races_on_cpu(node: ir.Node) -> bool:
    """Is `node` a ScatterND with a reduction (the CPU kernel of CPU_SCATTER_ND_RACE)?"""
    if node.op_type != "ScatterND" or node.domain not in ("", "ai.onnx"):
        return False
    return attr_str(node, "reduction", "none") != "none"


def _dml_off_device(
    node: ir.Node, target: str, kind: str | None, family: str = "scatter"
) -> tuple[tuple[int, int], tuple[int, int]] | None:
    """The (kernels, copies) of a lowered scatter or CumProd whose element type the DML EP's
    kernels lack (DML_OFF_DEVICE_SCATTERS, DML_OFF_DEVICE_CUMPROD), None for any other node
    or target."""
    data = node.inputs[0] if node.inputs else None
    if target != "dml" or data is None or data.dtype is None:
        return None
    name = {ir.DataType.DOUBLE: "float64", ir.DataType.BFLOAT16: "bfloat16"}.get(
        data.dtype
    )
    if name is None:
        return None
    if family == "cumprod":
        return DML_OFF_DEVICE_CUMPROD.get(name)
    return None if kind is None else DML_OFF_DEVICE_SCATTERS.get((name, kind))


def _lowered_figures(
    node: ir.Node,
    family: str | None,
    clean: bool,
    kind: str | None,
    target: str = "dml",
    opset: int = 18,
) -> tuple[int | None, float | None]:
    """(kernels, passes) of the node's lowering, counted and measured: a scan's from its layout
    (`_scan_figures`); a scatter's from the tables' row `kind` (SCATTER_KERNELS and
    SCATTER_PASSES; `clean`: the WebGPU-clean variant's own tables), None where none fits."""
    if family in ("cumsum", "cumprod"):
        return _scan_figures(node, family, target, opset)
    if family != "scatter" or len(node.inputs) < 3 or node.inputs[0] is None:
        return None, None
    column = 0 if _static(node) else 1
    kernels = (WEBGPU_CLEAN_SCATTER_KERNELS if clean else SCATTER_KERNELS).get(
        kind or ""
    )
    passes = (WEBGPU_CLEAN_SCATTER_PASSES if clean else SCATTER_PASSES).get(kind or "")
    return (
        None if kernels is None else kernels[column],
        None if passes is None else passes[column],
    )


#: kernels of a scan along a run-time axis of another type than float32 (blockscan_symbolic,
#: scan_symbolic; CumProd's and WebGPU's CumSum), counted by `inspect` as
#: tools/lowering_budget.py counts them: the radix levels where the other dims are static (4
#: levels of 4 columns where a slice is under 16 elements, else 3 of 8), the 31-step doubling
#: scan where they are symbolic too. Exclusive: one fewer in the radix levels (the last link of
#: a chain is unused), one more in the doubling scan (its final shift).
SYMBOLIC_SCAN_KERNELS = {"columns": 88, "slices": 100, "doubling": 62}


def _scan_figures(
    node: ir.Node, family: str, target: str, opset: int = 18
) -> tuple[int | None, float]:
    """(kernels, passes) of the scan the rules lay out for a CumProd, or a CumSum lowered for
    WebGPU (elsewhere a CumSum's lowering is a dtype rule: Cast, the EP's CumSum, Cast back).

    * a static axis: CumProd's cheaper of the blocked and the doubling scan where every dim is
      known (cumprod.static_plan, the plan the rule emits), else the blocked scan
      (blockscan.scan_kernels, `SCAN_PASSES`);
    * a run-time axis: float32's masked blocks (cumprod_masked.py, cumsum_masked.py, tried
      first), other types' radix levels beside static dims or the doubling scan
      (`SYMBOLIC_SCAN_KERNELS`).

    Kernels None where the axis or the rank is unknown."""
    from ...targets import get_target
    from .blockscan import SMALL_INNER, known_product, scan_kernels, scan_plan
    from .cumprod_masked import KERNELS as MASKED_BLOCKS

    if family == "cumsum" and target != "webgpu":
        return 3, CAST_SCAN_PASSES
    x = node.inputs[0] if node.inputs else None
    axis_value = const_array(node.inputs[1]) if len(node.inputs) > 1 else None
    shape = static_shape(x) if x is not None else None
    if x is None or x.dtype is None or shape is None or axis_value is None or not shape:
        return None, SCAN_PASSES
    axis = int(axis_value.reshape(-1)[0]) % len(shape)
    exclusive = attr_int(node, "exclusive") == 1
    # an exclusive float CumSum adds +0.0 last (cumsum_scan.py: ORT's signed zeros)
    plus_zero = int(family == "cumsum" and exclusive and x.dtype in FLOATS)
    width = get_target(target).max_io_width
    if shape[axis] is not None:
        if family == "cumprod":
            from ._base import RewriteContext
            from .cumprod import static_plan

            reverse = attr_int(node, "reverse") == 1
            ctx = RewriteContext(opset=opset, target=target)
            plan = static_plan(ctx, x.dtype, shape, axis, exclusive, reverse, width)
            if plan is not None:
                return plan.kernels, plan.passes
        counted = scan_kernels(shape, axis, exclusive, width)
        chain = scan_plan(shape, axis, max_width=width) == "single chain"
        passes = CHAIN_PASSES if chain else SCAN_PASSES
        return (None if counted is None else counted + plus_zero), passes
    if x.dtype == ir.DataType.FLOAT:  # the masked blocks' rules, tried first
        return MASKED_BLOCKS, MASKED_SCAN_PASSES
    others = shape[:axis] + shape[axis + 1 :]
    if any(d is None or d == 0 for d in others):
        doubling = SYMBOLIC_SCAN_KERNELS["doubling"] + int(exclusive) + plus_zero
        return doubling, DOUBLING_SCAN_PASSES
    inner = known_product(shape[axis + 1 :])
    layout = "columns" if inner is not None and inner < SMALL_INNER else "slices"
    radix = SYMBOLIC_SCAN_KERNELS[layout] - int(exclusive) + plus_zero
    return radix, RADIX_SCAN_PASSES


#: element types the WebGPU plugin keeps on the CPU EP: int64 and float64 have a few shape and
#: cast kernels, uint64 five, bfloat16 none (the plugin's kernel table, targets/data)
_WEBGPU_HOST_TYPES = (
    ir.DataType.INT64,
    ir.DataType.UINT64,
    ir.DataType.DOUBLE,
    ir.DataType.BFLOAT16,
)


def for_node(
    node: ir.Node, ctx, native: bool, lowerable: bool
) -> dict[str, OptionCost]:
    """`node_costs` for a node being converted (ctx: its RewriteContext; lowerable: a rule's
    check passed for it)."""
    from ...targets import get_target

    data = node.inputs[0] if node.inputs else None
    on_host = (
        ctx.target == "webgpu" and data is not None and data.dtype in _WEBGPU_HOST_TYPES
    )
    return node_costs(
        node,
        ctx.target,
        native,
        lowerable,
        get_target(ctx.target).cost_facts,
        data_on_host=on_host,
        hints=ctx.options.get("size_hints"),
        bounds=ctx.options.get("size_bounds"),
        opset=ctx.opset,
    )


def dominated(costs: dict[str, OptionCost], option: str, by: str) -> bool:
    """True when `by` is no worse than `option` in passes and copies, and better in one."""
    a, b = costs.get(option), costs.get(by)
    if a is None or b is None:
        return False
    return (
        b.passes <= a.passes
        and b.copies <= a.copies
        and (b.passes < a.passes or b.copies < a.copies)
    )


def native_costlier(node: ir.Node, ctx) -> str | None:
    """Why the target's native kernel is the costlier choice, or None.

    WebGPU CumSum: the plugin's kernel reads the whole prefix for every element (O(n²) work a
    line). Where the output's size is known (static, or hinted with `convert --input-shape`),
    DeviceModel weighs it as one dispatch and n / 2 passes over the output against the
    lowering's kernels and passes, as `cheaper_on_cpu` weighs a scatter: the prefix reads grow
    with the lines as well as n, the lowering's dispatches do not. Where only the axis length
    is known (the other dims symbolic), the crossover measured on the plugin at 2^20 elements
    decides (`cumsum_native_max_axis`, docs/performance.md). Without the axis length the
    native kernel stays."""
    from ...targets import get_target

    limit = get_target(ctx.target).cost_facts.get("cumsum_native_max_axis")
    if limit is None or _family(node) != "cumsum":
        return None
    hints = ctx.options.get("size_hints")
    n = _cumsum_axis(node, hints)
    if n is None:
        return None
    out_bytes = _bytes(node.outputs[0] if node.outputs else None, hints)
    kernels, passes = _scan_figures(node, "cumsum", ctx.target, ctx.opset)
    if out_bytes is not None and kernels is not None:
        native = DEVICE.device_us(1, max(1.0, n / 2), out_bytes, 0)
        lowered = DEVICE.device_us(kernels, passes, out_bytes, 0)
        if native <= lowered:
            return None
        return (
            f"its kernel reads the whole prefix for every element (O(n²) along an axis of {n}): "
            f"about {native:.0f} µs against {lowered:.0f} µs for the lowering ({kernels} kernels; "
            "cost.DeviceModel)"
        )
    if n <= limit:
        return None
    return (
        f"its kernel reads the whole prefix for every element (O(n²) along an axis of {n} > {limit}; "
        "measured: docs/performance.md)"
    )


def report(costs: dict[str, OptionCost]) -> dict:
    return {k: v.to_dict() for k, v in costs.items()}


def _option(
    passes: float,
    copies: int,
    out_bytes: int | None,
    note: str,
    kernels: int | None = None,
) -> OptionCost:
    moved = None if out_bytes is None else round(passes * out_bytes)
    return OptionCost(round(passes, 1), copies, moved, note, kernels)


def _family(node: ir.Node) -> str | None:
    if node.op_type in ("ScatterElements", "ScatterND", "Scatter"):
        return "scatter"
    return {"CumSum": "cumsum", "CumProd": "cumprod"}.get(node.op_type)


def _static(node: ir.Node) -> bool:
    """Are the node's first three inputs all of static shape (a scatter's data, indices and
    updates; a scan's data and axis)?"""
    return all(
        (shape := static_shape(v)) is not None and None not in shape
        for v in node.inputs[:3]
        if v is not None
    )


def _clean(node: ir.Node, target: str) -> bool:
    """Does the scatter rule take its WebGPU-clean variant for `node` (scatter_clean.applies)?"""
    data = node.inputs[0] if node.inputs else None
    if data is None:
        return False
    dims = static_shape(data)
    numel = (
        None
        if dims is None or None in dims
        else math.prod(d for d in dims if d is not None)
    )
    return applies(target, data.dtype, numel, attr_str(node, "reduction", "none"))


def _unique_write(node: ir.Node, target: str) -> bool:
    """Does the scatter rule write this node's updates unsorted, its positions proven distinct
    (scatter.distinct_positions), on the target's own kernels (not a type the DML EP lacks:
    DML_OFF_DEVICE_SCATTERS has no such row)?"""
    from .scatter import distinct_positions

    return distinct_positions(node) and _dml_off_device(node, target, "none") is None


def _reduction(node: ir.Node) -> str:
    red = attr_str(node, "reduction", "none")
    integer = node.inputs[0] is not None and node.inputs[0].dtype not in FLOATS
    if red in ("max", "min") and integer:
        red = "int_max_min"
    elif red in ("add", "mul") and integer:
        red = f"int_{red}"
    return red


def _cumsum_axis(
    node: ir.Node, hints: dict[str, tuple[int, ...]] | None = None
) -> int | None:
    """A scan's axis length: static, else its hinted length (`hints`: value name → dims, from
    `convert --input-shape`), else None."""
    if len(node.inputs) < 2 or node.inputs[1] is None or node.inputs[0] is None:
        return None
    x = node.inputs[0]
    shape, axis = static_shape(x), const_array(node.inputs[1])
    if shape is None or axis is None:
        return None
    a = int(axis.reshape(-1)[0])
    if not -len(shape) <= a < len(shape):
        return None
    n = shape[a % len(shape)]
    hinted = (hints or {}).get(x.name or "")
    if n is None and hinted is not None and len(hinted) == len(shape):
        n = hinted[a % len(shape)]
    return n


def _bytes(
    v: ir.Value | None, hints: dict[str, tuple[int, ...]] | None = None
) -> int | None:
    if (
        v is None or v.dtype is None or v.dtype == ir.DataType.STRING
    ):  # strings: no fixed width
        return None
    shape = static_shape(v)
    if (shape is None or any(d is None for d in shape)) and hints and v.name in hints:
        shape = list(hints[v.name])
    if shape is None or any(d is None for d in shape):
        return None
    return int(np.prod([int(d) for d in shape if d is not None], dtype=np.int64)) * int(
        v.dtype.itemsize
    )
