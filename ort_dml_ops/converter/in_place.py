"""`convert_model`: convert an `onnx_ir.Model` in place and return the report.

The entry point for callers that already hold an onnx-ir model (onnxscript / Olive passes,
`ort_dml_ops.passes.ConvertPass`): the same conversion as `ort_dml_ops.convert`, with its
report; the model's graph, functions and opset imports are replaced by the converted ones.

Today this goes through `pipeline.convert` on the serialized model (one `ir.serde` round
trip each way); initializers held as external data stay external tensors (their bytes are
never read) and keep their base folder. Issue 14 item 1 (one graph from load to save, the
steps as onnx-ir passes) will let the passes run on `model` itself.
"""

from __future__ import annotations

import onnx_ir as ir

from .pipeline import ConvertReport, convert


def _external_base_dir(model: ir.Model) -> str | None:
    for graph in model.graphs():
        for value in graph.initializers.values():
            tensor = value.const_value
            if isinstance(tensor, ir.ExternalTensor):
                return str(tensor.base_dir)
    return None


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
    base_dir = _external_base_dir(model)
    proto = ir.serde.serialize_model(model)
    result = convert(
        proto,
        target,
        strategy=strategy,
        check_indices=check_indices,
        validate=validate,
        with_inspect=with_inspect,
    )
    del proto
    if (
        not result.report.changed
    ):  # nothing rewritten: the caller's model stays as it is
        return result.report
    converted = ir.serde.deserialize_model(result.model)
    if base_dir:
        ir.external_data.set_base_dir(converted.graph, base_dir)
    model.graph = converted.graph
    model.ir_version = converted.ir_version
    model.functions.clear()
    model.functions.update(converted.functions)
    return result.report
