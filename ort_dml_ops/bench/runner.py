"""The benchmark grid: which cases run, in what order, and the result record (the JSON)."""

from __future__ import annotations

import dataclasses
import os
import platform
import time
from typing import Any

from . import models

QUICK: dict[str, Any] = dict(
    sizes=(100_000, 1_000_000),
    dtypes=("float32",),
    axes=(0, 1),
    reps=5,
    budget_s=0.8,
    nodes=1_000,
    convert_reps=1,
    gpu_sizes=(1_000_000,),
)
FULL: dict[str, Any] = dict(
    sizes=(1_000, 10_000, 100_000, 1_000_000, 10_000_000, 30_000_000),
    dtypes=("float32", "float16"),
    axes=(0, 1),
    reps=7,
    budget_s=12.0,
    nodes=10_000,
    convert_reps=3,
    gpu_sizes=(1_000_000, 8_388_608, 30_000_000),
)
KINDS: tuple[tuple[str, str | None], ...] = (
    ("CumSum", None),
    ("CumProd", None),
) + tuple(("ScatterElements", r) for r in models.REDUCTIONS)


@dataclasses.dataclass
class Config:
    sizes: tuple = QUICK["sizes"]
    dtypes: tuple = QUICK["dtypes"]
    axes: tuple = QUICK["axes"]
    kinds: tuple = KINDS
    reps: int = QUICK["reps"]
    budget_s: float = QUICK["budget_s"]  # per case: rounds cut to what fits (>= 3)
    nodes: int = QUICK["nodes"]  # (f): 0 skips it
    convert_reps: int = QUICK["convert_reps"]
    convert_strategy: str = "auto"
    gpu: bool = True
    # also measure the prototype CumProd construction (bench/cumprod_proto.py)
    proto: bool = False
    # peak memory of the lowered nucleus-sampling scatter (bench/memory.py)
    memory: bool = True
    #: CumProd on a symbolic axis vs static, at these axis lengths (bench/symbolic.py); () skips it
    symbolic_lengths: tuple = (10, 1000, 100_000)
    gpu_sizes: tuple = QUICK["gpu_sizes"]
    mode: str = "quick"

    @classmethod
    def preset(cls, mode: str, **overrides) -> Config:
        base = dict(FULL if mode == "full" else QUICK)
        base.update({k: v for k, v in overrides.items() if v is not None})
        return cls(mode=mode, **base)


def machine() -> dict:
    import numpy
    import onnx
    import onnxruntime as ort

    try:
        import onnxruntime_extensions as ext

        ext_v = ext.__version__
    except Exception:  # noqa: BLE001
        ext_v = None
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(
                (
                    ln.split(":", 1)[1].strip()
                    for ln in f
                    if ln.startswith("model name")
                ),
                cpu,
            )
    except OSError:
        pass
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "os": platform.platform(terse=True),
        "python": platform.python_version(),
        "numpy": numpy.__version__,
        "onnx": onnx.__version__,
        "onnxruntime": ort.__version__,
        "onnxruntime_extensions": ext_v,
        "providers": ort.get_available_providers(),
        "date": time.strftime("%Y-%m-%d %H:%M %Z"),
    }


def run(config: Config, progress=None) -> dict:
    """Every case of the grid, then (e) and (f); returns the JSON-able record."""
    import onnxruntime as ort

    from .ops_cases import run_case
    from .report import verdicts

    ort.set_default_logger_severity(3)
    meta = machine()
    meta["config"] = dataclasses.asdict(config)
    meta["summary"] = (
        f"{meta['date']}, {meta['cpu']}, {meta['cores']} cores, onnxruntime {meta['onnxruntime']}, "
        f"numpy {meta['numpy']}, {config.mode}"
    )
    result: dict = {"meta": meta, "cases": []}
    t0 = time.perf_counter()
    for size in config.sizes:
        for dtype in config.dtypes:
            for op, reduction in config.kinds:
                for axis in config.axes:
                    case = run_case(
                        op,
                        reduction,
                        dtype,
                        size,
                        axis,
                        reps=config.reps,
                        budget_s=config.budget_s,
                        min_reps=min(3, config.reps),
                    )
                    result["cases"].append(case)
                    if progress:
                        progress(case)
    if config.gpu:
        from .gpu import run_gpu

        result["gpu"] = run_gpu(config.gpu_sizes, config.reps)
    if config.proto:
        from .cumprod_proto import run_proto

        shapes = [(models.shape_for(s), 0) for s in config.sizes if s >= 100_000] + [
            ([8, 1024, 1024], 1)
        ]
        result["cumprod_proto"] = run_proto(shapes, reps=max(config.reps, 3))
    if config.symbolic_lengths:
        from .symbolic import run_symbolic

        elements = min(
            max(config.sizes), 1_000_000
        )  # the grid's largest size, at most 1e6
        lengths = tuple(n for n in config.symbolic_lengths if n <= elements)
        result["symbolic"] = run_symbolic(
            lengths, elements=elements, reps=config.reps, budget_s=config.budget_s
        )
    if config.memory:
        from .memory import run_memory

        result["memory"] = run_memory()
    if config.nodes:
        from .convert_cost import run_convert_cost

        result["convert"] = run_convert_cost(
            config.nodes, strategy=config.convert_strategy, reps=config.convert_reps
        )
    if config.nodes:  # issue 14: the CLI in fresh processes vs load + full check + save
        from .convert_floor import run_convert_floor

        result["convert_floor"] = run_convert_floor(
            config.nodes, reps=config.convert_reps
        )
    if (
        config.memory
    ):  # issue 14: convert's peak with one large initializer (1 GiB with --full)
        from .convert_floor import run_convert_memory

        result["convert_memory"] = run_convert_memory(
            1 << 30 if config.mode == "full" else 1 << 28
        )
    result["verdicts"] = verdicts(result)
    meta["elapsed_s"] = round(time.perf_counter() - t0, 1)
    return result
