"""The README says what a new user will meet, and these tests keep it true.

- Its Python examples run as written, in order, in one namespace (later blocks continue the
  first), in a scratch directory with an empty model cache.
- Its example output of ``adaptable run`` is what a fresh run prints: the command runs here, and
  what does not depend on the machine must equal the README's (every line around the table,
  the table's header, its rows in order with their dataset, shift, model, method and seeds);
  the scores must lie within :data:`SCORE_TOLERANCE` of the README's (they move with the CPU
  and BLAS the MLP is trained on), the gains the README shows over the unadapted model must
  hold, and the timings are left out.
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
from dataclasses import dataclass
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


#: the main job's table: the columns that name a row, then its scores in points, then ms/row
IDENTITY = ("dataset", "shift", "model", "method", "seeds")
SCORES = ("F1", "bAcc", "Acc", "ECE")

#: How far (points) a score of the main job may lie from the README's. The MLP is trained with
#: torch on the CPU; another CPU or BLAS rounds its sums differently, training ends in a slightly
#: different network, and every score follows it. EM iterates on the stream's posteriors, FTH
#: follows them online and TENT trains the network again, so they amplify the difference: on
#: another machine source moved by 0.1 (60.1 -> 60.2), em by 1.2 and fth by 1.9 (F1); on the
#: README's machine with generic kernels (MKL_CBWR=COMPATIBLE, ATEN_CPU_CAPABILITY=default,
#: ONEDNN_MAX_CPU_ISA=SSE41), every other score moved by 0.3 at most and em, fth by up to 1.3
#: (fth's ECE 5.3 -> 6.5). So 1 point for the others and 3 for those three, a few times what
#: was seen; the README says the same beside the table.
SCORE_TOLERANCE = {"em": 3.0, "fth": 3.0, "tent": 3.0}
DEFAULT_TOLERANCE = 1.0
#: The gain over ``source`` (F1) the README shows must keep at least this share on any machine,
#: for each method whose gain there exceeds the default tolerance: so that adaptable switched
#: off (its row equal to source's) fails even where the source model itself moved.
GAIN_KEPT = 0.5


@dataclass(frozen=True)
class MainJob:
    """``adaptable run``'s output, split into what a machine cannot change and the scores."""

    lines: tuple[str, ...]  # every line but the table's rows, their timings blanked
    rows: tuple[tuple[str, ...], ...]  # each row's IDENTITY cells, in order
    scores: dict[str, dict[str, float]]  # method -> score column -> points
    timings: dict[str, float]  # method -> ms/row

    @classmethod
    def read(cls, output: str) -> MainJob:
        lines, rows, scores, timings = [], [], {}, {}
        for line in output.strip().splitlines():
            if not line.startswith("| ") or line.startswith("| dataset "):
                lines += without_timings(line)
                continue
            cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
            assert len(cells) == len(IDENTITY) + len(SCORES) + 1, line
            identity = dict(zip(IDENTITY, cells, strict=False))
            rows.append(tuple(identity.values()))
            values = cells[len(IDENTITY) : len(IDENTITY) + len(SCORES)]
            scores[identity["method"]] = dict(zip(SCORES, map(float, values), strict=True))
            timings[identity["method"]] = float(cells[-1])
        return cls(tuple(lines), tuple(rows), scores, timings)


