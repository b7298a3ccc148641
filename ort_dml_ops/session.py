"""`InferenceSession`: a real onnxruntime.InferenceSession with the fallback ops registered.

`providers=None` picks the best EP this onnxruntime build has: DirectML, then CUDA, then CPU.
DirectML is always asked for with a `device_id`: by its plain name ORT silently falls back to
the CPU where dxcore.dll is missing. A requested provider that did not become active is warned
about, not hidden.

WebGPU is a plugin EP (the `webgpu` extra, onnxruntime-ep-webgpu): it is not in ORT's
`providers` list at all. Asking for "WebGpuExecutionProvider" registers the plugin library once
per process (`onnxruntime.register_execution_provider_library`), takes its devices from
`onnxruntime.get_ep_devices()` and adds them with `SessionOptions.add_provider_for_devices` —
ORT's plugin-EP API (onnxruntime/python/onnxruntime_pybind_state.cc). ORT would otherwise run
everything on the CPU without a word when no adapter exists; here that is an error.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import re
import signal
import threading
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import onnx
import onnxruntime as ort
from onnxruntime.capi.onnxruntime_pybind11_state import (
    EPFail,
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
WEBGPU = "WebGpuExecutionProvider"
#: Short names accepted wherever a provider is named (CLI `--provider`, `providers=`).
SHORT_NAMES = {"dml": DML, "directml": DML, "cuda": CUDA, "cpu": CPU, "webgpu": WEBGPU}
#: the registration name of the plugin library (any string; one registration per process)
WEBGPU_LIBRARY = "webgpu"
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
        name, options = p if isinstance(p, tuple) else (p, None)
        name = SHORT_NAMES.get(str(name).lower(), name)
        known = set(ort.get_all_providers()) | set(
            ort.get_available_providers()
        )  # the latter: plugin EPs
        if name not in known:  # a typo would otherwise run on the CPU with a warning
            raise UserError(
                f"unknown execution provider {name!r}: use dml, cuda, cpu or an ONNX Runtime name "
                "such as DmlExecutionProvider (onnxruntime.get_all_providers() lists them)"
            )
        if options is None and name in _DEFAULT_OPTIONS:
            options = dict(_DEFAULT_OPTIONS[name])
        resolved.append((name, options) if options is not None else name)
    return resolved


def _provider_name(p) -> str:
    return p[0] if isinstance(p, tuple) else p


def InferenceSession(
    model, providers=None, sess_options: ort.SessionOptions | None = None, **kwargs
) -> ort.InferenceSession:
    """Create an onnxruntime.InferenceSession for `model` (a path, bytes or onnx.ModelProto).

    Models using DOMAIN ops run through the Python fallback; the caller's model is untouched.
    """
    providers = resolve_providers(providers)
    so = sess_options if sess_options is not None else ort.SessionOptions()
    plugin = [p for p in providers if _provider_name(p) == WEBGPU]
    if plugin:
        _add_webgpu(so, plugin[0], providers)
        # ORT ignores the devices added to the options when `providers` is given as well
        providers = None
        # ORT's Python layer would print the EP's failure and retry on the CPU: a silent CPU run
        kwargs.setdefault("enable_fallback", 0)
    if providers is not None and DML in [_provider_name(p) for p in providers]:
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
        if providers is None:
            session = session_class(source, so, **kwargs)
        else:
            session = session_class(source, so, providers=providers, **kwargs)
    except (EPFail, RuntimeError) as exc:
        if not plugin:
            raise
        raise UserError(f"the WebGPU EP cannot start: {_adapter_reason(exc)}") from None
    except (
        Fail,
        InvalidArgument,
        InvalidGraph,
        InvalidProtobuf,
        NoSuchFile,
        NotImplemented_,
    ) as exc:
        what = (
            os.fspath(model) if isinstance(model, (str, os.PathLike)) else "the model"
        )
        raise UserError(
            f"{what}: ONNX Runtime cannot load the model ({_ort_reason(exc)})"
        ) from None
    if tag is not None:
        session._fallback_tag = tag

    active = session.get_providers()
    wanted = [WEBGPU] if plugin else [_provider_name(p) for p in providers]
    if (
        plugin and WEBGPU not in active
    ):  # pragma: no cover - ORT took the devices but not the EP
        raise UserError(
            f"the WebGPU EP did not become active (running on {', '.join(active)})"
        )
    missing = [p for p in wanted if p not in active]
    if missing:
        warnings.warn(
            f"requested execution provider(s) not active: {', '.join(missing)}; running on {', '.join(active)}",
            ProviderWarning,
            stacklevel=2,
        )
    return session


def webgpu_devices() -> list:
    """The OrtEpDevices of the WebGPU plugin EP (registering the plugin library once).

    A UserError, never an empty list: without the `webgpu` extra, or with no WebGPU adapter (no
    GPU, no Vulkan driver, or a CPU-only adapter without ORT_WEBGPU_EP_ALLOW_SOFTWARE_ADAPTER=1).
    """
    try:
        import onnxruntime_ep_webgpu
    except ImportError:
        raise UserError(
            "the WebGPU EP is not installed: pip install 'ort-dml-ops[webgpu]' "
            "(onnxruntime-ep-webgpu)"
        ) from None
    if not any(d.ep_name == WEBGPU for d in ort.get_ep_devices()):
        try:
            ort.register_execution_provider_library(
                WEBGPU_LIBRARY, onnxruntime_ep_webgpu.get_library_path()
            )
        except Exception as exc:  # noqa: BLE001 - ORT raises Fail / RuntimeError variants
            raise UserError(
                f"the WebGPU EP library cannot be loaded ({_ort_reason(exc)})"
            ) from None
    devices = [d for d in ort.get_ep_devices() if d.ep_name == WEBGPU]
    if not devices:
        hint = (
            ""
            if os.environ.get("ORT_WEBGPU_EP_ALLOW_SOFTWARE_ADAPTER") == "1"
            else "; a CPU Vulkan driver (lavapipe) is used only with ORT_WEBGPU_EP_ALLOW_SOFTWARE_ADAPTER=1 "
            "(make webgpu-lane sets it up)"
        )
        raise UserError(
            f"no WebGPU adapter: the WebGPU EP found no device (no GPU or no Vulkan driver){hint}"
        )
    return devices


def _adapter_reason(exc: Exception) -> str:
    """The plugin's own words ("Failed to get a WebGPU adapter: No supported adapters"), one line."""
    text = " ".join(str(exc).split())
    tail = (
        text.rsplit(" was false. ", 1)[-1]
        if " was false. " in text
        else _ort_reason(exc)
    )
    return f"no WebGPU adapter ({tail})" if "adapter" in tail.lower() else tail


