"""Part (f): what `convert` and `inspect` cost on a 10,000-node model.

Compared, interleaved, on the same file: `onnx.load` + `onnx.checker.check_model(full_check=True)`
+ `onnx.save` (the least any validating converter does) vs `convert(path, target)` (its own
validation included) + `onnx.save` of the result; and `inspect` of the loaded model.
"""

from __future__ import annotations

import os
import tempfile

import onnx
import onnx.checker

from . import models
from .timing import interleaved


def run_convert_cost(
    n_nodes: int = 10_000, target: str = "dml", strategy: str = "auto", reps: int = 3
) -> dict:
    from ..conversion import convert
    from ..inspection import inspect
    from ..targets import get_target

    get_target(target)  # kernel tables load once per process: not part of any timing
    model = models.chain_model(n_nodes)
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "model.onnx")
        onnx.save(model, src)

        def baseline():
            m = onnx.load(src)
            onnx.checker.check_model(m, full_check=True)
            onnx.save(m, os.path.join(tmp, "copy.onnx"))

        def converted():
            r = convert(src, target, strategy=strategy)
            onnx.save(r.model, os.path.join(tmp, "converted.onnx"))
            return r

        def unchanged():  # the pipeline's fixed cost: load, plan, validate, report, no rewrite
            r = convert(src, target, strategy="native")
            onnx.save(r.model, os.path.join(tmp, "native.onnx"))

        loaded = onnx.load(src)
        first = converted()  # warm-up, and the sizes for the record
        inspect(loaded, target)
        fns = {
            "load_check_save": baseline,
            "convert_save": converted,
            "inspect": lambda: inspect(loaded, target),
        }
        if strategy != "native":
            fns["convert_save_native"] = unchanged
        t = interleaved(fns, reps)
    ms = {k: round(v["median_s"] * 1e3, 1) for k, v in t.items()}
    out = {
        "nodes_in": n_nodes,
        "nodes_out": len(first.model.graph.node),
        "target": target,
        "strategy": strategy,
        "summary": first.report.summary(),
        "reps": reps,
        "ms": ms,
        "convert/baseline": round(ms["convert_save"] / ms["load_check_save"], 2),
        "inspect_s": round(ms["inspect"] / 1e3, 3),
    }
    if "convert_save_native" in ms:
        out["convert_native/baseline"] = round(
            ms["convert_save_native"] / ms["load_check_save"], 2
        )
    return out
