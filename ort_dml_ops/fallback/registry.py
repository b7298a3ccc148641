"""Register the fallback kernels with onnxruntime-extensions, once per process, with a fast path.

The library allows one dtype per op name and none for float16/bfloat16, so each kernel is
registered once per dtype under a private name, `<Op>_<dtype>` in KERNEL_DOMAIN; the session
rewrites its private copy of a model to those names (see rewrite.py).

Errors: onnxruntime-extensions lets a Python exception escape its C++ kernel, which
terminates the whole process (SIGABRT: pybind11::error_already_set through C++). So a kernel
never raises, not even KeyboardInterrupt: the hook records the error under the session's tag
(an attribute the rewrite adds) and the calling thread, returns input 0 unchanged so the run
can finish, and `FallbackSession` (session.py) raises it from the entry point that ran it.

Fast path: the library's stock hook returns every output as a Python list (`tolist()`),
40-75x slower than a native kernel on large tensors. Its C++ side accepts a numpy array as
well, so we install a hook that passes our kernels' arrays straight through and hands every
other PyOp in the process to the stock hook unchanged (string outputs keep working).
"""

from __future__ import annotations

import threading

import numpy as np
from onnxruntime_extensions import PyCustomOpDef, _ocos, get_library_path

from .._domain import DOMAIN
from . import kernels, types
from .types import KERNEL_DOMAIN, kernel_name

D = PyCustomOpDef
#: numpy dtype name -> extensions type code
_TYPE_CODE = {
    "float32": D.dt_float,
    "float64": D.dt_double,
    "int32": D.dt_int32,
    "int64": D.dt_int64,
    "uint32": D.dt_uint32,
    "uint64": D.dt_uint64,
    "int8": D.dt_int8,
    "int16": D.dt_int16,
    "uint8": D.dt_uint8,
    "uint16": D.dt_uint16,
    "bool": D.dt_bool,
    "string": D.dt_string,
}
#: the types each kernel family takes (types.py, which convert reads without this import)
SCAN_TYPES = {t: _TYPE_CODE[t] for t in types.SCAN_TYPES}
SCATTER_TYPES = {t: _TYPE_CODE[t] for t in types.SCATTER_TYPES}

_SCAN_ATTRS = {
    "exclusive": D.dt_int64,
    "reverse": D.dt_int64,
    "compute": D.dt_string,
    "session": D.dt_string,
}
_SCATTER_ATTRS = {
    "axis": D.dt_int64,
    "reduction": D.dt_string,
    "compute": D.dt_string,
    "session": D.dt_string,
}

# Process-wide state lives on the extensions module itself, so that two copies of this module
# (a reload, or an import under another name) still register each kernel exactly once.
_STATE_KEY = "_ort_dml_ops_fallback"
_lock = threading.Lock()


def _state() -> dict:
    state = getattr(_ocos, _STATE_KEY, None)
    if state is None:
        state = {"kernels": {}, "stock_hook": _ocos._on_pyop_invocation, "errors": {}}
        setattr(_ocos, _STATE_KEY, state)
    return state


def register() -> str:
    """Register every fallback kernel (idempotent) and return the custom-op library path."""
    with _lock:
        state = _state()
        if not state["kernels"]:
            for dtype, code in SCAN_TYPES.items():
                for op in ("CumSum", "CumProd"):
                    _add(
                        state,
                        op,
                        dtype,
                        [code, D.dt_int64],
                        code,
                        _SCAN_ATTRS,
                        kernels.scan_kernel(op),
                    )
            for dtype, code in SCATTER_TYPES.items():
                _add(
                    state,
                    "ScatterElements",
                    dtype,
                    [code, D.dt_int64, code],
                    code,
                    _SCATTER_ATTRS,
                    kernels.scatter_kernel,
                )
            D.install_hooker(_fast_invoke)
    return get_library_path()


def _add(state, op, dtype, inputs, output, attrs, body) -> None:
    opdef = _ocos.Opdef.create(
        body,
        op_type=f"{KERNEL_DOMAIN}::{kernel_name(op, dtype)}",
        inputs=inputs,
        outputs=[output],
        attrs=attrs,
    )
    state["kernels"][opdef._id] = (opdef, op, dtype)


def _fast_invoke(k_id, feed, attributes):
    state = _state()
    entry = state["kernels"].get(k_id)
    if entry is None:
        return state["stock_hook"](k_id, feed, attributes)
    opdef, op, dtype = entry
    session = ""
    try:
        attrs = opdef.cast_attributes(attributes)
        session = attrs.pop("session", "")
        result = opdef.body(*feed, **attrs)
    except Exception as exc:  # noqa: BLE001 - raising here would abort the process
        message = str(exc) if str(exc).startswith(op) else f"{op}: {exc}"
        _record(state, session, f"{DOMAIN}::{message}")
        result = feed[0]
    except BaseException as exc:  # noqa: BLE001 - KeyboardInterrupt & co.: re-raised by the run, not here (abort)
        _record(state, session, exc)
        result = feed[0]
    if dtype == "string":
        return k_id, result.shape, result.reshape(-1).tolist()
    return k_id, result.shape, np.ascontiguousarray(result)


def _record(state: dict, session: str, error) -> None:
    with _lock:
        # keyed by the calling thread too: a session shared by threads hands each caller its own errors
        # (ORT runs a sequential session's nodes on the thread that called run())
        state["errors"].setdefault((session, threading.get_ident()), []).append(error)


def take_errors(session: str) -> list:
    """Errors the kernels recorded for a session tag, in this thread, since the last call (and
    forget them): messages (str), or the BaseException (KeyboardInterrupt, ...) to re-raise."""
    with _lock:
        return _state()["errors"].pop((session, threading.get_ident()), [])
