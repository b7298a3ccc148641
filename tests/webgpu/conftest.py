"""WebGPU lane tests: ONNX Runtime's WebGPU plugin EP, for real, on whatever adapter is present.

Without a GPU that is Mesa's lavapipe set up by `make webgpu-lane`: its env.sh is read here
(VK_ICD_FILENAMES, ORT_WEBGPU_EP_ALLOW_SOFTWARE_ADAPTER) before the plugin is loaded, and the
lane's private libraries are preloaded (LD_LIBRARY_PATH cannot change inside a running
process). Tests marked `webgpu` are skipped, with the reason, when the plugin is not installed
or finds no adapter. Placement is always read from ORT's own assignment record.
"""

from __future__ import annotations

import ctypes
import glob
import os
import sys
from pathlib import Path

import pytest

# the recording corpus (tools/webgpu_lane/: cases, record) is not part of the package
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))

LANE = Path(
    os.environ.get(
        "WEBGPU_LANE", Path.home() / ".cache" / "ort-dml-ops" / "webgpu-lane"
    )
)


def _load_lane_env() -> None:
    env = LANE / "env.sh"
    if "VK_ICD_FILENAMES" in os.environ or not env.is_file():
        return
    for line in env.read_text().splitlines():
        if line.startswith("export ") and "=" in line:
            key, value = line[len("export ") :].split("=", 1)
            if key == "LD_LIBRARY_PATH":
                libdir = value.split("$")[0].rstrip(":")
                for lib in sorted(glob.glob(os.path.join(libdir, "libdrm*.so.*"))):
                    ctypes.CDLL(lib, mode=ctypes.RTLD_GLOBAL)
                continue
            os.environ.setdefault(key, value)


_load_lane_env()


def lane_status() -> tuple[bool, str]:
    """(True, adapter name) when the WebGPU EP has a device here; else (False, why)."""
    if os.environ.get("ORT_DML_OPS_NO_WEBGPU") == "1":
        return False, "ORT_DML_OPS_NO_WEBGPU=1"
    from ort_dml_ops.errors import UserError
    from ort_dml_ops.session import webgpu_devices

    try:
        webgpu_devices()
    except UserError as exc:
        return False, f"{exc} (run `make webgpu-lane`)"
    from ort_dml_ops.bench.webgpu import adapter_name

    return True, adapter_name()


@pytest.fixture(scope="session")
def webgpu_lane():
    ok, why = lane_status()
    if not ok:
        pytest.skip(f"WebGPU lane unavailable: {why}")
    return why


def placement(session) -> dict:
    """{node name: EP} from ORT's assignment record (session.record_ep_graph_assignment_info)."""
    return {
        n.name: sg.ep_name
        for sg in session.get_provider_graph_assignment_info()
        for n in sg.get_nodes()
    }


def webgpu_session(model, **provider_options):
    import onnxruntime as ort

    from ort_dml_ops.session import InferenceSession

    so = ort.SessionOptions()
    so.log_severity_level = 3
    so.add_session_config_entry("session.record_ep_graph_assignment_info", "1")
    return InferenceSession(
        model,
        providers=[("WebGpuExecutionProvider", provider_options)],
        sess_options=so,
    )
