"""The DML lane's Python side, outside the installed package (docs/dml-lane.md).

Import it with tools/ on sys.path (tests/dml/conftest.py, the scripts of this folder):

    driver.py        host side: Case, CaseResult, run_cases (also installed into the lane, for
                     `ort-dml-ops check`); guest.py is the script it runs in the Windows CPython
    corpus/          single-op and small-pattern models: the lane's test corpus and conformance
    truth.py         ORT's own placement record of whole models (guest side truth_guest.py)

Finding the lane and judging it ready is `ort_dml_ops.dml_lane` (the package's small client).
The shell and Python scripts beside these files build the lane (setup.sh) and record it.
"""