def _add_webgpu(so: ort.SessionOptions, requested, providers: list) -> None:
    others = [
        _provider_name(p) for p in providers if _provider_name(p) not in (WEBGPU, CPU)
    ]
    if others:
        raise UserError(
            f"WebGpuExecutionProvider cannot be combined with {', '.join(others)} in one session "
            "(ORT takes a plugin EP's devices or a providers list, not both)"
        )
    options = requested[1] if isinstance(requested, tuple) else None
    so.add_provider_for_devices(
        webgpu_devices(), {str(k): str(v) for k, v in (options or {}).items()}
    )


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

    def run_with_ort_values(
        self, output_names, input_dict_ort_values, run_options=None
    ):
        return self._guarded(
            super().run_with_ort_values,
            output_names,
            input_dict_ort_values,
            run_options,
        )

    def run_with_iobinding(self, iobinding, run_options=None):
        return self._guarded(super().run_with_iobinding, iobinding, run_options)

    def run_async(
        self, output_names, input_feed, callback, user_data, run_options=None
    ):
        tag = self._fallback_tag

        def with_kernel_errors(outputs, data, error):
            # ORT runs the model and then this callback on one thread of its pool: the kernels'
            # errors are recorded under that thread
            errors = fallback.take_errors(tag)
            if errors and not error:
                error, outputs = _error_text(errors), []
            callback(outputs, data, error)

        return super().run_async(
            output_names, input_feed, with_kernel_errors, user_data, run_options
        )

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
    text = "; ".join(
        dict.fromkeys(
            str(e) if isinstance(e, str) else f"interrupted ({type(e).__name__})"
            for e in errors
        )
    )
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
    held: dict[int, Callable[[int, Any], Any]] = {}
    for sig in (signal.SIGINT, signal.SIGTERM):
        handler = signal.getsignal(sig)
        if callable(handler):
            held[sig] = handler
            signal.signal(sig, lambda signum, frame: pending.append(signum))
    try:
        yield
    finally:
        _put_back(held)
        for signum in dict.fromkeys(pending):
            held[signum](signum, None)


def _put_back(held: dict[int, Callable[[int, Any], Any]]) -> None:
    """Reinstall the held handlers. A signal that arrives once the first is back runs it (a
    KeyboardInterrupt, say) before the next one is back, which would stay deferring into a list
    nobody reads: a later SIGTERM would be lost. The rest are reinstalled on the way out of such
    an interrupt. (Blocking the signals meanwhile would not do: pthread_sigmask masks only the
    calling thread, and ORT's pool threads take a process-directed signal for it.)"""
    todo = list(held.items())
    try:
        while todo:
            signal.signal(*todo[0])
            todo.pop(0)
    finally:
        for sig, handler in todo:
            signal.signal(sig, handler)


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
