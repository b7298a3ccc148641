"""`InferenceSession`: a real onnxruntime.InferenceSession with the fallback ops registered.

`providers=None` picks the best EP this onnxruntime build has: DirectML, then CUDA, then CPU.
DirectML is always asked for with a `device_id`: by its plain name ORT silently falls back to
the CPU where dxcore.dll is missing. A requested provider that did not become active is warned
about, not hidden.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import re
import signal
import threading
import warnings
from pathlib import Path

import onnx
import onnxruntime as ort
from onnxruntime.capi.onnxruntime_pybind11_state import (
    Fail,
    InvalidArgument,
    InvalidGraph,
    InvalidProtobuf,
    NoSuchFile,
)
from onnxruntime.capi.onnxruntime_pybind11_state import (
    NotImplemented as NotImplemented_,
)

from . import fallback
from .errors import UserError
from .modelio import fix_ir_version, load_model

DML, CUDA, CPU = "DmlExecutionProvider", "CUDAExecutionProvider", "CPUExecutionProvider"
#: Short names accepted wherever a provider is named (CLI `--provider`, `providers=`).
SHORT_NAMES = {"dml": DML, "directml": DML, "cuda": CUDA, "cpu": CPU}
_DEFAULT_OPTIONS = {DML: {"device_id": "0"}}


class ProviderWarning(UserWarning):
    """A requested execution provider is not active in the session."""


def resolve_providers(providers=None) -> list:
    """ORT's `providers` list: full names, with the options DirectML needs; short names allowed."""
    if providers is None:
        available = ort.get_available_providers()
        chosen = [p for p in (DML, CUDA) if p in available][:1]
        providers = [*chosen, CPU]
    resolved = []
    for p in providers:
        name, options = (p if isinstance(p, tuple) else (p, None))
        name = SHORT_NAMES.get(str(name).lower(), name)
        known = set(ort.get_all_providers()) | set(ort.get_available_providers())  # the latter: plugin EPs
        if name not in known:  # a typo would otherwise run on the CPU with a warning
            raise UserError(f"unknown execution provider {name!r}: use dml, cuda, cpu or an ONNX Runtime name "
                            "such as DmlExecutionProvider (onnxruntime.get_all_providers() lists them)")
        if options is None and name in _DEFAULT_OPTIONS:
            options = dict(_DEFAULT_OPTIONS[name])
        resolved.append((name, options) if options is not None else name)
    return resolved


def _provider_name(p) -> str:
    return p[0] if isinstance(p, tuple) else p


def InferenceSession(model, providers=None, sess_options: ort.SessionOptions | None = None, **kwargs) -> ort.InferenceSession:
    """Create an onnxruntime.InferenceSession for `model` (a path, bytes or onnx.ModelProto).

    Models using DOMAIN ops run through the Python fallback; the caller's model is untouched.
    """
    providers = resolve_providers(providers)
    so = sess_options if sess_options is not None else ort.SessionOptions()
    if DML in [_provider_name(p) for p in providers]:
        so.enable_mem_pattern = False  # required by the DirectML EP
        so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL

    source = _session_source(model)
    if isinstance(model, (str, os.PathLike)) and isinstance(source, onnx.ModelProto):
        # ORT reads the external data of a model given as bytes from this folder
        so.add_session_config_entry(_EXTERNAL_FOLDER, str(Path(model).resolve().parent))
    session_class, tag = ort.InferenceSession, None
    if isinstance(source, onnx.ModelProto) and fallback.uses_fallback(source):
        _register_library_once(so)
        # the kernels' errors are handed to the thread that called run(): keep nodes on it
        so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        tag = f"s{next(_TAGS)}"
        source = fallback.prepare(source, session_tag=tag)
        session_class = FallbackSession
    if isinstance(source, onnx.ModelProto):
        source = fix_ir_version(source).SerializeToString()
    try:
        session = session_class(source, so, providers=providers, **kwargs)
    except (Fail, InvalidArgument, InvalidGraph, InvalidProtobuf, NoSuchFile, NotImplemented_) as exc:
        what = os.fspath(model) if isinstance(model, (str, os.PathLike)) else "the model"
        raise UserError(f"{what}: ONNX Runtime cannot load the model ({_ort_reason(exc)})") from None
    if tag is not None:
        session._fallback_tag = tag

    active = session.get_providers()
    missing = [_provider_name(p) for p in providers if _provider_name(p) not in active]
    if missing:
        warnings.warn(
            f"requested execution provider(s) not active: {', '.join(missing)}; running on {', '.join(active)}",
            ProviderWarning,
            stacklevel=2,
        )
    return session


_TAGS = itertools.count(1)
_EXTERNAL_FOLDER = "session.model_external_initializers_file_folder_path"


