"""Real unwritable and full folders for the write-path tests (never skipped under root).

`immutable_dir`: a folder made immutable with `chattr +i`: even root cannot create a file in it.
`tiny_fs`: a 64 KiB tmpfs mounted for the test; where mounting is not allowed (no
CAP_SYS_ADMIN) the test is skipped with that reason.
`snapshot(folder)`: every path below `folder` with its content hash, to assert that a failed
command left nothing behind and changed nothing.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

import pytest


@pytest.fixture()
def immutable_dir():
    made = []

    def make(path: Path) -> Path:
        path.mkdir(parents=True, exist_ok=True)
        subprocess.run(["chattr", "+i", str(path)], check=True)
        made.append(path)
        return path

    yield make
    for p in made:
        subprocess.run(["chattr", "-i", str(p)], check=False)


@pytest.fixture()
def tiny_fs():
    mounted = []

    def make(path: Path, size: str = "64k") -> Path:
        path.mkdir(parents=True, exist_ok=True)
        r = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
            check=False,
            capture_output=True,
            text=True,
        )
        if r.returncode:
            pytest.skip(f"cannot mount a tmpfs here: {r.stderr.strip()}")
        mounted.append(path)
        return path

    yield make
    for p in mounted:
        subprocess.run(["umount", str(p)], check=False)


def snapshot(folder: Path) -> dict:
    out = {}
    for p in sorted(folder.rglob("*")):
        if p.is_symlink():
            out[str(p)] = "link->" + os.readlink(p)
        elif p.is_file():
            out[str(p)] = hashlib.sha256(p.read_bytes()).hexdigest()
        elif p.is_dir():
            out[str(p)] = "dir"
    return out
