"""Build input feeds for a session: from .npy files, or random values of the right type/shape."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnxruntime as ort

from .errors import UserError

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


def random_value(
    ort_type: str, shape, rng: np.random.Generator, dynamic_dim: int = 4
) -> np.ndarray:
    """Random values for an input; symbolic or unknown dimensions become `dynamic_dim`."""
    if ort_type not in _ORT_TO_NUMPY:
        raise UserError(f"cannot make random values of type {ort_type}")
    dims = [d if isinstance(d, int) and d >= 0 else dynamic_dim for d in (shape or [])]
    dtype = np.dtype(_ORT_TO_NUMPY[ort_type])
    if dtype.kind == "f":
        return rng.standard_normal(dims).astype(dtype)
    if dtype.kind == "b":
        return rng.random(dims) < 0.5
    return rng.integers(0, 3, size=dims).astype(
        dtype
    )  # small values stay valid as indices


def _load_npy(path: Path, name: str) -> np.ndarray:
    if not path.is_file():
        raise UserError(f"{path}: no such file (for input {name!r})")
    try:
        return np.load(path, allow_pickle=False)
    except (ValueError, OSError) as exc:
        raise UserError(f"{path}: not a .npy array ({exc})") from None
