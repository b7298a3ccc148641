"""Per-model bench (issue 28 item 5): each real export against its conversion — kernels, copies,
session creation and run time — at the export's own sizes and at sizes ×100 and ×10,000.

Sizes are scaled by tiling the export's own inputs (`scale_feeds`): the symbolic dims that lead
an input (a batch, a node or edge count, a sequence of updates) grow k times, in every input
that has them, by repeating the data. Index values are kept, so they stay in range (a tiled
edge list points into the first copy of a tiled node list); a model whose inputs have no
symbolic dim cannot be scaled, and one whose scaled inputs exceed `MAX_FEED_BYTES` is not run
at that size. Each row says which.

Run time on the CPU EP is the median of interleaved runs (`timing.interleaved`), the converted
model's outputs checked against the original's in the same process; the DML lane's figures
(tools/dml_lane: Wine, vkd3d, Mesa's lavapipe, so they count work and dispatches, not GPU
speed) come from `tools/bench_models.py`, which runs both models there with timed runs.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import onnx

from .timing import interleaved, once

#: the factors the sizes are scaled by (issue 28 item 5)
SCALES = (1, 100, 10_000)
#: the most input bytes a scaled run may take (a ×10,000 batch of vocabulary logits would
#: take gigabytes on this 2-core VM)
MAX_FEED_BYTES = 256 * 2**20


def leading_symbolic_dims(model: onnx.ModelProto) -> set[str]:
    """The dim_params that lead an input: the first symbolic dim of each graph input."""
    names: set[str] = set()
    initializers = {t.name for t in model.graph.initializer}
    for vi in model.graph.input:
        if vi.name in initializers:
            continue
        for d in vi.type.tensor_type.shape.dim:
            if d.HasField("dim_param") and d.dim_param:
                names.add(d.dim_param)
                break
    return names


def scale_feeds(
    model: onnx.ModelProto, feeds: dict[str, np.ndarray], k: int
) -> tuple[dict[str, np.ndarray] | None, str]:
    """(the feeds with every axis whose dim is in `leading_symbolic_dims` repeated k times,
    ""), or (None, why not)."""
    if k == 1:
        return dict(feeds), ""
    grow = leading_symbolic_dims(model)
    if not grow:
        return None, "static input shapes"
    dims = {
        vi.name: [d.dim_param for d in vi.type.tensor_type.shape.dim]
        for vi in model.graph.input
    }
    out: dict[str, np.ndarray] = {}
    total = 0
    for name, x in feeds.items():
        axes = [a for a, p in enumerate(dims.get(name, [])) if p in grow]
        size = x.nbytes * k ** len(axes)
        total += size
        if total > MAX_FEED_BYTES:
            return None, f"inputs above {MAX_FEED_BYTES // 2**20} MiB"
        for a in axes:
            x = np.concatenate([x] * k, axis=a)
        out[name] = x
    return out, ""


@dataclasses.dataclass
class CpuTiming:
    scale: int
    original_ms: float | None
    converted_ms: float | None
    same: bool | None  # the converted model's outputs equal the original's (allclose)
    note: str = ""


def _session(model: onnx.ModelProto):
    from .budget import session_creator

    return session_creator(model)()


def time_on_cpu(
    original: onnx.ModelProto,
    converted: onnx.ModelProto,
    feeds: dict[str, np.ndarray],
    scale: int,
    budget_s: float = 6.0,
) -> CpuTiming:
    """Median run time of both models on the CPU EP at `scale` (interleaved), outputs compared."""
    scaled, why = scale_feeds(original, feeds, scale)
    if scaled is None:
        return CpuTiming(scale, None, None, None, why)
    try:
        a, b = _session(original), _session(converted)
        want, t_a = once(lambda: a.run(None, scaled))
        got, t_b = once(lambda: b.run(None, scaled))
    except Exception as exc:  # noqa: BLE001 - a model that cannot run at this size: the row says so
        return CpuTiming(scale, None, None, None, _first_line(exc))
    same = outputs_agree(want, got, scale)
    reps = max(3, min(25, int(budget_s / max(t_a + t_b, 1e-4))))
    times = interleaved(
        {
            "original": lambda: a.run(None, scaled),
            "converted": lambda: b.run(None, scaled),
        },
        reps,
        budget_s=budget_s,
        first_s={"original": t_a, "converted": t_b},
    )
    return CpuTiming(
        scale,
        times["original"]["median_s"] * 1e3,
        times["converted"]["median_s"] * 1e3,
        same,
    )


def outputs_agree(want: list, got: list, scale: int) -> bool:
    """Integers equal; floats within rtol 1e-4 — 1e-3 at ×10,000, where runs of 10^4 and more
    summands meet: float32's n · ε there is 1e-3, ORT's sequential order included."""
    rtol = 1e-3 if scale >= 10_000 else 1e-4
    return len(want) == len(got) and all(
        w.shape == g.shape
        and (
            np.array_equal(w, g)
            if w.dtype.kind not in "fc"
            else np.allclose(g, w, rtol=rtol, atol=1e-5, equal_nan=True)
        )
        for w, g in zip(want, got)
    )


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    line = text[-1] if text else type(exc).__name__
    return line[:160]


def geomean(values: list[float]) -> float | None:
    vals = [v for v in values if v and v > 0 and math.isfinite(v)]
    if not vals:
        return None
    return math.exp(sum(math.log(v) for v in vals) / len(vals))
