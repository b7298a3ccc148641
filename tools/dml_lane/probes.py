"""The lane's self-test: the former emulator failures, DML EP vs CPU EP of the same build, exact.

Run by setup.sh under the lane (Windows CPython in Wine): `$DML_LANE/run.sh probes.py`.
Each probe is one minimal model that failed under Wine 8's vkd3d 1.6 but runs on real DirectML.
Each runs in its own guest process (a crash fails that probe only). The DML session has graph
fusion on (ORT's default) and `session.disable_cpu_ep_fallback=1`, so it fails unless every node
is on the DML EP; the result must equal the CPU EP's in dtype, shape and every bit.
Exit 0 when all probes match. Adapted from the reference shared/dml-lane/probe_emulator_bugs.py.
"""

import subprocess
import sys
import time

import numpy as np
import onnx
import onnx.helper as oh
import onnxruntime as ort

T = onnx.TensorProto


def _model(nodes, inputs, outputs, inits=()):
    g = oh.make_graph(
        nodes,
        "probe",
        [oh.make_tensor_value_info(*i) for i in inputs],
        [oh.make_tensor_value_info(*o) for o in outputs],
        list(inits),
    )
    m = oh.make_model(g, opset_imports=[oh.make_opsetid("", 17)])
    m.ir_version = 8
    return m.SerializeToString()


def _unary(op, x, out_type, **attrs):
    e = oh.np_dtype_to_tensor_dtype(x.dtype)
    return _model(
        [oh.make_node(op, ["x"], ["y"], name="n", **attrs)],
        [("x", e, list(x.shape))],
        [("y", out_type, list(x.shape))],
    ), {"x": x}


def _binary(op, a, b):
    e = oh.np_dtype_to_tensor_dtype(a.dtype)
    names = ["a", "b"] if b is not None else ["a", "a"]
    ins = [("a", e, list(a.shape))] + (
        [("b", e, list(b.shape))] if b is not None else []
    )
    feeds = {"a": a} if b is None else {"a": a, "b": b}
    return _model(
        [oh.make_node(op, names, ["y"], name="n")], ins, [("y", e, list(a.shape))]
    ), feeds


def probes():
    """[(title, serialized model, feeds)], deterministic."""
    rng = np.random.default_rng(0)
    relus = [
        oh.make_node(
            "Relu",
            ["x" if i == 0 else f"t{i}"],
            ["y" if i == 4 else f"t{i + 1}"],
            name=f"relu{i}",
        )
        for i in range(5)
    ]
    x15 = rng.normal(size=[15]).astype(np.float32)
    a = rng.integers(-3_000_000, 3_000_000, [3, 7]).astype(np.int64)
    b = rng.integers(-3_000_000, 3_000_000, [3, 7]).astype(
        np.int64
    )  # products beyond 32 bits
    xf = (rng.normal(size=[3, 7]) * 1e3).astype(np.float32)
    xi = rng.integers(-(1 << 40), 1 << 40, [3, 257]).astype(np.int64)
    cumsum = _model(
        [oh.make_node("CumSum", ["x", "axis"], ["y"], name="n")],
        [("x", T.INT64, [3, 257])],
        [("y", T.INT64, [3, 257])],
        [oh.make_tensor("axis", T.INT64, [], [1])],
    )
    return [
        (
            "fused graph: 5 chained Relu float32[15] (Wine 8: the process dies at run)",
            _model(relus, [("x", T.FLOAT, [15])], [("y", T.FLOAT, [15])]),
            {"x": x15},
        ),
        (
            "Mul int64[3,7], products beyond 32 bits (Wine 8: 80070057)",
            *_binary("Mul", a, b),
        ),
        (
            "Cast float32 -> int64 [3,7] (Wine 8: 80070057)",
            *_unary("Cast", xf, T.INT64, to=T.INT64),
        ),
        (
            "CumSum int64[3,257] axis 1, values ~2^40 (Wine 8: 80070057)",
            cumsum,
            {"x": xi},
        ),
        (
            "vec4: Mul(x, x) float32[2,8] (Wine 8: 80070057)",
            *_binary("Mul", rng.normal(size=[2, 8]).astype(np.float32), None),
        ),
        (
            "Cast int64 -> float32 [3,7] (Wine 8: 80070057)",
            *_unary("Cast", a, T.FLOAT, to=T.FLOAT),
        ),
        (
            "Cast float64 -> float32 [3,7] (Wine 8: 80070057)",
            *_unary("Cast", rng.normal(size=[3, 7]), T.FLOAT, to=T.FLOAT),
        ),
        (
            "vec4: Add(x, x) float32[8,1024] (Wine 8: 80070057)",
            *_binary("Add", rng.normal(size=[8, 1024]).astype(np.float32), None),
        ),
    ]


def _run(model, feeds, dml):
    so = ort.SessionOptions()
    so.enable_mem_pattern = False
    so.log_severity_level = 3
    if dml:
        so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
    providers = (
        [("DmlExecutionProvider", {"device_id": "0"})]
        if dml
        else ["CPUExecutionProvider"]
    )
    sess = ort.InferenceSession(model, so, providers=providers)
    if dml and sess.get_providers()[0] != "DmlExecutionProvider":
        raise RuntimeError(
            f"the session did not get the DML EP first: {sess.get_providers()}"
        )
    return sess.run(None, feeds)[0]


def one(index: int) -> None:
    _, model, feeds = probes()[index]
    want = _run(model, feeds, dml=False)
    try:
        got = _run(model, feeds, dml=True)
    except Exception as exc:  # noqa: BLE001 - the verdict is the message
        print(f"RESULT|FAIL: {str(exc).strip().splitlines()[0][:200]}", flush=True)
        return
    same = (
        got.dtype == want.dtype
        and got.shape == want.shape
        and np.array_equal(got, want)
    )
    print(
        "RESULT|exact match"
        if same
        else f"RESULT|MISMATCH: {got.ravel()[:4]} vs {want.ravel()[:4]}",
        flush=True,
    )


def main() -> int:
    print(
        f"onnxruntime {ort.__version__}, providers {ort.get_available_providers()}",
        flush=True,
    )
    titles = [p[0] for p in probes()]
    failed = 0
    for i, title in enumerate(titles):
        t0 = time.perf_counter()
        r = subprocess.run(
            [sys.executable, __file__, "--one", str(i)],
            check=False,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        lines = [
            ln
            for ln in r.stdout.decode("utf-8", "replace").replace("\0", "").splitlines()
            if ln.startswith("RESULT|")
        ]
        verdict = (
            lines[-1].split("|", 1)[1]
            if lines
            else f"FAIL: the process died (rc={r.returncode:#x})"
        )
        failed += verdict != "exact match"
        print(
            f"PROBE | {title} | {verdict} | {time.perf_counter() - t0:.1f}s", flush=True
        )
    print(
        f"PROBES: {len(titles) - failed}/{len(titles)} exact matches (DML EP vs CPU EP, graph fusion on)",
        flush=True,
    )
    return 1 if failed else 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--one":
        one(int(sys.argv[2]))
        sys.exit(0)
    sys.exit(main())
