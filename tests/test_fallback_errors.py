"""A fallback kernel's error is raised by the run that caused it, on every entry point, and
never by another run; Ctrl-C inside a kernel is a KeyboardInterrupt in the caller, not SIGABRT.

The expected error is ONNX Runtime's own behaviour for the native op: its CPU
ScatterElements refuses an out-of-range index (checked here too, on the same feeds).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper
from onnxruntime.capi.onnxruntime_pybind11_state import InvalidArgument

import ort_dml_ops
from ort_dml_ops import DOMAIN
from ort_dml_ops.session import _signals_deferred

CPU = ["CPUExecutionProvider"]


def scatter_model(domain: str):
    node = helper.make_node(
        "ScatterElements", ["d", "i", "u"], ["y"], domain=domain, axis=0
    )
    g = helper.make_graph(
        [node],
        "g",
        [
            helper.make_tensor_value_info("d", TensorProto.FLOAT, [4]),
            helper.make_tensor_value_info("i", TensorProto.INT64, [2]),
            helper.make_tensor_value_info("u", TensorProto.FLOAT, [2]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])],
    )
    imports = [helper.make_opsetid("", 18)] + (
        [helper.make_opsetid(DOMAIN, 1)] if domain else []
    )
    m = helper.make_model(g, opset_imports=imports)
    m.ir_version = 10
    return m


D = np.zeros(4, np.float32)
U = np.array([1, 2], np.float32)
GOOD = {"d": D, "i": np.array([0, 3]), "u": U}
BAD = {"d": D, "i": np.array([0, 9]), "u": U}


def expected_good():
    native = ort.InferenceSession(scatter_model("").SerializeToString(), providers=CPU)
    with pytest.raises(
        InvalidArgument
    ):  # the reference: ORT's kernel refuses the bad index
        native.run(None, BAD)
    return native.run(None, GOOD)[0]


@pytest.fixture(scope="module")
def session():
    return ort_dml_ops.InferenceSession(scatter_model(DOMAIN), providers=CPU)


def bind(session, feeds):
    binding = session.io_binding()
    for name, value in feeds.items():
        binding.bind_cpu_input(name, value)
    binding.bind_output("y")
    return binding


def test_run_with_iobinding_raises_its_own_error_and_not_the_next(session):
    want = expected_good()
    with pytest.raises(InvalidArgument, match="index 9 is out of range"):
        session.run_with_iobinding(bind(session, BAD))
    good = bind(session, GOOD)
    session.run_with_iobinding(good)  # must not raise the earlier error
    np.testing.assert_array_equal(good.copy_outputs_to_cpu()[0], want)
    np.testing.assert_array_equal(session.run(None, GOOD)[0], want)


def test_run_with_ort_values_raises_its_own_error_and_not_the_next(session):
    want = expected_good()

    def values(feeds):
        return {k: ort.OrtValue.ortvalue_from_numpy(v) for k, v in feeds.items()}

    with pytest.raises(InvalidArgument, match="index 9 is out of range"):
        session.run_with_ort_values(["y"], values(BAD))
    out = session.run_with_ort_values(["y"], values(GOOD))
    np.testing.assert_array_equal(out[0].numpy(), want)


def _run_async(session, feeds):
    done = threading.Event()
    got = {}

    def callback(outputs, user_data, error):
        got.update(outputs=outputs, user_data=user_data, error=error)
        done.set()

    session.run_async(["y"], feeds, callback, "token")
    assert done.wait(30)
    return got


def test_run_async_hands_the_error_to_its_callback(session):
    want = expected_good()
    bad = _run_async(session, BAD)
    assert "index 9 is out of range" in bad["error"], bad
    assert bad["user_data"] == "token"
    good = _run_async(session, GOOD)
    assert not good["error"], good
    np.testing.assert_array_equal(good["outputs"][0], want)
    np.testing.assert_array_equal(
        session.run(None, GOOD)[0], want
    )  # nothing leaked into a later run


def test_run_after_a_failed_iobinding_run_does_not_raise(session):
    with pytest.raises(InvalidArgument):
        session.run_with_iobinding(bind(session, BAD))
    np.testing.assert_array_equal(session.run(None, GOOD)[0], expected_good())


CTRL_C = """
import os, signal, sys, threading, time
# Python's own Ctrl-C handler, as in a terminal: a parent that ignores SIGINT (a background job
# of a non-interactive shell) passes SIG_IGN through exec, and the SIGINT below would be lost
signal.signal(signal.SIGINT, signal.default_int_handler)
import numpy as np
import onnx
from onnx import TensorProto, helper
import ort_dml_ops
from ort_dml_ops import DOMAIN
node = helper.make_node("CumProd", ["x", "ax"], ["y"], domain=DOMAIN)
g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, None]),
    helper.make_tensor_value_info("ax", TensorProto.INT64, [])], [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(DOMAIN, 1)])
