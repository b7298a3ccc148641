"""The lane set-up's byte patches (tools/dml_lane/dll_patches.py) and the installed lane.

The refusal tests need no lane. The `dml`-marked test checks the lane in use: its prefix holds
the four DLLs with the pinned patched SHA-256, every patch site of wined3d.dll holds the new
bytes inside the function the pin table names (read from the DLL's own COFF symbols), and
run.sh loads them as native with VKD3D_CONFIG empty by default.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from dml_lane.driver import lane_available, lane_dir

_SPEC = importlib.util.spec_from_file_location(
    "dll_patches",
    Path(__file__).resolve().parents[2] / "tools" / "dml_lane" / "dll_patches.py",
)
P = importlib.util.module_from_spec(_SPEC)
sys.modules.setdefault("dll_patches", P)  # dataclasses look their module up
_SPEC.loader.exec_module(P)


def test_unknown_binary_is_refused():
    with pytest.raises(P.PatchRefused, match="unknown binary"):
        P.patched_bytes("wined3d.dll", b"MZ" + bytes(4094))


def test_other_dll_is_refused():
    with pytest.raises(P.PatchRefused, match="not one of"):
        P.patched_bytes("d3d11.dll", b"MZ")


def test_every_site_keeps_its_length():
    for site in (P.MARKER, *P.VKD3D_SITES):
        assert len(site.old) == len(site.new), site.what


@pytest.mark.dml
def test_lane_holds_the_patched_direct3d12_stack():
    ok, why = lane_available()
    if not ok:
        pytest.skip(f"DML lane unavailable: {why}")
    sys32 = lane_dir() / "wpfx" / "drive_c" / "windows" / "system32"
    for name in P.DLLS:
        data = (sys32 / name).read_bytes()
        assert P.state(name, data) == "patched", name
        assert data[P.MARKER_OFFSET : P.MARKER_OFFSET + 16] == P.MARKER.new
    wined3d = (sys32 / "wined3d.dll").read_bytes()
    pe = P.PE(wined3d)
    for site in P.VKD3D_SITES:
        off = pe.offset(site.rva)
        assert wined3d[off : off + len(site.new)] == site.new, site.what
        assert site.function in pe.function_at(site.rva), (
            site.what,
            pe.function_at(site.rva),
        )
    run_sh = (lane_dir() / "run.sh").read_text()
    assert "d3d12,d3d12core,dxgi,wined3d=n" in run_sh
    assert "VKD3D_CONFIG=${VKD3D_CONFIG-}" in run_sh


@pytest.mark.dml
def test_a_run_stopped_by_a_signal_leaves_the_lane_free(tmp_path):
    """A lane run stopped by SIGTERM (a CI timeout, pkill, Ctrl-C's cousin) stops its Wine
    session before it exits: Wine's processes inherit run.sh's lock, and one left over (a zombie
    winedevice.exe thread, seen) held it, so the next run waited the full DML_LANE_LOCK_WAIT.
    Here the next run, allowed 30 s for the lock, runs at once."""
    import contextlib
    import os
    import signal
    import subprocess
    import time

    ok, why = lane_available()
    if not ok:
        pytest.skip(f"DML lane unavailable: {why}")
    run_sh = str(lane_dir() / "run.sh")
    sleepy = tmp_path / "sleepy.py"
    sleepy.write_text('import time\nprint("up", flush=True)\ntime.sleep(90)\n')
    second = tmp_path / "second.py"
    second.write_text('print("second run", flush=True)\n')
    first = subprocess.Popen(
        [run_sh, str(sleepy)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        assert first.stdout is not None
        assert b"up" in first.stdout.readline()  # the guest runs, holding the lane
        os.kill(first.pid, signal.SIGTERM)  # run.sh alone, as `timeout` or pkill would
        first.wait(timeout=60)
        t0 = time.monotonic()
        done = subprocess.run(
            [run_sh, str(second)],
            capture_output=True,
            timeout=300,
            env={**os.environ, "DML_LANE_LOCK_WAIT": "30"},
        )
        assert done.returncode == 0, done.stdout[-500:]
        assert b"second run" in done.stdout
        assert time.monotonic() - t0 < 30  # it did not wait for the lock
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(first.pid, signal.SIGKILL)


def test_the_wine_session_does_not_hold_the_lane_lock(tmp_path):
    """Only run.sh itself holds run.lock: its Wine session is started without the lock's fd, so
    a Wine process that outlives a run (a sleeping winedevice.exe did, after a normal exit,
    on 2026-11-29: the next run waited on the lock until it was killed) cannot hold the lane.
    Checked from the host while a guest runs: no process but run.sh has the lock file open (this
    run's, or another lane user's run.sh holding or waiting for the lock, with the `flock` it
    waits in: runs of this test beside a lane run of another checkout saw both)."""
    import contextlib
    import os
    import signal
    import subprocess
    from pathlib import Path

    ok, why = lane_available()
    if not ok:
        pytest.skip(f"DML lane unavailable: {why}")
    lock = (lane_dir() / "run.lock").resolve()
    sleepy = tmp_path / "sleepy.py"
    sleepy.write_text('import time\nprint("up", flush=True)\ntime.sleep(60)\n')
    run = subprocess.Popen(
        [str(lane_dir() / "run.sh"), str(sleepy)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        assert run.stdout is not None
        assert b"up" in run.stdout.readline()  # the guest runs: the session is up
        holders = set()
        for fd_dir in Path("/proc").glob("[0-9]*/fd"):
            with contextlib.suppress(OSError):
                for fd in fd_dir.iterdir():
                    with contextlib.suppress(OSError):
                        if Path(os.readlink(fd)) == lock:
                            holders.add(int(fd_dir.parent.name))
        assert run.pid in holders, holders

        def run_sh(pid: int) -> bool:
            """run.sh itself, or the `flock` it runs to wait for the lock."""
            with contextlib.suppress(OSError):
                args = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
                return any(a.endswith(b"/run.sh") for a in args) or args[0] == b"flock"
            return False

        others = {
            p: Path(f"/proc/{p}/cmdline").read_bytes() for p in holders if not run_sh(p)
        }
        assert not others, others
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(run.pid, signal.SIGTERM)
        run.wait(timeout=60)
