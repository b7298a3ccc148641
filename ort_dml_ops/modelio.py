"""Load and save models: clear errors for bad files, atomic writes, loadable IR versions."""

from __future__ import annotations

import os
from pathlib import Path

import onnx
import onnx.external_data_helper
from google.protobuf.message import DecodeError

from .errors import UserError
from .large_tensors import serialize_into, tensor_nbytes

#: Highest IR version every ONNX Runtime we support loads (onnxruntime-directml 1.24.4 and
#: onnxruntime 1.31 both refuse 14, which onnx 1.23 writes by default).
MAX_IR_VERSION = 13


def ir_version_for(model: onnx.ModelProto) -> int:
    """The lowest IR version that the model's opset imports need, never above MAX_IR_VERSION."""
    needed = 3
    for imp in model.opset_import:
        domain = imp.domain or "ai.onnx"
        try:
            needed = max(
                needed, onnx.helper.find_min_ir_version_for([imp], ignore_unknown=True)
            )
        except (
            ValueError,
            KeyError,
        ):  # an opset newer than this onnx knows: keep the cap
            if domain in ("ai.onnx", "ai.onnx.ml"):
                needed = MAX_IR_VERSION
    return min(max(needed, 7), MAX_IR_VERSION)


def fix_ir_version(model: onnx.ModelProto) -> onnx.ModelProto:
    """Set a loadable IR version in place (and return the model) when it is above the cap."""
    if model.ir_version > MAX_IR_VERSION or model.ir_version == 0:
        model.ir_version = ir_version_for(model)
    return model


def load_model(
    model: onnx.ModelProto | str | os.PathLike | bytes,
    *,
    load_external_data: bool = True,
) -> onnx.ModelProto:
    """Accept a ModelProto, a path or serialized bytes; raise UserError naming the problem."""
    if isinstance(model, onnx.ModelProto):
        return model
    if isinstance(model, (bytes, bytearray, memoryview)):
        proto = onnx.ModelProto()
        try:
            proto.ParseFromString(bytes(model))
        except DecodeError as exc:
            raise UserError(f"the bytes given are not an ONNX model ({exc})") from None
        _require_graph(proto, "the bytes given")
        return proto
    if isinstance(model, (str, os.PathLike)):
        path = Path(model)
        if not path.exists():
            raise UserError(f"{path}: no such file")
        if path.is_dir():
            raise UserError(f"{path}: is a directory, not an ONNX model file")
        if path.stat().st_size == 0:
            raise UserError(f"{path}: the file is empty, not an ONNX model")
        try:
            proto = onnx.load(str(path), load_external_data=False)
        except DecodeError as exc:
            raise UserError(
                f"{path}: not an ONNX model (protobuf decode failed: {exc})"
            ) from None
        except (OSError, ValueError, onnx.checker.ValidationError) as exc:
            first = (
                str(exc).strip().splitlines()[0]
                if str(exc).strip()
                else type(exc).__name__
            )
            raise UserError(f"{path}: cannot load the model ({first})") from None
        _require_graph(proto, str(path))
        check_external_data(proto, path.parent, str(path))
        if load_external_data and _uses_external_data(proto):
            try:  # the paths were checked above: inside the model's folder, present
                onnx.external_data_helper.load_external_data_for_model(
                    proto, str(path.parent)
                )
            except (OSError, ValueError) as exc:
                first = (
                    str(exc).strip().splitlines()[0]
                    if str(exc).strip()
                    else type(exc).__name__
                )
                raise UserError(
                    f"{path}: cannot load the external data ({first})"
                ) from None
        return proto
    raise UserError(
        f"expected an onnx.ModelProto, a path or bytes, got {type(model).__name__}"
    )


def _tensors(proto: onnx.ModelProto):
    def walk(graph):
        yield from graph.initializer
        for node in graph.node:
            for attr in node.attribute:
                if attr.HasField("t"):
                    yield attr.t
                yield from attr.tensors
                for g in [attr.g] if attr.HasField("g") else list(attr.graphs):
                    yield from walk(g)

    yield from walk(proto.graph)
    for f in proto.functions:
        for node in f.node:
            for attr in node.attribute:
                if attr.HasField("t"):
                    yield attr.t


def _uses_external_data(proto: onnx.ModelProto) -> bool:
    return any(t.data_location == onnx.TensorProto.EXTERNAL for t in _tensors(proto))


