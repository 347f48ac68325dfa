"""The README's Python examples run as written, in order, in one namespace (the second continues
the first), in a scratch directory with an empty model cache: what a new user pastes must work.

About a minute on 2 cores, most of it training the README's MLP on the embedded Hospital
Readmission copy.
"""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import numpy as np
import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def python_blocks(text: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", text, flags=re.S | re.M)


def test_the_blocks_are_found() -> None:
    blocks = python_blocks(README.read_text())
    assert len(blocks) >= 2
    assert "AdapTable(random_state=0).fit(model" in blocks[0]
    assert python_blocks("text\n```python\nx = 1\n```\n```bash\nls\n```\n") == ["x = 1\n"]


def test_the_readme_examples_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ADAPTABLE_CACHE_DIR", str(tmp_path / "models"))
    namespace: dict[str, object] = {"__name__": "readme"}
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        for block in python_blocks(README.read_text()):
            exec(compile(block, str(README), "exec"), namespace)

    # the first example: a macro-F1 in points, the state's last decision, a saved file
    match = re.search(r"^macro-F1 (\d+\.\d)$", printed.getvalue(), flags=re.M)
    assert match, printed.getvalue()
    assert 50.0 <= float(match.group(1)) <= 100.0
    assert "last decision" in printed.getvalue()
    assert (tmp_path / "adaptable_readmission.safetensors").is_file()
    # the second: what its comment promises
    proba = np.asarray(namespace["proba"])
    assert proba.shape == (64, 2)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
