"""What the fallback kernels are called and which element types they take, without importing
onnxruntime-extensions (registry.py does; importing it imports transformers and torch where
they are installed: seconds). `convert` and `inspect` need only these names; a session that runs
the kernels registers them through registry.py."""

from __future__ import annotations

from .._domain import DOMAIN

#: Private domain of the per-dtype kernels; users write DOMAIN::<Op>, never these names.
KERNEL_DOMAIN = DOMAIN + ".fallback"
KERNEL_DOMAIN_VERSION = 1

#: numpy dtype names the library can carry (registry.py maps each to the extensions' type code)
SCAN_TYPES = ("float32", "float64", "int32", "int64", "uint32", "uint64")
SCATTER_TYPES = (
    *SCAN_TYPES,
    "int8",
    "int16",
    "uint8",
    "uint16",
    "bool",
    "string",
)
# No complex types: ONNX Runtime's custom-op API refuses them (and its CPU EP has no kernel).
#: Types carried as float32 with the real type in the `compute` attribute.
VIA_FLOAT32 = ("float16", "bfloat16")


def kernel_name(op: str, dtype: str) -> str:
    return f"{op}_{dtype}"