def check_external_data(proto: onnx.ModelProto, folder: Path, what: str) -> None:
    """Refuse external data outside the model's folder (absolute, `..`, links out) or missing."""
    root = folder.resolve()
    for t in _tensors(proto):
        if t.data_location != onnx.TensorProto.EXTERNAL:
            continue
        location = next((e.value for e in t.external_data if e.key == "location"), "")
        where = Path(location)
        if not location or where.is_absolute() or where.drive:
            raise UserError(
                f"{what}: external data {location!r} of tensor {t.name!r} is outside the model's folder "
                "(an absolute path); refused"
            )
        target = (root / where).resolve()
        if target != root and root not in target.parents:
            raise UserError(
                f"{what}: external data {location!r} of tensor {t.name!r} is outside the model's folder; refused"
            )
        if not target.is_file():
            raise UserError(
                f"{what}: external data file {location!r} of tensor {t.name!r} does not exist"
            )


def graphs(graph: onnx.GraphProto):
    """`graph` and every If/Loop/Scan body inside it, depth first."""
    yield graph
    for n in graph.node:
        for a in n.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                yield from graphs(a.g)
            for g in a.graphs:
                yield from graphs(g)


def without_external_data(model: onnx.ModelProto) -> onnx.ModelProto:
    """A copy to validate without the weights: each external initializer becomes a graph input
    of the same type and shape (the checker and shape inference need no more of it)."""
    if not external_data_bytes(model):
        return model
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    for g in graphs(copy.graph):
        inputs = {v.name for v in g.input}
        keep = []
        for t in g.initializer:
            if t.data_location != onnx.TensorProto.EXTERNAL:
                keep.append(t)
            elif t.name not in inputs:
                g.input.append(
                    onnx.helper.make_tensor_value_info(
                        t.name, t.data_type, list(t.dims)
                    )
                )
        del g.initializer[:]
        g.initializer.extend(keep)
    return copy


def check_defined_inputs(model: onnx.ModelProto, what: str = "") -> None:
    """Refuse, in one line, a node that reads a value nothing defines.

    ONNX Runtime refuses such a model when it resolves the graph (graph.cc); onnx's checker
    would too, but it also refuses models ORT loads (value_info without a shape, a function
    importing another opset), so this is the one structural rule checked before predicting.
    """

    def walk(graph: onnx.GraphProto, outer: frozenset) -> None:
        defined = (
            set(outer)
            | {v.name for v in graph.input}
            | {t.name for t in graph.initializer}
        )
        defined |= {o for n in graph.node for o in n.output if o}
        for node in graph.node:
            for name in node.input:
                if name and name not in defined:
                    prefix = f"{what}: " if what else ""
                    label = node.name or node.op_type
                    raise UserError(
                        f"{prefix}node '{label}' reads '{name}', which no graph input, initializer "
                        "or node defines (ONNX Runtime refuses the model)"
                    )
            for attr in node.attribute:
                for g in (
                    [attr.g]
                    if attr.type == onnx.AttributeProto.GRAPH
                    else list(attr.graphs)
                ):
                    walk(g, frozenset(defined))

    walk(model.graph, frozenset())


def _require_graph(proto: onnx.ModelProto, what: str) -> None:
    # Almost any byte string parses as *some* protobuf; a model has a graph and an opset.
    if not proto.HasField("graph") or not proto.opset_import:
        raise UserError(f"{what}: not an ONNX model (no graph or no opset import)")


def external_data_bytes(proto: onnx.ModelProto) -> int:
    """Total length of the model's external tensors (0 when it has none)."""
    total = 0
    for t in _tensors(proto):
        if t.data_location == onnx.TensorProto.EXTERNAL:
            info = {e.key: e.value for e in t.external_data}
            total += int(info.get("length") or 0) or tensor_nbytes(t)
    return total


_CHUNK = 16 << 20
_ALIGN = 4096


