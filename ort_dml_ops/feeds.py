"""Build input feeds for a session: from .npy files, or random values of the right type/shape."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from .errors import UserError

if TYPE_CHECKING:  # only for the annotation: `convert` need not import onnxruntime
    import onnxruntime as ort

_ORT_TO_NUMPY = {
    "tensor(float)": np.float32,
    "tensor(double)": np.float64,
    "tensor(float16)": np.float16,
    "tensor(int8)": np.int8,
    "tensor(int16)": np.int16,
    "tensor(int32)": np.int32,
    "tensor(int64)": np.int64,
    "tensor(uint8)": np.uint8,
    "tensor(uint16)": np.uint16,
    "tensor(uint32)": np.uint32,
    "tensor(uint64)": np.uint64,
    "tensor(bool)": np.bool_,
}


def add_feed_arguments(parser) -> None:
    """--input NAME=FILE.npy (repeatable) and --random-inputs, as `run` and `check` take them;
    `build_feeds(session, parse_input_args(args.input), args.random_inputs)` reads them."""
    parser.add_argument(
        "--input",
        action="append",
        default=[],
        metavar="NAME=FILE.npy",
        help="an input value from a .npy file",
    )
    parser.add_argument(
        "--random-inputs",
        action="store_true",
        help="random values for inputs not given with --input",
    )


def parse_input_args(pairs: list[str]) -> dict[str, Path]:
    files: dict[str, Path] = {}
    for pair in pairs:
        name, sep, path = pair.partition("=")
        if not sep or not name or not path:
            raise UserError(f"--input expects NAME=FILE.npy, got {pair!r}")
        if name in files:
            raise UserError(
                f"--input {name}= is given more than once ({files[name]} and {path}); give each input once"
            )
        files[name] = Path(path)
    return files


def build_feeds(
    session: ort.InferenceSession,
    files: dict[str, Path],
    random_inputs: bool,
    seed: int = 0,
) -> dict:
    """Feeds for every graph input; a missing one is an error unless random inputs are asked for."""
    inputs = {i.name: i for i in session.get_inputs()}
    unknown = sorted(set(files) - set(inputs))
    if unknown:
        raise UserError(
            f"the model has no input named {unknown[0]!r} (inputs: {', '.join(inputs)})"
        )
    rng = np.random.default_rng(seed)
    feeds = {}
    for name, info in inputs.items():
        if name in files:
            feeds[name] = _load_npy(files[name], name)
        elif random_inputs:
            feeds[name] = random_value(info.type, info.shape, rng)
        else:
            raise UserError(
                f"missing input {name!r}: give --input {name}=FILE.npy or --random-inputs"
            )
    return feeds


def random_array(dtype, dims: list[int], rng: np.random.Generator) -> np.ndarray:
    """Random values of `dtype` that every model of the project's ops accepts.

    Floats (also ml_dtypes' bfloat16 and float8) in [0.5, 1.5): no zeros and no sign changes, so
    running sums and products are well-conditioned and two runs compare at a tight tolerance;
    integers 0 or 1: valid indices into any axis of length >= 2; bools at random. The one maker
    of `run`/`check --random-inputs` and `convert --verify`.
    """
    dtype = np.dtype(dtype)
    if dtype.kind in "fV":
        return rng.uniform(0.5, 1.5, dims).astype(np.float32).astype(dtype)
    if dtype.kind == "b":
        return rng.integers(0, 2, dims).astype(bool)
    return rng.integers(0, 2, dims).astype(dtype)


def random_value(
    ort_type: str, shape, rng: np.random.Generator, dynamic_dim: int = 4
) -> np.ndarray:
    """Random values for a session input of ORT type `ort_type` ("tensor(float)"); symbolic or
    unknown dimensions become `dynamic_dim`."""
    if ort_type not in _ORT_TO_NUMPY:
        raise UserError(f"cannot make random values of type {ort_type}")
    dims = [d if isinstance(d, int) and d >= 0 else dynamic_dim for d in (shape or [])]
    return random_array(_ORT_TO_NUMPY[ort_type], dims, rng)


def random_model_feeds(model, seed: int = 0, dynamic_dim: int = 3) -> dict:
    """Random values for every graph input of an onnx.ModelProto that is not an initializer."""
    import onnx

    rng = np.random.default_rng(seed)
    inits = {i.name for i in model.graph.initializer}
    feeds = {}
    for vi in model.graph.input:
        if vi.name in inits:
            continue
        tt = vi.type.tensor_type
        dims = [
            d.dim_value if d.HasField("dim_value") else dynamic_dim
            for d in tt.shape.dim
        ]
        dtype = onnx.helper.tensor_dtype_to_np_dtype(tt.elem_type)
        feeds[vi.name] = random_array(dtype, dims, rng)
    return feeds


def _load_npy(path: Path, name: str) -> np.ndarray:
    if not path.is_file():
        raise UserError(f"{path}: no such file (for input {name!r})")
    try:
        return np.load(path, allow_pickle=False)
    except (ValueError, OSError) as exc:
        raise UserError(f"{path}: not a .npy array ({exc})") from None
