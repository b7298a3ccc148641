"""`tune`: per node, the option measured fastest on the device the model will run on.

`convert` decides from declared shapes and a cost model (converter/rules/cost.py); whether a
lowered scatter beats ONNX Runtime's CPU kernel with its copies depends on the device and on
the sizes the model really sees, so `tune` measures instead, as TensorRT times its tactics on
the device and Olive's session-parameter tuning times a model on its EP:

1. the model runs once on the CPU EP with the given inputs; every CumSum / CumProd / Scatter
   node of the main graph gives up the inputs it really receives (tuning/capture.py);
2. each node becomes a one-node model at those sizes, one per option (tuning/candidates.py);
3. the options are timed on the provider, interleaved, inputs resident where they would be in
   the whole model, the median kept (tuning/measure.py); the fastest wins;
4. the whole model is converted with the choices (`convert(node_strategies=...)`; nodes inside
   If / Loop / Scan bodies, which the capture cannot reach, get `auto`'s decision), run on
   the provider and checked against the original on the CPU EP with the same inputs
   (`convert --verify`'s tolerance), and timed whole against the original on the provider.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np
import onnx

from ..commands.convert import compare_outputs
from ..conversion import convert
from ..converter.pipeline import check_request
from ..domain_schemas import registered
from ..errors import UserError
from ..modelio import load_model
from ..session import resolve_providers
from . import measure
from .candidates import one_node_model
from .candidates import options as node_options
from .capture import constants, family_nodes, node_inputs

__all__ = ["TuneResult", "tune"]

#: the convert target that serves each provider
TARGET_OF = {
    "DmlExecutionProvider": "dml",
    "WebGpuExecutionProvider": "webgpu",
    "CUDAExecutionProvider": "cuda",
    "CPUExecutionProvider": "cpu",
}


@dataclasses.dataclass
class TuneResult:
    model: onnx.ModelProto
    #: {"provider", "target", "nodes": [...], "whole": {...}, "check": "ok"} (docs/tune.md)
    report: dict


def tune(
    model: onnx.ModelProto | str | bytes,
    feeds: dict[str, np.ndarray],
    *,
    provider: str = "dml",
    repeats: int = 15,
    inputs_on: str = "device",
    progress: Callable[[str], None] | None = None,
) -> TuneResult:
    """Convert `model` for `provider` with, for every family node of the main graph, the option
    measured fastest there on `feeds`; see the module docstring. `inputs_on`: "device" (inputs
    resident where the whole model would have them) or "host" (tuning/measure.py)."""
    say = progress or (lambda _text: None)
    provider = _provider(provider)
    target = TARGET_OF[provider]
    check_request("auto", target)
    if repeats < 1:
        raise UserError(f"repeats must be at least 1, got {repeats}")
    if inputs_on not in ("device", "host"):
        raise UserError(f"inputs_on must be device or host, got {inputs_on!r}")
    original = load_model(model)
    nodes = family_nodes(original)
    say("running the model once on the CPU EP")
    reference, want = _reference(original, feeds)
    values = node_inputs(reference, feeds, nodes)
    constant_names = set(constants(original))
    types = _inferred_types(original)
    measured: dict[bytes, dict] = {}
    report_nodes, choices = [], {}
    for k, fam in enumerate(nodes, 1):
        single, single_feeds = one_node_model(
            original, fam, values, constant_names, types
        )
        key = single.SerializeToString()
        if key not in measured:
            say(f"timing {fam.label} ({k}/{len(nodes)})")
            measured[key] = _measure(
                single, single_feeds, target, provider, repeats, inputs_on
            )
        entry = measured[key]
        choices[fam.output] = entry["strategy"]
        report_nodes.append(
            {
                "name": fam.label,
                "op_type": fam.node.op_type,
                "output": fam.output,
                "inputs": {
                    name: f"{np.asarray(values[name]).dtype}{list(np.shape(values[name]))}"
                    for name in fam.node.input
                    if name
                },
                "options": entry["options"],
                "choice": entry["choice"],
            }
        )
    say("converting with the measured choices")
    result = convert(original, target, node_strategies=choices, with_inspect=False)
    say(f"checking the result on {provider} against the original on the CPU EP")
    try:
        tuned_run = measure.prepare(result.model, provider, feeds, inputs_on)
    except Exception as exc:  # noqa: BLE001 - ORT's own error, one line for the user
        raise UserError(
            f"the tuned model does not run on {provider} ({str(exc).splitlines()[0]})"
        ) from None
    _check(reference, want, tuned_run.session, feeds)
    say("timing the whole model")
    whole = _whole(original, tuned_run, feeds, provider, repeats, inputs_on)
    return TuneResult(
        result.model,
        {
            "provider": provider,
            "target": target,
            "inputs_on": inputs_on,
            "nodes": report_nodes,
            "unmeasured": [
                {"name": n.name or n.op_type, "action": n.action, "graph": n.graph}
                for n in result.report.nodes
                if n.graph != "main"
            ],
            "whole": whole,
            "check": "ok",
        },
    )


def _check(
    reference: onnx.ModelProto, want: list, tuned, feeds: dict[str, np.ndarray]
) -> None:
    """The tuned model's outputs from its session on the provider (where it will run: a node
    left as it is may have a kernel only there) equal `want`, the reference's on the CPU EP,
    within `convert --verify`'s tolerance; a UserError says which differ."""
    try:
        got = tuned.run(None, feeds)
    except Exception as exc:  # noqa: BLE001 - ORT's own error, one line for the user
        raise UserError(
            f"the tuned model does not run ({str(exc).splitlines()[0]})"
        ) from None
    names = [o.name for o in reference.graph.output]
    problems = compare_outputs(names, want, got)
    if problems:
        raise UserError(
            "the tuned model's outputs differ from the original's: "
            + "; ".join(problems)
        )