def _ort_reason(exc: Exception) -> str:
    """ORT's message, one line, without its '[ONNXRuntimeError] : n : CODE : Load model from P failed:' prefix."""
    text = " ".join(str(exc).split())
    text = re.sub(r"^\[ONNXRuntimeError\] : \d+ : \w+ : ", "", text)
    text = re.sub(r"^Load model from .*? failed:", "", text).strip()
    return text


class FallbackSession(ort.InferenceSession):
    """An onnxruntime.InferenceSession whose entry points raise the fallback kernels' errors.

    The kernels cannot raise inside ONNX Runtime (the extensions library would abort the
    process); they record the error (registry.py) and the entry point that ran them raises it,
    as ONNX Runtime's own InvalidArgument: `run`, `run_with_ort_values`, `run_with_iobinding`,
    and `run_async`, whose callback receives it as its error string. Errors are dropped at the
    start of every call, so none reaches a later run. While a run is in progress on the main
    thread, SIGINT/SIGTERM handled by Python are deferred to its end (a handler raising
    inside a kernel would abort the process): Ctrl-C is a KeyboardInterrupt in the caller.
    """

    _fallback_tag = ""

    def run(self, output_names, input_feed, run_options=None):
        return self._guarded(super().run, output_names, input_feed, run_options)

    def run_with_ort_values(self, output_names, input_dict_ort_values, run_options=None):
        return self._guarded(super().run_with_ort_values, output_names, input_dict_ort_values, run_options)

    def run_with_iobinding(self, iobinding, run_options=None):
        return self._guarded(super().run_with_iobinding, iobinding, run_options)

    def run_async(self, output_names, input_feed, callback, user_data, run_options=None):
        tag = self._fallback_tag

        def with_kernel_errors(outputs, data, error):
            # ORT runs the model and then this callback on one thread of its pool: the kernels'
            # errors are recorded under that thread
            errors = fallback.take_errors(tag)
            if errors and not error:
                error, outputs = _error_text(errors), []
            callback(outputs, data, error)

        return super().run_async(output_names, input_feed, with_kernel_errors, user_data, run_options)

    def _guarded(self, call, *args):
        tag = self._fallback_tag
        fallback.take_errors(tag)  # drop leftovers of an interrupted run
        with _signals_deferred():
            try:
                result = call(*args)
            finally:
                errors = fallback.take_errors(tag)
        if errors:
            interrupt = next((e for e in errors if isinstance(e, BaseException)), None)
            if interrupt is not None:
                raise interrupt
            raise InvalidArgument(_error_text(errors))
        return result


def _error_text(errors: list) -> str:
    text = "; ".join(dict.fromkeys(str(e) if isinstance(e, str) else f"interrupted ({type(e).__name__})" for e in errors))
    return f"[ONNXRuntimeError] : 2 : INVALID_ARGUMENT : {text}"


@contextlib.contextmanager
def _signals_deferred():
    """Hold Python-level SIGINT/SIGTERM handlers until the block ends, then call them.

    A Python handler runs between bytecodes of whatever Python code the main thread executes
    — inside a fallback kernel too, where its exception would abort the process.
    """
    if threading.current_thread() is not threading.main_thread():
        yield  # handlers run on the main thread only: nothing to defer here
        return
    pending: list[int] = []
    held = {}
    for sig in (signal.SIGINT, signal.SIGTERM):
        handler = signal.getsignal(sig)
        if callable(handler):
            held[sig] = handler
            signal.signal(sig, lambda signum, frame: pending.append(signum))
    try:
        yield
    finally:
        for sig, handler in held.items():
            signal.signal(sig, handler)
        for signum in dict.fromkeys(pending):
            held[signum](signum, None)


def _session_source(model):
    """A path ORT can open itself (keeps external data working), or a ModelProto to inspect."""
    if isinstance(model, (str, os.PathLike)):
        # External data stays in its files (a model may be over 2 GB): the rewritten copy keeps
        # the references, and ORT resolves them against the model's folder (see InferenceSession).
        proto = load_model(model, load_external_data=False)
        if not fallback.uses_fallback(proto):
            return os.fspath(model)
        return proto
    return load_model(model)


#: A session-config entry marks SessionOptions that already hold the fallback library (ORT
#: refuses the same library twice, and pybind objects take no attributes of our own).
_MARK = "ort_dml_ops.fallback_library"


def _register_library_once(so: ort.SessionOptions) -> None:
    path = fallback.register()
    try:
        if so.get_session_config_entry(_MARK) == path:
            return
    except Exception:  # noqa: BLE001 - ORT raises when the key is absent
        pass
    so.register_custom_ops_library(path)
    so.add_session_config_entry(_MARK, path)
