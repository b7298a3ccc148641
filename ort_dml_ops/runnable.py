"""What `convert` checks so that it never hands back a model no runtime can run.

Before converting: the original must be a model ONNX Runtime could load — every opset import
of an ONNX domain no newer than the newest this onnx (and ONNX Runtime) knows, and onnx's
checker satisfied (a CumSum in an opset-9 model, a value produced twice, ...). ONNX Runtime
refuses such models when it resolves the graph (onnxruntime/core/graph/graph.cc, model.cc);
converting them would turn an invalid model into a runnable one that means something else.

After converting: every node routed to the Python fallback must have a kernel there (the
extensions library carries no string CumSum/CumProd, for instance): ONNX Runtime has no
kernel for the original either, so the node would run nowhere.
"""

from __future__ import annotations

import numpy as np
import onnx
import onnx_ir as ir

from ._domain import DOMAIN
from .errors import UserError, node_label

#: Newest ai.onnx opset ONNX Runtime loads: 26 for onnxruntime 1.31 (27 fails in
#: ValidateOpsetForDomain, onnxruntime/core/graph/model_load_utils.h; measured); the
#: onnxruntime-directml 1.24.4 limit (25) is the opset rule's business (converter/rules/opset.py).
ORT_MAX_OPSET = 26


def check_original(model: onnx.ModelProto) -> None:
    """Refuse, in one line, an original that ONNX Runtime could not load (weights not needed:
    pass a copy without large initializers)."""
    from .checking import check_model
    from .domain_schemas import registered
    from .modelio import graphs, without_external_data

    known = {
        d: last for d, (_, last) in onnx.defs.C.schema_version_map().items()
    }  # this onnx's newest
    known[""] = min(known[""], ORT_MAX_OPSET)
    for imp in model.opset_import:
        domain = "" if imp.domain == "ai.onnx" else imp.domain
        if domain in known and imp.version > known[domain]:
            raise UserError(
                f"the model imports {domain or 'ai.onnx'} opset {imp.version}, newer than ONNX Runtime "
                f"loads (at most {known[domain]}); refused"
            )
    for g in graphs(model.graph):
        seen: set[str] = set()
        for node in g.node:
            if node.name and node.name in seen:
                raise UserError(
                    f"two nodes are named {node.name!r}; ONNX Runtime refuses such a model "
                    "(graph.cc: node names must be unique); refused"
                )
            seen.add(node.name)
    try:
        with (
            registered()
        ):  # the project's own domain ops are checked against their schemas too
            check_model(without_external_data(model), full_check=False)
    except onnx.checker.ValidationError as exc:
        first = str(exc).strip().splitlines()[0]
        raise UserError(
            f"the model is invalid, refused (onnx.checker: {first})"
        ) from None


def check_fallback_types(model: ir.Model, target: str, graphs) -> None:
    """Refuse a node left on the Python fallback with an element type it has no kernel for.

    The type tables come from fallback/types.py, which does not import onnxruntime-extensions
    (that imports transformers and torch where they are installed: seconds)."""
    from .fallback.rewrite import FALLBACK_OPS
    from .fallback.types import SCAN_TYPES, SCATTER_TYPES, VIA_FLOAT32

    for graph, where, _ in graphs:
        for node in graph:
            if (
                node.domain != DOMAIN
                or node.op_type not in FALLBACK_OPS
                or not node.inputs
                or node.inputs[0] is None
            ):
                continue
            dtype = node.inputs[0].dtype
            if dtype is None:
                continue
            name = _type_name(dtype)
            supported = (
                SCAN_TYPES if node.op_type in ("CumSum", "CumProd") else SCATTER_TYPES
            )
            if name not in supported and name not in VIA_FLOAT32:
                raise UserError(
                    f"{node_label(node, where)}: element type {name} runs nowhere: not on the {target} EP, not lowered, "
                    f"and the Python fallback has no {name} kernel; refused"
                )


def _type_name(dtype: ir.DataType) -> str:
    if dtype == ir.DataType.STRING:
        return "string"
    if dtype == ir.DataType.BFLOAT16:
        return "bfloat16"
    try:
        return np.dtype(dtype.numpy()).name
    except Exception:  # noqa: BLE001 - a type numpy has no name for
        return dtype.name.lower()
