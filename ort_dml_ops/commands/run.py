"""`ort-dml-ops run MODEL`: run a model (fallback ops included) on the chosen provider."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from ..errors import UserError

EXAMPLE = "example: ort-dml-ops run model.onnx --provider dml --input x=x.npy --output-dir out/"


def add_parser(sub) -> None:
    p = sub.add_parser("run", help="run a model and print its outputs", description=__doc__, epilog=EXAMPLE,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model", help="path of the .onnx model")
    p.add_argument("--provider", action="append", metavar="NAME",
                   help="dml, cuda, webgpu, cpu or ONNX Runtime's full name; repeat for a priority list (default: best available)")
    p.add_argument("--input", action="append", default=[], metavar="NAME=FILE.npy", help="an input value from a .npy file")
    p.add_argument("--random-inputs", action="store_true", help="random values for inputs not given with --input")
    p.add_argument("--output-dir", type=Path, help="save every output as NAME.npy in this folder")
    p.add_argument("--json", action="store_true", help="print providers and outputs as JSON")
    p.add_argument("--check-indices", action="store_true",
                   help="guard every scatter against out-of-range indices: runs the model converted with "
                        "strategy lower and an index check (a few extra ops over the indices), so a bad index "
                        "fails the run loudly instead of writing to the wrong element")
    p.set_defaults(func=run)


def run(args) -> int:
    import onnxruntime as ort

    from ..feeds import build_feeds, parse_input_args
    from ..session import InferenceSession

    files = parse_input_args(args.input)
    if args.output_dir is not None and not args.output_dir.is_dir():
        raise UserError(f"{args.output_dir}: the output folder does not exist")
    model = args.model
    if args.check_indices:
        model = _guarded(model, args.provider)
    so = ort.SessionOptions()
    so.log_severity_level = 4  # ORT's own error log would be a second stderr line; its exception says it all
    session = InferenceSession(model, providers=args.provider, sess_options=so)
    feeds = build_feeds(session, files, args.random_inputs)
    try:
        outputs = session.run(None, feeds)
    except (ort.capi.onnxruntime_pybind11_state.Fail, ort.capi.onnxruntime_pybind11_state.InvalidArgument,
            ort.capi.onnxruntime_pybind11_state.RuntimeException) as exc:
        first = str(exc).splitlines()[0]
        # the lowered scatter's run-time guard (lowering/scatter.py), or, on the CPU EP, its
        # position table's Gather, which ORT checks itself and which may run first
        if "/IndexOrSizeOutOfRange" in first or (args.check_indices and "out of data bounds" in first):
            first = f"a scatter index is out of range (the --check-indices guard stopped the run): {first}"
        raise UserError(f"{args.model}: the run failed: {first}") from None
    names = [o.name for o in session.get_outputs()]
    if args.output_dir is not None:
        for name, value in zip(names, outputs):
            np.save(args.output_dir / f"{_safe(name)}.npy", value)
    if args.json:
        print(json.dumps({
            "providers": session.get_providers(),
            "outputs": {n: {"dtype": str(v.dtype), "shape": list(v.shape), "values": v.tolist()} for n, v in zip(names, outputs)},
        }))
    else:
        print(f"providers: {', '.join(session.get_providers())}")
        for name, value in zip(names, outputs):
            print(f"{name}: {value.dtype} {list(value.shape)}")
            print(np.array2string(value, threshold=20, edgeitems=3, precision=5))
    return 0


def _guarded(model_path, providers):
    """The model with every scatter lowered behind an index check, for the first provider's target."""
    from ..conversion import convert
    from ..session import CPU, CUDA, DML, WEBGPU, resolve_providers

    first = resolve_providers(providers)[0]
    name = first[0] if isinstance(first, tuple) else first
    target = {DML: "dml", CUDA: "cuda", WEBGPU: "webgpu", CPU: "cpu"}.get(name, "cpu")
    return convert(model_path, target, strategy="lower", check_indices=True).model


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)
