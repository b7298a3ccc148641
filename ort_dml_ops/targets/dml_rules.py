"""The DML EP's own acceptance rules on top of kernel lookup (data in, bool + reason out).

Each rule names the ONNX Runtime source it mirrors (paths under
onnxruntime/core/providers/dml/DmlExecutionProvider/src/).
"""

from __future__ import annotations

import onnx

# GetDmlDataTypeFromMlDataTypeNoThrow (DmlCommon.cpp): element types DirectML has a tensor type for
# (bool is carried as uint8). string, bfloat16, complex and float8 have none -> the node is rejected.
DML_ELEMENT_TYPES = frozenset(
    f"tensor({t})"
    for t in (
        "float",
        "float16",
        "double",
        "int8",
        "int16",
        "int32",
        "int64",
        "uint8",
        "uint16",
        "uint32",
        "uint64",
        "bool",
        "int4",
        "uint4",
    )
)


def attr(node: onnx.NodeProto, name: str, default):
    """The node's attribute `name` as a Python value (strings decoded), `default` where unset."""
    for a in node.attribute:
        if a.name == name:
            v = onnx.helper.get_attribute_value(a)
            return v.decode() if isinstance(v, bytes) else v
    return default


def _present_inputs(node) -> int:
    # context->GetInputCount(): the node's input count (trailing missing optionals trimmed by ORT)
    n = len(node.input)
    while n and not node.input[n - 1]:
        n -= 1
    return n


# name -> (callable(node) -> reason-or-None, source file). A reason means the query rejects.
def _q_scatter(node):
    r = attr(node, "reduction", "none")
    return (
        None
        if r == "none"
        else f"QueryScatter rejects reduction='{r}' (DML supports only 'none')"
    )


def _q_slice(node):
    return (
        None if _present_inputs(node) <= 5 else "QuerySlice rejects more than 5 inputs"
    )


def _q_pad(node):
    pads = attr(node, "pads", [])
    return (
        None
        if not any(p < 0 for p in pads)
        else "QueryPad rejects negative 'pads' (opset < 11 attribute)"
    )


def _q_maxpool(node):
    return (
        None
        if attr(node, "storage_order", 0) == 0
        else "QueryMaxPool rejects storage_order != 0"
    )


def _q_resize(node):
    if attr(node, "mode", "nearest") == "cubic":
        return "QueryResize rejects mode='cubic'"
    if attr(node, "exclude_outside", 0) != 0:
        return "QueryResize rejects exclude_outside != 0"
    if attr(node, "extrapolation_value", 0.0) != 0.0:
        return "QueryResize rejects extrapolation_value != 0"
    return None


def _q_batchnorm(node):
    if attr(node, "training_mode", 0) != 0:
        return "QueryBatchNormalization rejects training_mode != 0"
    if _present_inputs(node) < 5:
        return "QueryBatchNormalization rejects fewer than 5 inputs"
    return None


SUPPORT_QUERIES = {
    "QueryScatter": (_q_scatter, "Operators/DmlOperatorScatter.cpp"),
    "QuerySlice": (_q_slice, "Operators/DmlOperatorSlice.cpp"),
    "QueryPad": (_q_pad, "Operators/DmlOperatorPadding.cpp"),
    "QueryMaxPool": (_q_maxpool, "Operators/DmlOperatorPooling.cpp"),
    "QueryResize": (
        _q_resize,
        "Operators/DmlOperatorResize.cpp (mode, exclude_outside, extrapolation_value)",
    ),
    "QueryBatchNormalization": (
        _q_batchnorm,
        "Operators/DmlOperatorBatchNormalization.cpp (partly: "
        "training_mode and input count; per-input dtype check not modelled)",
    ),
}


def support_query(name: str | None, node) -> str | None:
    """ExecutionProvider.cpp IsNodeSupportedByDml: internalRegInfo->supportQuery(node)."""
    if not name:
        return None
    fn = SUPPORT_QUERIES.get(name)
    if fn is None:
        return None  # not modelled: assumed to accept (documented in docs/inspect.md)
    return fn[0](node)


def unsupported_data_type(
    node, kernel, value_type, device_unsupported=frozenset()
) -> str | None:
    """ExecutionProvider.cpp DoesNodeContainSupportedDataTypes.

    Every present input/output must be a tensor of a DirectML element type; the device must
    support it unless the input is one of the kernel's constant CPU inputs. Sequence-typed args
    are accepted only for the CPU-implemented sequence kernels the DML EP registers.
    """
    cpu_inputs = kernel.cpu_inputs if kernel is not None else frozenset()
    cpu_kernel = bool(
        kernel is not None
        and kernel.extra.get("note", "").startswith("CPU-implemented")
    )
    for is_input, names in ((True, node.input), (False, node.output)):
        for i, name in enumerate(names):
            if not name:
                continue
            t = value_type(name)
            if t is None:
                continue  # unknown type: nothing to reject on
            if t.startswith("seq(") or t.startswith("optional("):
                if cpu_kernel and t.startswith("seq("):
                    continue
                return f"argument '{name}' is {t}: the DML EP takes tensors only"
            if t not in DML_ELEMENT_TYPES:
                return f"argument '{name}' is {t}: DirectML has no such tensor type"
            if is_input and i in cpu_inputs:
                continue
            if t in device_unsupported:
                return f"argument '{name}' is {t}: not supported by the device (DML feature query)"
    return None


def scatter_fit(data: list, indices: list, axis: int) -> tuple[str, str]:
    """Whether DirectML takes a ScatterElements of these dims: ("fits" | "refused" | "unknown",
    why). Dims are ints, dim_params (one name is one size) or None (unknown).

    DML_SCATTER_OPERATOR_DESC (DirectML docs): "IndicesTensor ... Sizes must match
    InputTensor.Sizes in every dimension except Axis"; ONNX allows smaller indices, and the DML
    EP claims the node anyway (E_INVALIDARG at session creation, measured on the lane). On the
    axis, indices longer than the data fail too (80070057 at session creation or run, measured:
    docs/dml-lane.md, tools/dml_lane/repro_scatter_indices_longer.py). "fits" needs every dim
    proven; "refused" one proven wrong; anything else is "unknown"."""
    if len(data) != len(indices) or not data:
        return "unknown", "the ranks are not known to agree"
    axis %= len(data)
    proven = True
    for d, (a, b) in enumerate(zip(data, indices, strict=True)):
        ints = isinstance(a, int) and isinstance(b, int)
        if d != axis and ints and a != b:
            return "refused", (
                "DirectML needs indices sized like data except on the axis "
                f"(dim {d}: indices {b}, data {a})"
            )
        if d == axis and ints and b > a:
            return "refused", (
                f"DirectML fails indices longer than the data on the axis (dim {d}: "
                f"indices {b}, data {a}; 80070057)"
            )
        same = a is not None and a == b
        shorter = d == axis and ints and b <= a
        proven = proven and (same or shorter)
    return ("fits", "") if proven else ("unknown", "a dim is known only at run time")
