"""Benchmarks (`ort-dml-ops bench`, tools/bench.py): native vs fallback vs lowered vs numpy."""
