#!/bin/bash
# Installs the DML lane's driver into the lane: driver.py (host side) and guest.py (run by the
# lane's Windows CPython) from this folder into ${DML_LANE:-~/.cache/ort-dml-ops/dml-lane}/driver,
# where `ort-dml-ops check` finds it (ort_dml_ops/dml_lane.py). The package itself does not ship
# them. setup.sh runs this as its last step; `make dml-lane-driver` runs it alone, to refresh the
# driver of a built lane without touching anything else of it. Atomic: a new folder, then rename.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
W=${DML_LANE:-$HOME/.cache/ort-dml-ops/dml-lane}
[ -d "$W" ] || { echo "dml-lane: no lane at $W (run \`make dml-lane\`)" >&2; exit 1; }
tmp=$(mktemp -d "$W/driver.tmp.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
cp "$HERE/driver.py" "$HERE/guest.py" "$tmp/"
chmod 755 "$tmp"
rm -rf "$W/driver.old"
[ -d "$W/driver" ] && mv "$W/driver" "$W/driver.old"
mv "$tmp" "$W/driver"
rm -rf "$W/driver.old"
echo "dml-lane: driver installed in $W/driver" >&2
