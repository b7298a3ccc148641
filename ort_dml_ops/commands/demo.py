"""`ort-dml-ops demo`: run the bundled noise-schedule model, whose CumProd is the project's
custom op, through ort_dml_ops.InferenceSession; print its outputs and the providers used,
and check them against numpy."""

from __future__ import annotations

import argparse
from importlib import resources

import numpy as np

EXAMPLE = "example: ort-dml-ops demo --steps 1000"


def add_parser(sub) -> None:
    p = sub.add_parser("demo", help="run the bundled demo model", description=__doc__, epilog=EXAMPLE,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=1000, help="diffusion steps T (default 1000)")
    p.add_argument("--provider", action="append", metavar="NAME", help="dml, cuda, cpu (default: best available)")
    p.set_defaults(func=run)


def run(args) -> int:
    from ..errors import UserError
    from ..session import InferenceSession

    if args.steps < 1:
        raise UserError(f"--steps must be at least 1, got {args.steps}")
    model = resources.files("ort_dml_ops").joinpath("data/demo/noise_schedule.onnx").read_bytes()
    session = InferenceSession(model, providers=args.provider)
    betas = np.linspace(1e-4, 0.02, args.steps, dtype=np.float32)  # DDPM's linear schedule
    alphas_cumprod, sqrt_alphas_cumprod = session.run(None, {"betas": betas})
    expected = np.cumprod(np.float32(1) - betas, dtype=np.float32)
    print("model: noise_schedule.onnx (DOMAIN::CumProd via the Python fallback)")
    print(f"providers: {', '.join(session.get_providers())}")
    print(f"alphas_cumprod[:5]      = {np.array2string(alphas_cumprod[:5], precision=6)}")
    print(f"alphas_cumprod[-1]      = {alphas_cumprod[-1]:.6e}")
    print(f"sqrt_alphas_cumprod[-1] = {sqrt_alphas_cumprod[-1]:.6e}")
    ok = np.allclose(alphas_cumprod, expected, rtol=1e-6, atol=0) and np.allclose(
        sqrt_alphas_cumprod, np.sqrt(expected), rtol=1e-6, atol=0)
    print("check against numpy: " + ("OK" if ok else "MISMATCH"))
    return 0 if ok else 1
