"""`convert_model`: convert an `onnx_ir.Model` in place and return the report.

The entry point for callers that already hold an onnx-ir model (onnxscript / Olive passes,
`ort_dml_ops.passes.ConvertPass`): the same passes as `ort_dml_ops.convert` (pipeline.py),
run on the caller's model itself, with no ModelProto round trip of the model. Only what
onnx's C API needs is serialized, without the weights (light.serialize_light): the checks
`convert` makes on the input, and, after the passes, the checker's validation and the
`inspect` report. Initializers held as external data stay external tensors (their bytes are
never read).

A pass may refuse the model (UserError) after others changed it, so the passes run on a
clone (`ir.Model.clone`: new nodes and values, the tensors shared, so its cost is the graph's
structure, never the weights) whose graph and functions replace the caller's once the
conversion succeeded and changed something.
"""

from __future__ import annotations

import onnx
import onnx_ir as ir

from .. import collector
from ..modelio import fix_ir_version
from ..runnable import check_original
from .light import serialize_light
from .pipeline import (
    ConvertReport,
    check_request,
    inspect_report,
    make_report,
    run_passes,
    signature_of,
    validate_converted,
    value_info_names,
)


@collector.paused()  # as convert: the collector walked the growing graph
def convert_model(
    model: ir.Model,
    target: str = "dml",
    *,
    strategy: str = "auto",
    check_indices: bool = True,
    validate: bool = True,
    with_inspect: bool = True,
) -> ConvertReport:
    """Rewrite `model` in place for `target` with `strategy` (see `ort_dml_ops.convert`).

    Raises `UserError` (one line) where `convert` would; `model` is then left as it was.
    """
    strategy, target = check_request(strategy, target)
    given = serialize_light(model)
    check_original(given)
    signature = signature_of(given.graph)
    work = model.clone()
    light = onnx.ModelProto()
    light.CopyFrom(given)  # the first inference takes it (and changes it)
    state = run_passes(
        work, target, strategy, check_indices, value_info_names(given), light
    )
    report = make_report(state)
    if not report.changed:  # nothing rewritten: the caller's model stays as it is
        out = fix_ir_version(given)
    else:
        del given
        out = fix_ir_version(serialize_light(work))
    if validate:
        validate_converted(out, state.folds.signature(signature))
    if with_inspect:
        report.inspect = inspect_report(out, target)
    if not report.changed:
        return report
    model.graph = work.graph
    model.ir_version = out.ir_version
    model.functions.clear()
    model.functions.update(work.functions)
    return report