m.ir_version = 10
s = ort_dml_ops.InferenceSession(m, providers=["CPUExecutionProvider"])
x = np.ones((4000, 2000), np.float32)
ax = np.array(0, np.int64)
threading.Timer(1.0, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
try:
    t = time.monotonic()
    while time.monotonic() - t < 60:
        s.run(None, {"x": x, "ax": ax})
    print("not interrupted")
except KeyboardInterrupt:
    print("KeyboardInterrupt")
    print(s.run(None, {"x": np.full((2, 2), 2, np.float32), "ax": ax})[0].tolist())
"""


def test_ctrl_c_inside_a_fallback_kernel_is_a_keyboard_interrupt():
    """A real SIGINT while the kernels run (most of each run is spent in them): the caller
    gets KeyboardInterrupt and the session still works; the process is not aborted."""
    out = subprocess.run(
        [sys.executable, "-c", CTRL_C],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert out.returncode == 0, (out.returncode, out.stderr[-2000:])
    assert out.stdout.split("\n")[:2] == [
        "KeyboardInterrupt",
        "[[2.0, 2.0], [4.0, 4.0]]",
    ], out.stdout


@pytest.mark.skipif(not hasattr(signal, "SIGTERM"), reason="needs SIGINT and SIGTERM")
def test_a_signal_while_the_handlers_are_put_back_leaves_none_deferred(monkeypatch):
    """A real SIGINT that lands after the run, once SIGINT's handler is back but before
    SIGTERM's is: the caller gets its KeyboardInterrupt, and SIGTERM still reaches its own
    handler (it was left deferring into a dropped list, so a later SIGTERM was lost)."""
    terms = []

    def on_int(signum, frame):
        raise KeyboardInterrupt

    def on_term(signum, frame):
        terms.append(signum)

    old_int = signal.signal(signal.SIGINT, on_int)
    old_term = signal.signal(signal.SIGTERM, on_term)
    install = signal.signal
    sent = []

    def install_then_interrupt(sig, handler):
        before = install(sig, handler)
        if sig == signal.SIGINT and handler is on_int and not sent:
            sent.append(sig)
            os.kill(os.getpid(), signal.SIGINT)  # Python runs on_int at its next check
        return before

    try:
        monkeypatch.setattr(signal, "signal", install_then_interrupt)
        with pytest.raises(KeyboardInterrupt), _signals_deferred():
            pass
        monkeypatch.undo()
        assert sent == [signal.SIGINT]
        assert signal.getsignal(signal.SIGINT) is on_int
        assert signal.getsignal(signal.SIGTERM) is on_term
        os.kill(os.getpid(), signal.SIGTERM)
        for _ in range(100):  # the handler runs between bytecodes of this thread
            if terms:
                break
        assert terms == [signal.SIGTERM]
    finally:
        signal.signal(signal.SIGINT, old_int)
        signal.signal(signal.SIGTERM, old_term)
