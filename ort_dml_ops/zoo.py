"""The model zoo: small models shaped like real uses of CumSum, CumProd and ScatterElements,
shipped as package data with example inputs and expected outputs (see docs/zoo.md).

    from ort_dml_ops import zoo
    for entry in zoo.models():
        model = entry.load_model()               # onnx.ModelProto
        feeds, want = entry.inputs(), entry.expected()
        ok = entry.matches(outputs_by_name)      # within the model's tolerance

The files live in ort_dml_ops/data/zoo/<name>/ (model.onnx, inputs.npz, expected.npz) and
are rebuilt by tools/build_zoo.py, whose expected outputs come from an independent numpy
implementation, not from this package.
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

import numpy as np

__all__ = ["ZooModel", "get", "models", "names"]


def _files():
    return resources.files("ort_dml_ops") / "data" / "zoo"


@dataclass(frozen=True)
class ZooModel:
    name: str
    title: str
    use: str
    families: tuple[str, ...]
    opset: int
    dtypes: tuple[str, ...]
    static_shapes: bool
    rtol: float
    atol: float
    why_tolerance: str
    #: substring of ONNX Runtime's error when the unconverted model runs on its CPU EP (None: it runs)
    native_cpu_error: str | None
    input_names: tuple[str, ...]
    output_names: tuple[str, ...]

    def model_bytes(self) -> bytes:
        return _files().joinpath(self.name, "model.onnx").read_bytes()

    def load_model(self):
        import onnx

        return onnx.load_model_from_string(self.model_bytes())

    def inputs(self) -> dict[str, np.ndarray]:
        return _load_npz(self.name, "inputs.npz")

    def expected(self) -> dict[str, np.ndarray]:
        return _load_npz(self.name, "expected.npz")

    def compare(self, outputs) -> list[str]:
        """Mismatches of `outputs` ({name: array} or a list in output order) with the expected
        outputs, one line each; empty when everything is within the model's tolerance."""
        if not isinstance(outputs, dict):
            outputs = dict(zip(self.output_names, outputs))
        problems = []
        for name, want in self.expected().items():
            got = outputs.get(name)
            if got is None:
                problems.append(f"{name}: missing")
                continue
            got = np.asarray(got)
            if got.shape != want.shape or got.dtype != want.dtype:
                problems.append(
                    f"{name}: got {got.dtype}{list(got.shape)}, want {want.dtype}{list(want.shape)}"
                )
                continue
            g, w = got.astype(np.float64), want.astype(np.float64)
            if not np.allclose(g, w, rtol=self.rtol, atol=self.atol, equal_nan=True):
                with np.errstate(invalid="ignore"):
                    err = np.abs(g - w) - self.rtol * np.abs(w)
                worst = int(np.nanargmax(err))
                problems.append(
                    f"{name}: {int(np.sum(~np.isclose(g, w, rtol=self.rtol, atol=self.atol, equal_nan=True)))} "
                    f"of {w.size} values off (at {np.unravel_index(worst, w.shape)}: got {g.flat[worst]!r}, "
                    f"want {w.flat[worst]!r}; rtol {self.rtol}, atol {self.atol})"
                )
        return problems

    def matches(self, outputs) -> bool:
        return not self.compare(outputs)


def _load_npz(name: str, file: str) -> dict[str, np.ndarray]:
    data = _files().joinpath(name, file).read_bytes()
    with np.load(io.BytesIO(data), allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


@lru_cache(maxsize=1)
def _index() -> tuple[ZooModel, ...]:
    raw = json.loads(_files().joinpath("index.json").read_text())
    return tuple(
        ZooModel(
            name=m["name"],
            title=m["title"],
            use=m["use"],
            families=tuple(m["families"]),
            opset=m["opset"],
            dtypes=tuple(m["dtypes"]),
            static_shapes=m["static_shapes"],
            rtol=m["rtol"],
            atol=m["atol"],
            why_tolerance=m["why_tolerance"],
            native_cpu_error=m["native_cpu_error"],
            input_names=tuple(m["inputs"]),
            output_names=tuple(m["outputs"]),
        )
        for m in raw["models"]
    )


def models() -> list[ZooModel]:
    """Every zoo model, in the zoo's order."""
    return list(_index())


def names() -> list[str]:
    return [m.name for m in _index()]


def get(name: str) -> ZooModel:
    for m in _index():
        if m.name == name:
            return m
    raise KeyError(f"no zoo model named {name!r} (have: {', '.join(names())})")
