"""The real-export corpus (models/real/, built by tools/export_models.py; see docs/real-models.md).

    from tests.real_models import REAL_MODELS, get
    for m in REAL_MODELS:
        model = m.load()                 # onnx.ModelProto (m.path: models/real/<name>/model.onnx)
        feeds, want = m.inputs, m.expected
        problems = m.compare(outputs)    # [] when outputs match torch's within m.meta's tolerance

Each model was exported by torch.onnx from public library code; `expected` holds TORCH's
outputs for `inputs`. Where the exporter wrote a model that computes something else
(`m.meta["exporter_wrong"]`, e.g. scatter_reduce(mean)), `m.exporter_output` holds an
independent numpy computation of what the written model computes, and `m.reference` is that:
what ONNX Runtime must reproduce for the model as written.
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "models" / "real"


def _load_npz(path: Path) -> dict[str, np.ndarray]:
    with np.load(io.BytesIO(path.read_bytes()), allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


@dataclass(frozen=True)
class RealModel:
    name: str
    path: Path
    meta: dict

    def load(self):
        import onnx

        return onnx.load_model(str(self.path))

    @cached_property
    def inputs(self) -> dict[str, np.ndarray]:
        return _load_npz(self.path.parent / "inputs.npz")

    @cached_property
    def expected(self) -> dict[str, np.ndarray]:
        """torch's own outputs for `inputs`, by ONNX output name."""
        return _load_npz(self.path.parent / "expected.npz")

    @cached_property
    def exporter_output(self) -> dict[str, np.ndarray] | None:
        """Where the exporter wrote a wrong model: what that model computes (numpy), else None."""
        wrong = self.meta.get("exporter_wrong")
        return _load_npz(self.path.parent / wrong["file"]) if wrong else None

    @property
    def reference(self) -> dict[str, np.ndarray]:
        """The outputs ONNX Runtime must produce for the model AS WRITTEN: torch's, or, where the
        exporter is wrong, the independent computation of what it wrote."""
        return (
            self.exporter_output if self.exporter_output is not None else self.expected
        )

    @property
    def rtol(self) -> float:
        return float(self.meta["tolerance"]["rtol"])

    @property
    def atol(self) -> float:
        return float(self.meta["tolerance"]["atol"])

    @property
    def uses_domain_ops(self) -> bool:
        return any(d not in ("ai.onnx", "") for d in self.meta["opset_imports"])

    def compare(
        self, outputs, reference: dict[str, np.ndarray] | None = None
    ) -> list[str]:
        """Mismatches of `outputs` ({name: array} or a list in output order) with `reference`
        (default: `self.reference`), one line each; integer and bool outputs must be equal,
        floats within the model's tolerance (NaN equal to NaN)."""
        reference = self.reference if reference is None else reference
        if not isinstance(outputs, dict):
            outputs = dict(zip(self.meta["outputs"], outputs))
        problems = []
        for name, want in reference.items():
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
            if not np.issubdtype(want.dtype, np.floating):
                bad = got != want
            else:
                bad = ~np.isclose(
                    got.astype(np.float64),
                    want.astype(np.float64),
                    rtol=self.rtol,
                    atol=self.atol,
                    equal_nan=True,
                )
            if bad.any():
                at = tuple(int(i) for i in np.argwhere(bad)[0])
                problems.append(
                    f"{name}: {int(bad.sum())} of {want.size} values off (at {at}: got {got[at]!r}, "
                    f"want {want[at]!r}; rtol {self.rtol}, atol {self.atol})"
                )
        return problems


def _index() -> list[RealModel]:
    raw = json.loads((CORPUS / "index.json").read_text())
    return [
        RealModel(m["name"], CORPUS / m["name"] / "model.onnx", m)
        for m in raw["models"]
    ]


REAL_MODELS: list[RealModel] = _index()
NAMES: list[str] = [m.name for m in REAL_MODELS]


def get(name: str) -> RealModel:
    for m in REAL_MODELS:
        if m.name == name:
            return m
    raise KeyError(f"no real-export model named {name!r}")
