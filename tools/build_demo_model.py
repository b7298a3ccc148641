"""Rebuild the demo model shipped in ort_dml_ops/data/demo/ (a diffusion noise schedule).

    python tools/build_demo_model.py

alphas_cumprod = CumProd(1 - betas) through the project's custom DOMAIN::CumProd (opset 17,
below ONNX's CumProd-26), and its square root, as a DDPM sampler precomputes them.
"""

from pathlib import Path

import numpy as np
import onnx

from ort_dml_ops import GraphBuilder

OUT = Path(__file__).resolve().parent.parent / "ort_dml_ops" / "data" / "demo" / "noise_schedule.onnx"


def build() -> onnx.ModelProto:
    b = GraphBuilder(opset=17, name="noise_schedule")
    betas = b.input("betas", "float32", ["T"])
    alphas = b.op("Sub", b.constant(np.array(1.0, np.float32)), betas)
    alphas_cumprod = b.cumprod(alphas, axis=0)
    return b.build(outputs={"alphas_cumprod": alphas_cumprod, "sqrt_alphas_cumprod": b.op("Sqrt", alphas_cumprod)})


if __name__ == "__main__":
    onnx.save(build(), OUT)
    print(f"wrote {OUT}")
