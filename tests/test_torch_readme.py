"""README.md's PyTorch snippet runs as written: exports torch.cumprod + scatter_reduce(mean),
converts for DirectML and reproduces torch's outputs exactly (its own `assert`, against torch)."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("onnxscript")

README = Path(__file__).resolve().parent.parent / "README.md"


def _snippet() -> str:
    text = README.read_text()
    match = re.search(
        r"<!-- torch-snippet[^>]*-->\n```python\n(.*?)```", text, re.DOTALL
    )
    assert match, "README.md lost its torch-snippet block"
    return match.group(1)


def test_snippet_is_short():
    assert len(_snippet().strip().splitlines()) == 5


def test_readme_torch_snippet_runs_exactly(tmp_path, monkeypatch):
    # the export may write beside the working directory: keep it in tmp
    monkeypatch.chdir(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exec(
            compile(_snippet(), "README.md:torch-snippet", "exec"), {}
        )  # the README's own code
    snippet = _snippet()
    assert (
        "torch.cumprod" in snippet
        and "scatter_reduce" in snippet
        and "convert" in snippet
    )