def _reference(
    model: onnx.ModelProto, feeds: dict[str, np.ndarray]
) -> tuple[onnx.ModelProto, list]:
    """(the model the capture runs and the tuned model is checked against, its outputs on the
    CPU EP): `model`, or where ORT's CPU EP has no kernel for one of its family nodes (float16
    scatter add / mul) the model with those on the Python fallback (`convert(strategy=
    "fallback")`, the node outputs keep their names)."""
    from ..session import InferenceSession

    quiet = measure.quiet_session_options(log_severity_level=4)
    try:
        session = InferenceSession(
            model, providers=["CPUExecutionProvider"], sess_options=quiet
        )
        return model, session.run(None, feeds)
    except UserError:
        raise
    except Exception:  # noqa: BLE001 - ORT's own error: try the fallback, else say why
        pass
    fallback = convert(model, "cpu", strategy="fallback", with_inspect=False).model
    session = InferenceSession(fallback, providers=["CPUExecutionProvider"])
    return fallback, session.run(None, feeds)


def _provider(name: str) -> str:
    resolved = resolve_providers([name])
    full = resolved[0] if isinstance(resolved[0], str) else resolved[0][0]
    if full not in TARGET_OF:
        raise UserError(
            f"tune measures on dml, webgpu, cuda or cpu; {name!r} is not one of them"
        )
    import onnxruntime as ort

    if full != "WebGpuExecutionProvider" and full not in ort.get_available_providers():
        raise UserError(
            f"{full} is not available in this onnxruntime build "
            f"(available: {', '.join(ort.get_available_providers())})"
        )
    return full


def _inferred_types(model: onnx.ModelProto) -> dict[str, onnx.TypeProto]:
    """Every main-graph value's type as onnx's shape inference gives it (the project's domain
    ops read through their schemas); {} where inference fails."""
    try:
        with registered():
            inferred = onnx.shape_inference.infer_shapes(model, strict_mode=False)
    except Exception:  # noqa: BLE001 - no inference: the captured dims serve
        return {}
    g = inferred.graph
    return {vi.name: vi.type for vi in [*g.input, *g.value_info, *g.output]}


def _measure(
    single: onnx.ModelProto,
    feeds: dict[str, np.ndarray],
    target: str,
    provider: str,
    repeats: int,
    inputs_on: str,
) -> dict:
    """Every option of the node in `single`, timed; the fastest is the choice."""
    prepared: dict[str, measure.Prepared] = {}
    rows: dict[str, dict] = {}
    for opt in node_options(single, target):
        try:
            prepared[opt.name] = measure.prepare(opt.model, provider, feeds, inputs_on)
        except Exception as exc:  # noqa: BLE001 - an option the EP cannot run is no choice
            rows[opt.name] = {
                "option": opt.name,
                "strategy": opt.strategy,
                "error": str(exc).splitlines()[0] if str(exc) else type(exc).__name__,
            }
            continue
        kernels = prepared[opt.name].kernels
        # ORT inserts Memcpy nodes only between EPs: a one-EP option needs no profiled run
        memcpy = (
            measure.copies(opt.model, provider, feeds, inputs_on)
            if len(kernels) > 1
            else 0
        )
        rows[opt.name] = {
            "option": opt.name,
            "strategy": opt.strategy,
            "kernels": kernels,
            "copies": prepared[opt.name].transfers + memcpy,
            "bound_on": prepared[opt.name].bound_on,
        }
    if not prepared:
        raise UserError(
            f"no option of {single.graph.node[0].op_type} runs on {provider}: "
            + "; ".join(r["error"] for r in rows.values())
        )
    for name, t in measure.medians(prepared, repeats).items():
        rows[name]["median_us"] = round(t["median_s"] * 1e6, 1)
        rows[name]["reps"] = t["reps"]
    best = min(prepared, key=lambda n: rows[n]["median_us"])
    return {
        "options": list(rows.values()),
        "choice": best,
        "strategy": rows[best]["strategy"],
    }


def _whole(
    original: onnx.ModelProto,
    tuned_run: measure.Prepared,
    feeds: dict[str, np.ndarray],
    provider: str,
    repeats: int,
    inputs_on: str,
) -> dict:
    """The tuned model timed whole, then beside the original (interleaved) where the original
    runs on the provider. An original the EP fails on (the DML EP's failures can leave the
    device removed for the rest of the process) is reported, and the tuned model's own time
    was taken before it was tried."""
    alone = measure.medians({"tuned": tuned_run}, repeats)["tuned"]
    out: dict = {
        "tuned_us": round(alone["median_s"] * 1e6, 1),
        "kernels": {"tuned": tuned_run.kernels},
    }
    try:
        original_run = measure.prepare(original, provider, feeds, inputs_on)
    except Exception as exc:  # noqa: BLE001 - ORT's own error, reported in one line
        text = str(exc).strip().splitlines()
        out["original_error"] = text[0] if text else type(exc).__name__
        return out
    t = measure.medians({"original": original_run, "tuned": tuned_run}, repeats)
    a, b = t["original"]["median_s"], t["tuned"]["median_s"]
    out.update(
        original_us=round(a * 1e6, 1),
        tuned_us=round(b * 1e6, 1),
        speedup=round(a / b, 3) if b > 0 else None,
    )
    out["kernels"]["original"] = original_run.kernels
    return out
