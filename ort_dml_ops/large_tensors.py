"""Large initializers without whole-model copies: streamed serialization, detached stubs.

A model of several GB must not be copied whole in memory on its way through convert: the save
streams each large initializer (`serialize_into`), and the pipeline works on a copy whose large
initializers are stubs (`detach_large_initializers`, put back by `attach_detached`).
"""

from __future__ import annotations

import onnx


def tensor_nbytes(t: onnx.TensorProto) -> int:
    """The bytes of the tensor's data, from its type and dims (wherever the data is)."""
    n = 1
    for d in t.dims:
        n *= d
    return n * onnx.helper.tensor_dtype_to_np_dtype(t.data_type).itemsize


#: initializers at least this large are written field by field (never serialized as a whole)
STREAM_BYTES = 1 << 20


def serialize_into(model: onnx.ModelProto, f) -> None:
    """Write `model`'s protobuf encoding to the binary file `f` with no whole-model copy.

    `SerializeToString` needs twice the model's size on top of it (the encoder's buffer and
    the Python bytes). Here the model minus its large main-graph initializers is encoded as
    usual, then each large initializer as one more `graph { initializer { ... } }` record:
    protobuf merges repeated occurrences of a message field and appends to repeated fields,
    so a reader (onnx, ONNX Runtime) sees the same model; only one tensor's bytes are copied at
    a time.
    """
    big = [
        t
        for t in model.graph.initializer
        if t.HasField("raw_data") and _nbytes_or_zero(t) >= STREAM_BYTES
    ]
    if not big:
        f.write(model.SerializeToString())
        return
    names = {id(t) for t in big}
    skeleton = onnx.ModelProto()
    _copy_fields(skeleton, model, skip={"graph"})
    _copy_fields(skeleton.graph, model.graph, skip={"initializer"})
    for t in model.graph.initializer:
        if id(t) not in names:
            skeleton.graph.initializer.append(t)
    f.write(skeleton.SerializeToString())
    del skeleton
    for t in big:
        head = onnx.TensorProto()
        _copy_fields(head, t, skip={"raw_data"})
        head_bytes = head.SerializeToString()
        raw = t.raw_data
        tensor_len = len(head_bytes) + 1 + len(_varint(len(raw))) + len(raw)
        graph_len = 1 + len(_varint(tensor_len)) + tensor_len
        f.write(
            b"\x3a"
            + _varint(graph_len)
            + b"\x2a"
            + _varint(tensor_len)
            + head_bytes
            + b"\x4a"
            + _varint(len(raw))
        )  # 0x3a: ModelProto.graph (7), 0x2a: GraphProto.initializer (5)
        f.write(raw)  # 0x4a: TensorProto.raw_data (9), all length-delimited
        del raw


def _nbytes_or_zero(t: onnx.TensorProto) -> int:
    try:
        return tensor_nbytes(t)
    except Exception:  # noqa: BLE001 - a type numpy has no size for: not streamed
        return 0


def _copy_fields(dst, src, skip=frozenset()) -> None:
    """Copy every set field of `src` into `dst` except those named in `skip` (no deep copy of skipped ones)."""
    for field, value in src.ListFields():
        if field.name in skip:
            continue
        repeated = getattr(
            field, "is_repeated", None
        )  # protobuf >= 6; older ones have `label`
        if repeated is None:
            repeated = field.label == field.LABEL_REPEATED
        if repeated:
            getattr(dst, field.name).extend(value)
        elif field.type == field.TYPE_MESSAGE:
            getattr(dst, field.name).CopyFrom(value)
        else:
            setattr(dst, field.name, value)


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


#: `location` of a stub left where a large initializer was detached (detach_large_initializers)
DETACHED = "ort-dml-ops-detached:"
_DATA_FIELDS = {
    "raw_data",
    "float_data",
    "int32_data",
    "string_data",
    "int64_data",
    "double_data",
    "uint64_data",
}


def detach_large_initializers(model: onnx.ModelProto, threshold: int = STREAM_BYTES):
    """A copy of `model` whose large inline main-graph initializers are stubs, and the tensors.

    Each stub keeps the initializer's name, type and dims but no data: it is marked as
    external data at location `ort-dml-ops-detached:<name>`, so everything that already copes
    with external data (shape inference, onnx_ir, the checker through without_external_data,
    inspect) works on a copy that costs nothing. Shape inference with `data_prop=True` copies
    every initializer's data several times over (~25x a 256 MiB tensor was measured), and
    the rules only need the values of small constants (axes, shapes). `attach_detached` puts
    the data back.
    """
    big = {
        t.name: t
        for t in model.graph.initializer
        if t.data_location != onnx.TensorProto.EXTERNAL
        and _nbytes_or_zero(t) >= threshold
    }
    copy = onnx.ModelProto()
    if not big:
        copy.CopyFrom(model)
        return copy, {}
    _copy_fields(copy, model, skip={"graph"})
    _copy_fields(copy.graph, model.graph, skip={"initializer"})
    for t in model.graph.initializer:
        if t.name not in big:
            copy.graph.initializer.append(t)
            continue
        stub = copy.graph.initializer.add()
        _copy_fields(stub, t, skip=_DATA_FIELDS | {"external_data", "data_location"})
        stub.data_location = onnx.TensorProto.EXTERNAL
        for k, v in (
            ("location", DETACHED + t.name),
            ("length", str(tensor_nbytes(t))),
        ):
            e = stub.external_data.add()
            e.key, e.value = k, v
    return copy, big


def attach_detached(model: onnx.ModelProto, detached: dict) -> onnx.ModelProto:
    """Put the data of `detached` tensors back into `model`'s stubs (in place; returns it)."""
    if not detached:
        return model
    for t in model.graph.initializer:
        if t.data_location == onnx.TensorProto.EXTERNAL:
            location = next(
                (e.value for e in t.external_data if e.key == "location"), ""
            )
            if location.startswith(DETACHED):
                t.CopyFrom(detached[location[len(DETACHED) :]])
    return model