def _copy_external_data(
    proto: onnx.ModelProto, src_dir: Path, dst: Path, tmp: str
) -> None:
    """Copy every external tensor's bytes from `src_dir` into the file `tmp` (to be renamed to
    `dst`) and point the tensors at `dst.name`. Streams in chunks (never the whole tensor in
    memory) and leaves all-zero chunks as holes, so a sparse input stays sparse."""
    root = src_dir.resolve()
    zero = bytes(_CHUNK)
    with open(tmp, "r+b") as out:
        pos = 0
        for t in _tensors(proto):
            if t.data_location != onnx.TensorProto.EXTERNAL:
                continue
            info = {e.key: e.value for e in t.external_data}
            offset = int(info.get("offset") or 0)
            length = int(info.get("length") or 0) or tensor_nbytes(t)
            pos = (pos + _ALIGN - 1) // _ALIGN * _ALIGN
            out.seek(pos)
            with open(root / info["location"], "rb") as f:
                f.seek(offset)
                left = length
                while left:
                    chunk = f.read(min(_CHUNK, left))
                    if not chunk:
                        raise UserError(
                            f"external data {info['location']!r} of tensor {t.name!r} is shorter than its "
                            f"declared length {length}"
                        )
                    if chunk == zero[: len(chunk)]:
                        out.seek(len(chunk), os.SEEK_CUR)
                    else:
                        out.write(chunk)
                    left -= len(chunk)
            del t.external_data[:]
            for k, v in (
                ("location", dst.name),
                ("offset", str(pos)),
                ("length", str(length)),
            ):
                e = t.external_data.add()
                e.key, e.value = k, v
            pos += length
        out.truncate(pos)


def external_data_files(
    proto: onnx.ModelProto, folder: str | os.PathLike
) -> list[Path]:
    """The files the model's external tensors are read from (resolved against `folder`)."""
    out: dict[Path, None] = {}
    for t in _tensors(proto):
        if t.data_location == onnx.TensorProto.EXTERNAL:
            location = next(
                (e.value for e in t.external_data if e.key == "location"), ""
            )
            if location:
                out[Path(folder) / location] = None
    return list(out)


def data_path_for(path: str | os.PathLike) -> Path:
    """Where the output's external data goes: `<path>.data` beside it."""
    path = Path(path)
    return path.with_name(path.name + ".data")


def save_model_atomic(
    model: onnx.ModelProto,
    path: str | os.PathLike,
    *,
    source: str | os.PathLike | None = None,
    external_data_dir: str | os.PathLike | None = None,
) -> Path:
    """Write `model` to `path` through a temporary file in the same folder, then rename.

    Refuses (UserError, before writing) a `path` that is, or links to, `source` (the input
    model) or a file the model's external data is read from, and an output `.data` file that
    is one of them. On any failure, and on SIGTERM/SIGINT, no file is left behind (writes.py).
    With `external_data_dir` (the folder the model's external tensors are relative to, e.g.
    `ConvertResult.external_data_dir`), their bytes are copied to `<path>.data` beside the
    output, which stays external; `model` itself is not changed.
    """
    from .writes import Outputs

    path = Path(path)
    outputs = Outputs()
    if source is not None:
        outputs.protect(source, "the input model")
    external = external_data_dir is not None and _uses_external_data(model)
    if external_data_dir is not None and external:
        for f in external_data_files(model, external_data_dir):
            outputs.protect(f, "the input's external data")
    outputs.add(path, "output")
    data_path = (
        outputs.add(data_path_for(path), "output's external data") if external else None
    )
    with outputs:
        write_model(
            model,
            outputs.temp(path),
            path,
            external_data_dir if external else None,
            outputs.temp(data_path) if data_path is not None else None,
        )
        outputs.commit()
    return path


def write_model(
    model: onnx.ModelProto,
    tmp: str,
    path: Path,
    external_data_dir=None,
    data_tmp: str | None = None,
) -> None:
    """Write `model` into the temporary file `tmp` (to be renamed to `path`); with
    `external_data_dir`, copy its external tensors into `data_tmp` (to be `<path>.data`)."""
    from .writes import write_error

    try:
        if external_data_dir is not None:
            assert data_tmp is not None, (
                "external data is written through a temporary file"
            )
            copy = onnx.ModelProto()
            copy.CopyFrom(model)  # external tensors hold no bytes: a small copy
            model = copy
            _copy_external_data(
                model, Path(external_data_dir), data_path_for(path), data_tmp
            )
        fix_ir_version(model)
        with open(tmp, "wb") as f:
            serialize_into(model, f)
    except OSError as exc:
        raise write_error(path, "output", exc) from None
