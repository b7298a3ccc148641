"""`ort-dml-ops run MODEL`: run a model (fallback ops included) on the chosen provider."""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import urllib.parse
from pathlib import Path

import numpy as np

from ..errors import UserError
from ..feeds import add_feed_arguments
from ..writes import Outputs, write_error

EXAMPLE = "example: ort-dml-ops run model.onnx --provider dml --input x=x.npy --output-dir out/"


def add_parser(sub) -> None:
    p = sub.add_parser(
        "run",
        help="run a model and print its outputs",
        description=__doc__,
        epilog=EXAMPLE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("model", help="path of the .onnx model")
    p.add_argument(
        "--provider",
        action="append",
        metavar="NAME",
        help="dml, cuda, webgpu, cpu or ONNX Runtime's full name; repeat for a priority list (default: best available)",
    )
    add_feed_arguments(p)
    p.add_argument(
        "--output-dir",
        type=Path,
        help="save every output as NAME.npy in this folder (NAME percent-encoded: 'a/b' -> a%%2Fb.npy)",
    )
    p.add_argument(
        "--json",
        action="store_true",
        help='print providers and outputs as JSON (NaN and ±inf as the strings "NaN", "Infinity", "-Infinity")',
    )
    p.add_argument(
        "--check-indices",
        action="store_true",
        help="guard every scatter against out-of-range indices: runs the model converted with "
        "strategy lower and an index check (a few extra ops over the indices), so a bad index "
        "fails the run loudly instead of writing to the wrong element; refused for a model "
        "with no scatter node left (an already-converted one)",
    )
    p.set_defaults(func=run)


def run(args) -> int:
    import onnxruntime as ort

    from ..feeds import build_feeds, parse_input_args
    from ..session import InferenceSession, resolve_providers

    files = parse_input_args(args.input)
    resolve_providers(
        args.provider
    )  # an unknown name is an error here, not a silent CPU run
    if args.output_dir is not None and not args.output_dir.is_dir():
        raise UserError(f"{args.output_dir}: the output folder does not exist")
    model = args.model
    if args.check_indices:
        model = _guarded(model, args.provider)
    so = ort.SessionOptions()
    so.log_severity_level = 4  # ORT's own error log would be a second stderr line; its exception says it all
    session = InferenceSession(model, providers=args.provider, sess_options=so)
    feeds = build_feeds(session, files, args.random_inputs)
    names = [o.name for o in session.get_outputs()]
    outputs = (
        _declare_outputs(args, files, names) if args.output_dir is not None else None
    )
    with outputs or contextlib.nullcontext():
        try:
            values = session.run(None, feeds)
        except (
            ort.capi.onnxruntime_pybind11_state.Fail,
            ort.capi.onnxruntime_pybind11_state.InvalidArgument,
            ort.capi.onnxruntime_pybind11_state.RuntimeException,
        ) as exc:
            first = str(exc).splitlines()[0]
            # the lowered scatter's run-time guard (converter/rules/scatter.py), or, on the CPU EP, its
            # position table's gather, which ORT checks itself and which may run first: Gather
            # (ScatterND's columns) or GatherElements (`Emitter.take`)
            if "/IndexOrSizeOutOfRange" in first or (
                args.check_indices
                and (
                    "out of data bounds" in first
                    or "Out of range value in index tensor" in first
                )
            ):
                first = (
                    "a scatter index is out of range, or its updates do not match its indices "
                    f"(the scatter's guard stopped the run): {first}"
                )
            raise UserError(f"{args.model}: the run failed: {first}") from None
        if outputs is not None:
            for name, value in zip(names, values):
                target = args.output_dir / output_file_name(name)
                _save_npy(outputs.temp(target), target, value)
            outputs.commit()
    if args.json:
        print(
            json.dumps(
                {
                    "providers": session.get_providers(),
                    "outputs": {
                        n: {
                            "dtype": str(v.dtype),
                            "shape": list(v.shape),
                            "values": json_values(v),
                        }
                        for n, v in zip(names, values)
                    },
                },
                allow_nan=False,
            )
        )
    else:
        print(f"providers: {', '.join(session.get_providers())}")
        for name, value in zip(names, values):
            print(f"{name}: {value.dtype} {list(value.shape)}")
            print(np.array2string(value, threshold=20, edgeitems=3, precision=5))
    return 0


def _declare_outputs(args, files: dict, names: list[str]):
    """Every NAME.npy target, checked against the model, its external data and the --input files."""
    from ..modelio import external_data_files, load_model

    outputs = Outputs()
    outputs.protect(args.model, "the input model")
    for f in external_data_files(
        load_model(args.model, load_external_data=False), Path(args.model).parent
    ):
        outputs.protect(f, "the input model's external data")
    for name, path in files.items():
        outputs.protect(path, f"the --input file of {name!r}")
    for name in names:
        outputs.add(args.output_dir / output_file_name(name), f"output {name!r}")
    return outputs


class _Writer:
    """A plain `write` target: numpy then writes through Python's file object, whose errors
    name the cause (a full disk is ENOSPC), instead of `ndarray.tofile`'s short-write message."""

    def __init__(self, f):
        self.write = f.write


def _save_npy(tmp: str, target: Path, value: np.ndarray) -> None:
    value = np.asarray(value)
    if value.dtype == object and all(isinstance(v, str) for v in value.reshape(-1)):
        value = value.astype(
            str
        )  # ONNX strings: stored as numpy unicode (no pickle needed)
    try:
        with open(tmp, "wb") as f:
            np.lib.format.write_array(_Writer(f), np.asarray(value), allow_pickle=False)
    except OSError as exc:
        raise write_error(target, "output", exc) from None
    except (
        ValueError
    ) as exc:  # e.g. an object (string) array, which .npy stores only pickled
        raise UserError(f"{target}: cannot save this output as .npy ({exc})") from None


def output_file_name(name: str) -> str:
    """`NAME.npy`, NAME percent-encoded (UTF-8): every character but letters, digits and `_.-~`
    becomes %XX, so distinct names give distinct files (`a/b` -> `a%2Fb.npy`, `a_b` -> `a_b.npy`)
    and no name can leave the folder."""
    return urllib.parse.quote(name, safe="") + ".npy"


def json_values(value: np.ndarray):
    """The values as JSON-safe Python lists: NaN, Infinity and -Infinity (which JSON has no
    numbers for) become the strings "NaN", "Infinity" and "-Infinity"."""
    if value.dtype.kind in "fc" and not np.all(np.isfinite(value)):
        flat = [
            v
            if math.isfinite(v)
            else ("NaN" if math.isnan(v) else ("Infinity" if v > 0 else "-Infinity"))
            for v in value.astype(np.float64).reshape(-1).tolist()
        ]
        return np.array(flat, dtype=object).reshape(value.shape).tolist()
    return value.tolist()


def _guarded(model_path, providers):
    """The model with every scatter lowered behind an index check, for the first provider's target.

    A model with no scatter node left to guard is refused: after `convert`, a scatter is a
    lowered graph whose indices nothing checks any more, so the flag would guard nothing
    (guard the original instead, or `convert --check-indices`).
    """
    from ..conversion import convert
    from ..session import CPU, CUDA, DML, WEBGPU, resolve_providers

    first = resolve_providers(providers)[0]
    name = first[0] if isinstance(first, tuple) else first
    target = {DML: "dml", CUDA: "cuda", WEBGPU: "webgpu", CPU: "cpu"}.get(name, "cpu")
    result = convert(model_path, target, strategy="lower", check_indices=True)
    if not any(n.op_type in SCATTER_OPS for n in result.report.nodes):
        raise UserError(
            f"{model_path}: --check-indices: the model has no ScatterElements, ScatterND or Scatter node "
            "to guard (a converted model's scatters are already lowered, and guarded unless it was "
            "converted with --no-check-indices); run the original model with --check-indices"
        )
    return result.model


SCATTER_OPS = ("ScatterElements", "ScatterND", "Scatter")