def main_job_differences(expected: str, actual: str) -> list[str]:
    """What in ``actual`` (a run's output) disagrees with ``expected`` (the README's) beyond
    what a machine may change; empty where the README holds."""
    want, got = MainJob.read(expected), MainJob.read(actual)
    problems = []
    if got.lines != want.lines:
        problems.append(f"the lines around the table differ: {got.lines} != {want.lines}")
    if got.rows != want.rows:
        problems.append(f"the table's rows differ: {got.rows} != {want.rows}")
        return problems
    problems += [f"{m}: ms/row {t} is not positive" for m, t in got.timings.items() if t <= 0]
    for method, scores in want.scores.items():
        tolerance = SCORE_TOLERANCE.get(method, DEFAULT_TOLERANCE)
        for column, value in scores.items():
            if abs(got.scores[method][column] - value) > tolerance + 1e-9:  # one-decimal cells
                problems.append(
                    f"{method} {column}: {got.scores[method][column]} is more than {tolerance} "
                    f"from the README's {value}"
                )
        gain = scores["F1"] - want.scores["source"]["F1"]
        if method != "source" and gain > DEFAULT_TOLERANCE:
            got_gain = got.scores[method]["F1"] - got.scores["source"]["F1"]
            if got_gain < GAIN_KEPT * gain:
                problems.append(
                    f"{method} gains {got_gain:.1f} F1 over source; the README shows {gain:.1f}"
                )
    return problems


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
    assert any("AdaptedClassifier(" in block for block in blocks)
    assert python_blocks("text\n```python\nx = 1\n```\n```bash\nls\n```\n") == ["x = 1\n"]
    assert "9 experiments (0 already in the results store" in main_job_output(text)


def test_the_main_job_comparison_allows_what_a_machine_changes_and_nothing_else() -> None:
    readme = main_job_output(README.read_text())
    assert main_job_differences(readme, readme) == []
    assert MainJob.read(readme).rows[0] == ("hospital_readmission", "natural", "mlp", "source", "1")

    def edited(method: str, column: str, delta: float, text: str = readme) -> str:
        """``text`` with one score of one method moved by ``delta`` points."""
        lines = text.splitlines()
        for i, line in enumerate(lines):
            cells = line.split("|")
            if len(cells) > 5 and cells[4].strip() == method:
                position = 1 + len(IDENTITY) + SCORES.index(column)
                cells[position] = f" {float(cells[position]) + delta:.1f} "
                lines[i] = "|".join(cells)
        return "\n".join(lines)

    # what another machine gave: within the tolerances
    other = edited("em", "F1", -1.2, edited("fth", "F1", -1.9, edited("source", "F1", 0.1)))
    assert main_job_differences(readme, other) == []
    # a peer moving by more than its tolerance; an output-only method moving by more than 1
    assert main_job_differences(readme, edited("tent", "ECE", 3.2))
    assert main_job_differences(readme, edited("balanced", "bAcc", -1.2))
    # adaptable switched off: its row is source's
    source = MainJob.read(readme).scores["source"]
    off = readme
    for column in SCORES:
        off = edited(
            "adaptable", column, source[column] - MainJob.read(off).scores["adaptable"][column], off
        )
    assert MainJob.read(off).scores["adaptable"] == source
    assert any("adaptable" in problem for problem in main_job_differences(readme, off))
    # the source model better by 0.8 and adaptable worse by 0.8: each within 1, the gain halved
    squeezed = edited("adaptable", "F1", -0.8, edited("source", "F1", 0.8))
    assert main_job_differences(readme, squeezed) == [
        "adaptable gains 0.2 F1 over source; the README shows 1.8"
    ]
    # a row renamed, dropped or moved; a line around the table changed
    assert main_job_differences(readme, readme.replace("| bbse |", "| bbse[x] |"))
    assert main_job_differences(readme, readme.replace("| 1 | 58.6", "| 3 | 58.6"))
    no_tent = "\n".join(line for line in readme.splitlines() if "| tent |" not in line)
    assert main_job_differences(readme, no_tent)
    assert main_job_differences(readme, readme.replace("0 failed", "1 failed"))


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
    # the wrapper: two batches of 64 predicted, one report row each
    assert len(namespace["clf"].report()) == 2


def test_the_main_job_prints_what_the_readme_shows(tmp_path: Path, model_cache: Path) -> None:
    """``adaptable run`` with no arguments, as a new user runs it (in an empty folder, so that
    its results store is new); the README's block must match it as
    :func:`main_job_differences` says."""
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
    problems = main_job_differences(main_job_output(README.read_text()), done.stdout)
    assert not problems, (
        "the README's output of `adaptable run` is out of date ("
        + "; ".join(problems)
        + "); paste what a fresh run prints:\n"
        + done.stdout
    )
