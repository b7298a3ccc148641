"""Put Wine 10's Direct3D 12 stack (vkd3d 1.14, patched) into the DML lane's Wine prefix.

    python3 tools/dml_lane/d3d12_stack.py install LANE   (called by setup.sh; idempotent)
    python3 tools/dml_lane/d3d12_stack.py check LANE     exit 0 when the prefix holds the patched DLLs

Why: the lane's Wine 8 (Debian 12) has vkd3d 1.6, under which DirectML's vec4 shaders, 64-bit
integer math and 64-bit casts fail to compile and fused graphs of 5+ nodes crash; none of that is
DirectML's behaviour. Wine 10's d3d12.dll, d3d12core.dll, dxgi.dll and wined3d.dll (which carries
vkd3d 1.14) run all of it, once patched (dll_patches.py), loaded as native DLLs by Wine 8.

Where from: Debian trixie's `libwine` 10.0~repack-6 (amd64), fetched with a PRIVATE apt
configuration under LANE/wine10/apt (own sources.list, lists and cache; the system's apt
configuration, lists and packages are never touched), `apt-get download`, `dpkg-deb -x`.
Set WINE10_DEB to a saved .deb to skip apt, WINE10_MIRROR to another mirror (e.g. a
snapshot.debian.org URL if Debian drops this version).

Writes only inside LANE: wine10/ (apt state, .deb, patched DLLs), the prefix's system32, and
d3d12-stack.sha256 (the pinned hashes of the four files in system32, which run.sh checks before
every run so that the lane never silently runs on Wine 8's own Direct3D 12).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import dll_patches as P

DEB = f"{P.PACKAGE}_{P.VERSION}_amd64.deb"
DEB_DLL_DIR = "usr/lib/x86_64-linux-gnu/wine/x86_64-windows"
KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"


def log(msg: str) -> None:
    print(f"dml-lane: {msg}", file=sys.stderr, flush=True)


def system32(lane: Path) -> Path:
    return lane / "wpfx" / "drive_c" / "windows" / "system32"


def _mirror() -> str:
    if os.environ.get("WINE10_MIRROR"):
        return os.environ["WINE10_MIRROR"]
    try:
        for line in (
            Path("/etc/apt/sources.list.d/debian.sources").read_text().splitlines()
        ):
            if line.startswith("URIs:"):
                return line.split()[1]
    except OSError:
        pass
    return "http://deb.debian.org/debian"


def fetch_deb(work: Path) -> Path:
    """The libwine .deb: WINE10_DEB, else the cached one, else apt-get download (private state)."""
    if os.environ.get("WINE10_DEB"):
        return Path(os.environ["WINE10_DEB"])
    cached = work / "debs" / DEB
    if cached.is_file():
        return cached
    mirror = _mirror()
    log(
        f"fetching {P.PACKAGE} {P.VERSION} (trixie) from {mirror}; private apt state in {work / 'apt'}"
    )
    apt = work / "apt"
    shutil.rmtree(apt, ignore_errors=True)
    for d in ("lists/partial", "cache/archives/partial"):
        (apt / d).mkdir(parents=True)
    (apt / "sources.list").write_text(
        f"deb [signed-by={KEYRING}] {mirror} trixie main\n"
    )
    opts = [
        "-o",
        f"Dir::Etc::sourcelist={apt / 'sources.list'}",
        "-o",
        "Dir::Etc::sourceparts=/nonexistent",
        "-o",
        f"Dir::State::Lists={apt / 'lists'}",
        "-o",
        f"Dir::Cache={apt / 'cache'}",
        "-o",
        "APT::Sandbox::User=root",
    ]  # the private lists are not readable by _apt
    subprocess.run(
        ["apt-get", *opts, "update", "-qq"], check=True, stdout=subprocess.DEVNULL
    )
    tmp = Path(tempfile.mkdtemp(dir=work, prefix="debs.tmp-"))
    try:
        r = subprocess.run(
            ["apt-get", *opts, "download", "-qq", f"{P.PACKAGE}={P.VERSION}"],
            check=False,
            cwd=tmp,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        if r.returncode != 0:
            raise SystemExit(
                f"dml-lane: apt could not download {P.PACKAGE}={P.VERSION} ({r.stderr.strip()[:200]}); "
                "set WINE10_DEB to a saved .deb or WINE10_MIRROR to a snapshot.debian.org URL"
            )
        cached.parent.mkdir(parents=True, exist_ok=True)
        os.replace(tmp / DEB, cached)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return cached


def patched_dlls(work: Path) -> Path:
    """work/dll holding the four patched DLLs (built from the .deb when missing or wrong)."""
    out = work / "dll"
    if all(
        (out / n).is_file() and P.state(n, (out / n).read_bytes()) == "patched"
        for n in P.DLLS
    ):
        return out
    deb = fetch_deb(work)
    log(f"extracting and patching {', '.join(P.DLLS)} from {deb.name}")
    with tempfile.TemporaryDirectory(dir=work, prefix="extract-") as tmp:
        subprocess.run(["dpkg-deb", "-x", str(deb), tmp], check=True)
        staged = Path(tmp) / "patched"
        staged.mkdir()
        for n in P.DLLS:
            src = Path(tmp) / DEB_DLL_DIR / n
            if not src.is_file():
                raise SystemExit(f"dml-lane: {n} is not in {deb}")
            try:
                P.patch_file(str(src), str(staged / n))
            except P.PatchRefused as exc:
                raise SystemExit(f"dml-lane: refusing to patch: {exc}") from None
        shutil.rmtree(out, ignore_errors=True)
        os.replace(staged, out)
    return out


def stack_state(lane: Path) -> dict[str, str]:
    """{dll: original | patched | unknown | missing} for the prefix's system32."""
    sys32 = system32(lane)
    return {
        n: P.state(n, (sys32 / n).read_bytes()) if (sys32 / n).is_file() else "missing"
        for n in P.DLLS
    }


def install(lane: Path) -> None:
    sys32 = system32(lane)
    if not sys32.is_dir():
        raise SystemExit(
            f"dml-lane: no Wine prefix at {lane / 'wpfx'} (setup.sh creates it first)"
        )
    src = patched_dlls(lane / "wine10")
    changed = []
    for n in P.DLLS:
        data = (src / n).read_bytes()
        if not (sys32 / n).is_file() or (sys32 / n).read_bytes() != data:
            P.write_atomic(str(sys32 / n), data)
            changed.append(n)
    bad = {n: s for n, s in stack_state(lane).items() if s != "patched"}
    if bad:
        raise SystemExit(
            f"dml-lane: system32 does not hold the patched DLLs after copying: {bad}"
        )
    sums = "".join(f"{P.PATCHED[n]}  {sys32 / n}\n" for n in P.DLLS)
    stamp = lane / "d3d12-stack.sha256"
    if not stamp.is_file() or stamp.read_text() != sums:
        P.write_atomic(str(stamp), sums.encode())
    log(
        f"Wine 10 Direct3D 12 stack (vkd3d 1.14, patched): {'installed ' + ', '.join(changed) if changed else 'in place'}"
    )


def main(argv: list[str]) -> int:
    if len(argv) != 3 or argv[1] not in ("install", "check"):
        print(f"usage: {argv[0]} install|check LANE", file=sys.stderr)
        return 2
    lane = Path(argv[2]).expanduser().resolve()
    if argv[1] == "install":
        install(lane)
        return 0
    st = stack_state(lane)
    for n, s in st.items():
        print(f"{system32(lane) / n}: {s}")
    return 0 if set(st.values()) == {"patched"} else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
