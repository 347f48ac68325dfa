"""The README says what a new user will meet, and these tests keep it true.

- Its Python examples run as written, in order, in one namespace (later blocks continue the
  first), in a scratch directory with an empty model cache.
- Its example output of ``adaptable run`` is what a fresh run prints: the command runs here
  and every metric cell of its table must equal the README's (the timings are left out).
- Its install and test commands are the ones CI runs (``.ci/run``).

The examples and the main job share one model cache, so the README's MLP is trained once for
both (about a minute on 2 cores); the main job then adds about 25 s of adaptation.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"


def python_blocks(text: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", text, flags=re.S | re.M)


def main_job_output(text: str) -> str:
    """The plain code block under the README's heading "The main job"."""
    section = text.split("\n## The main job\n", 1)[1].split("\n## ", 1)[0]
    match = re.search(r"^```\n(.*?)^```", section, flags=re.S | re.M)
    assert match, "no plain code block under '## The main job'"
    return match.group(1)


def without_timings(output: str) -> list[str]:
    """The lines of ``adaptable run``'s output with what varies from run to run blanked: the
    ms/row column and the seconds of the last two lines."""
    lines = []
    for line in output.strip().splitlines():
        if line.startswith("| ") and not line.startswith("| dataset "):
            cells = line.strip("|").split("|")
            assert float(cells[-1]) > 0, line
            line = "|".join([*cells[:-1], " ms "])
        lines.append(re.sub(r"\d+(\.\d+)? s$", "N s", line))
    return lines


@pytest.fixture(scope="module")
def model_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One empty model cache for the examples and the main job (they train the same MLP)."""
    return tmp_path_factory.mktemp("models")


def test_the_blocks_are_found() -> None:
    text = README.read_text()
    blocks = python_blocks(text)
    assert len(blocks) >= 3
    assert "AdapTable(random_state=0).fit(model" in blocks[0]
    assert any("AdapTable.load(" in block and "model=model)" in block for block in blocks)
    assert any("partial_fit(" in block and "report()" in block for block in blocks)
    assert python_blocks("text\n```python\nx = 1\n```\n```bash\nls\n```\n") == ["x = 1\n"]
    assert "9 experiments (0 already in the results store" in main_job_output(text)


def test_timings_are_what_the_comparison_leaves_out() -> None:
    row = "| heloc | natural | mlp | source | 1 | 60.1 | 61.1 | 61.3 | 6.2 | 0.019 |"
    other = "| heloc | natural | mlp | source | 1 | 60.1 | 61.1 | 61.3 | 6.2 | 0.350 |"
    assert without_timings(row) == without_timings(other)
    assert without_timings(row) != without_timings(row.replace("61.3", "61.4"))
    assert without_timings("wall time 56.2 s") == without_timings("wall time 7 s")
    assert without_timings("in 56.2 s\n") != without_timings("in 56.2 ms\n")


def test_the_quick_start_is_within_the_first_60_lines() -> None:
    """Install, the main job and the first example, whole, before line 61."""
    head = "\n".join(README.read_text().splitlines()[:60]) + "\n"
    assert "## Install" in head and "adaptable run" in head
    assert "## Your own model" in head
    first = python_blocks(README.read_text())[0]
    assert python_blocks(head) == [first] and "AdapTable(random_state=0).fit(model" in first


def test_ci_runs_the_readme_install_and_test_commands() -> None:
    """.ci/run sets up as the README's install block says: its commands, in order."""
    ci = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    section = README.read_text().split("\n## Install\n", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"^```bash\n(.*?)^```", section, flags=re.S | re.M)
    assert block, "no bash block under '## Install'"
    lines = [line.split("  #")[0].strip() for line in block.group(1).splitlines()]
    setup, main_job, tests = [line for line in lines if not line.startswith("#")]
    assert main_job == "adaptable run"
    expected = [*setup.split(" && "), tests]
    assert [line for line in ci if line in expected] == expected


def test_the_readme_examples_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, model_cache: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ADAPTABLE_CACHE_DIR", str(model_cache))
    namespace: dict[str, object] = {"__name__": "readme"}
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        for block in python_blocks(README.read_text()):
            exec(compile(block, str(README), "exec"), namespace)

    # the quick start: two macro-F1 in points, the adapted one no worse on this shift
    scores = dict(re.findall(r"^macro-F1 (\w+) (\d+\.\d)$", printed.getvalue(), flags=re.M))
    assert set(scores) == {"unadapted", "adapted"}, printed.getvalue()
    assert 50.0 <= float(scores["unadapted"]) <= float(scores["adapted"]) <= 100.0
    # your own model: what the comments promise
    assert "(64, 2)" in printed.getvalue()
    # save / load: the file, and the restored adapter predicts with the model passed to load
    assert (tmp_path / "adaptable_readmission.safetensors").is_file()
    proba = np.asarray(namespace["proba"])
    assert proba.shape == (64, 2)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert re.search(r"^decision \w+ shift z-score", printed.getvalue(), flags=re.M)


def test_the_main_job_prints_what_the_readme_shows(tmp_path: Path, model_cache: Path) -> None:
    """``adaptable run`` with no arguments, as a new user runs it (in an empty folder, so that
    its results store is new); the README's block must match it cell for cell."""
    # The README shows a CPU run; where CUDA is visible, `run` would train the MLP there, whose
    # figures can differ in the last digit.
    env = {**os.environ, "ADAPTABLE_CACHE_DIR": str(model_cache), "CUDA_VISIBLE_DEVICES": ""}
    done = subprocess.run(
        [sys.executable, "-m", "adaptable", "run"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    expected = without_timings(main_job_output(README.read_text()))
    assert without_timings(done.stdout) == expected, (
        "the README's output of `adaptable run` is out of date; paste what a fresh run prints:\n"
        + done.stdout
    )
