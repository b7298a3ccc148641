"""Host-side client of the DML lane: find it, say whether it is ready, load its driver.

The DML lane (docs/dml-lane.md) runs the Windows build onnxruntime-directml under Wine on Linux.
It is not part of this package: `make dml-lane` (tools/dml_lane/setup.sh, from a checkout) builds
it in ``$DML_LANE`` (default ``~/.cache/ort-dml-ops/dml-lane``) and installs the driver there,
``driver/driver.py`` (the host side: ``Case``, ``run_cases``) beside ``driver/guest.py`` (the
script the Windows CPython runs). This module is all the package knows about it, so that
``ort-dml-ops check`` (commands/check.py) works where a lane is installed and says in one line
why not elsewhere:

    ok, why = lane_available()   # (False, "DML lane not set up at ... (run `make dml-lane`)")
    driver = load_driver()       # raises LaneUnavailable(why) without a lane or its driver
    [r] = driver.run_cases([driver.Case("m", model, feeds)])

``DML_LANE_DRIVER`` names another driver folder (the tests point it at the checkout's
tools/dml_lane, so they exercise the code under review, not the copy installed in the lane).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from pathlib import Path
from types import ModuleType

__all__ = ["LaneUnavailable", "driver_dir", "lane_available", "lane_dir", "load_driver"]

#: run.sh of an upgraded lane loads Wine 10's Direct3D 12 DLLs as native (tools/dml_lane/setup.sh)
_D3D12_OVERRIDE = "d3d12,d3d12core,dxgi,wined3d=n"
_DRIVER_MODULE = "ort_dml_ops_lane_driver"


class LaneUnavailable(RuntimeError):
    """The DML lane or its driver is missing; the message is one line that says which."""


def lane_dir() -> Path:
    """Where the lane lives: $DML_LANE (as for setup.sh), else ~/.cache/ort-dml-ops/dml-lane."""
    env = os.environ.get("DML_LANE")
    if env:
        return Path(env).expanduser()
    return Path.home() / ".cache" / "ort-dml-ops" / "dml-lane"


def driver_dir() -> Path:
    """The folder holding driver.py and guest.py: $DML_LANE_DRIVER, else <lane>/driver."""
    env = os.environ.get("DML_LANE_DRIVER")
    return Path(env).expanduser() if env else lane_dir() / "driver"


def lane_available() -> tuple[bool, str]:
    """(True, "") when the lane is set up and verified by its smoke test; else (False, why), `why`
    one line naming what is missing and the command that fixes it. The driver is `load_driver`'s
    concern: tools that bring their own guest script (tools/dml_lane/truth.py) need none."""
    if os.environ.get("ORT_DML_OPS_NO_LANE") == "1":
        return False, "ORT_DML_OPS_NO_LANE=1"
    w = lane_dir()
    fix = "(run `make dml-lane`)"
    if not (w / "run.sh").is_file():
        return False, f"DML lane not set up at {w} {fix}"
    for tool in ("wine", "xvfb-run", "flock"):
        if shutil.which(tool) is None:
            return False, f"DML lane at {w}: `{tool}` is not on PATH {fix}"
    if not (w / "cp311" / "Lib" / "site-packages" / "onnxruntime").is_dir():
        return False, f"DML lane at {w}: onnxruntime-directml is not installed {fix}"
    if _D3D12_OVERRIDE not in (w / "run.sh").read_text(errors="replace"):
        return False, (
            f"DML lane at {w} runs Wine 8's own Direct3D 12 (vkd3d 1.6), which fails where "
            f"DirectML does not {fix}"
        )
    if not (w / "smoke.ok").is_file():
        return False, f"DML lane at {w}: its self-test has not passed {fix}"
    return True, ""


def load_driver() -> ModuleType:
    """The lane's driver module (driver.py of `driver_dir()`), imported once per process.

    Raises LaneUnavailable (one line) when the lane is not ready or has no driver."""
    ok, why = lane_available()
    if not ok:
        raise LaneUnavailable(why)
    d = driver_dir()
    if not ((d / "driver.py").is_file() and (d / "guest.py").is_file()):
        raise LaneUnavailable(
            f"DML lane at {lane_dir()}: no driver in {d} (run `make dml-lane-driver`)"
        )
    path = (d / "driver.py").resolve()
    loaded = sys.modules.get(_DRIVER_MODULE)
    if loaded is not None and Path(loaded.__file__ or "").resolve() == path:
        return loaded
    spec = importlib.util.spec_from_file_location(_DRIVER_MODULE, path)
    if spec is None or spec.loader is None:
        raise LaneUnavailable(f"DML lane driver {path} cannot be imported")
    module = importlib.util.module_from_spec(spec)
    sys.modules[_DRIVER_MODULE] = (
        module  # dataclasses look their module up while defined
    )
    spec.loader.exec_module(module)
    return module
