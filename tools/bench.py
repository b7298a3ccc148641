"""The benchmark runner: `python tools/bench.py [--quick|--full] [--json] [--chart FILE.png] ...`.

The same as `ort-dml-ops bench` (the logic lives in ort_dml_ops/bench/ so that the verb works
from an installed package); see `python tools/bench.py --help`.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from ort_dml_ops.cli import main

if __name__ == "__main__":
    sys.exit(main(["bench", *sys.argv[1:]]))
