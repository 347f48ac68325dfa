"""The core install and the extras (``adaptable/optional.py``, ``pyproject.toml``).

- ``import adaptable`` and the default preset on a scikit-learn model import no library of an
  extra (torch, XGBoost, CatBoost, matplotlib, Ray, tqdm), even where they are installed: a fresh
  interpreter's ``sys.modules`` is read after each step.
- With those libraries made unimportable (an import finder that raises what the import of an
  absent module raises), the default preset still runs end to end, and each feature that needs
  an extra raises an ImportError naming the feature and ``pip install 'adaptable-tta[extra]'``.
- ``require`` translates only the absence of the module it was asked for; the extras it names
  are the ones ``pyproject.toml`` declares, and they hold the libraries asked for.
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest

import adaptable
from adaptable.optional import (
    EXTRA_MODULES,
    EXTRAS,
    MissingExtraError,
    install_command,
    loaded,
    require,
)

ROOT = Path(__file__).resolve().parents[1]
SOURCE = Path(adaptable.__file__).parent

#: import name -> distribution name in pyproject.toml, where they differ
DISTRIBUTION = {"xgboost": "xgboost-cpu"}

#: the default preset on a scikit-learn pipeline over a DataFrame, as a user without extras runs it
DEFAULT_FLOW = """
import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from adaptable import datasets
ds = datasets.make_shift_dataset(seed=0)
pipe = make_pipeline(
    datasets.Encoder(ds.numerical, ds.categorical), LogisticRegression(max_iter=500)
).fit(ds.train.X, ds.train.y)
adapter = AdapTable(random_state=0).fit(pipe, ds.train.X, ds.train.y, ds.valid.X, ds.valid.y)
proba = adapter.predict_proba(ds.test.X.iloc[:64])
assert proba.shape == (64, 2)
"""


def run_python(*parts: str) -> dict:
    """``parts`` (each dedented), one after the other, in a fresh interpreter that imports this
    checkout's package; the code prints one JSON object last, returned here."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SOURCE.parent), *sys.path])}
    env.pop("PYTHONSTARTUP", None)
    done = subprocess.run(
        [sys.executable, "-c", "\n".join(textwrap.dedent(part) for part in parts)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def blocked(*modules: str) -> str:
    """Code that makes ``modules`` unimportable for what follows, as if not installed: the first
    finder on the import path raises what an absent module raises. (``sys.modules[name] = None``
    would do for our imports, but libraries that read ``sys.modules.get("torch")`` for type checks,
    as SciPy does, fail on the None.)"""
    return textwrap.dedent(
        f"""
        import sys

        class Absent:
            names = {set(modules)!r}

            @classmethod
            def find_spec(cls, fullname, path=None, target=None):
                if fullname.split(".")[0] in cls.names:
                    raise ModuleNotFoundError(f"No module named {{fullname!r}}", name=fullname)
                return None

        sys.meta_path.insert(0, Absent)
        """
    )


def test_import_and_the_default_preset_load_no_extra() -> None:
    found = run_python(
        f"""
        import json, sys
        heavy = {EXTRA_MODULES!r}
        import adaptable
        after_import = [m for m in heavy if m in sys.modules]
        from adaptable import AdapTable
        after_class = [m for m in heavy if m in sys.modules]
        """,
        DEFAULT_FLOW,
        """
        after_fit = [m for m in heavy if m in sys.modules]
        print(json.dumps(dict(import_=after_import, class_=after_class, fit=after_fit)))
        """,
    )
    assert found == {"import_": [], "class_": [], "fit": []}


def test_importing_adaptable_loads_neither_scikit_learn_nor_scipy() -> None:
    """``from adaptable import AdapTable`` stays quick: scikit-learn and SciPy (which imports
    scikit-learn's base class pull in) load at the first call that needs them, torch never.
    The scikit-learn interface still works once it is asked for."""
    found = run_python(
        """
        import json, sys
        from adaptable import AdapTable
        slow = ("torch", "sklearn", "scipy")
        after_import = [m for m in slow if m in sys.modules]
        method = AdapTable(alpha=0.3)
        after_construction = [m for m in slow if m in sys.modules]
        from sklearn.base import clone, is_classifier
        copy = clone(method)
        print(json.dumps(dict(
            import_=after_import,
            construction=after_construction,
            clone=[repr(copy), is_classifier(copy)],
        )))
        """
    )
    assert found == {
        "import_": [],
        "construction": [],
        "clone": ["AdapTable(alpha=0.3)", True],
    }


def test_without_the_extras_the_default_preset_works_and_the_rest_names_its_extra(
    tmp_path: Path,
) -> None:
    from adaptable import AdapTable, datasets

    # An adapter of the paper preset, saved where torch is: loading it needs torch again.
    ds = datasets.make_shift_dataset(seed=0)
    X = ds.train.X[ds.numerical].to_numpy()
    from sklearn.linear_model import LogisticRegression

    model = LogisticRegression().fit(X, ds.train.y)
    paper_file = tmp_path / "paper.safetensors"
    AdapTable(preset="paper", epochs=1, random_state=0).fit(model, X, ds.train.y).save(paper_file)

    found = run_python(
        blocked(*EXTRA_MODULES),
        "from adaptable import AdapTable",
        DEFAULT_FLOW,
        f"""
        import json
        # the rest of the default preset's life: a stream, late labels, report, save / load
        for start in range(64, 320, 64):
            adapter.predict(ds.test.X.iloc[start : start + 64])
        adapter.partial_fit(ds.test.X.iloc[:32], ds.test.y[:32], rows=np.arange(32))
        adapter.partial_fit(None, ds.test.y[32:64], rows=np.arange(32, 64))
        assert len(adapter.report()) == 5
        adapter.drift_summary()
        import pickle
        # (the model updates have learnt: a pickle keeps them; a save file holds the rest)
        adapter.save({str(tmp_path / "default.safetensors")!r}, drop_updates=True)
        loaded = AdapTable.load({str(tmp_path / "default.safetensors")!r}, model=pipe)
        assert loaded.report().equals(adapter.report())
        restored = pickle.loads(pickle.dumps(adapter))
        batch = ds.test.X.iloc[320:384]
        np.testing.assert_array_equal(restored.predict_proba(batch), adapter.predict_proba(batch))

        def paper_fit():
            AdapTable(preset="paper").fit(pipe, ds.train.X, ds.train.y)

        def paper_load():
            AdapTable.load({str(paper_file)!r}, model=model)

        def models():
            import adaptable.models

        def baselines():
            from adaptable import methods
            methods.create("tent")

        def column_shift():
            from adaptable import shifts
            shifts.most_important_column(ds, "numerical", seed=0)

        def figure():
            from adaptable.experiments.plots import plot_reliability
            plot_reliability({{}})

        def drift_figure():
            import pandas as pd
            from adaptable.experiments.drift_figure import plot_drift_report
            plot_drift_report(pd.DataFrame())

        def ray_executor():
            from adaptable.experiments.executors import RayExecutor
            RayExecutor()

        model = pipe
        messages = {{}}
        for attempt in (paper_fit, paper_load, models, baselines, column_shift, figure,
                        drift_figure, ray_executor):
            try:
                attempt()
            except ImportError as err:
                messages[attempt.__name__] = [type(err).__name__, str(err)]
            else:
                messages[attempt.__name__] = None
        print(json.dumps(messages))
        """,
    )
    expected = {
        "paper_fit": ("torch", "preset='paper'"),
        "paper_load": ("torch", "loading an adapter saved with it"),
        "models": ("torch", "adaptable.models"),
        "baselines": ("torch", "adaptable.baselines"),
        "column_shift": ("boosters", "column shifts"),
        "figure": ("plots", "The figures"),
        "drift_figure": ("plots", "The drift figure"),
        "ray_executor": ("ray", "The Ray executor"),
    }
    assert set(found) == set(expected)
    for what, (extra, feature) in expected.items():
        assert found[what] is not None, f"{what} worked without its extra"
        kind, message = found[what]
        assert kind == "MissingExtraError", (what, message)
        assert f"pip install 'adaptable-tta[{extra}]'" in message, (what, message)
        assert feature in message, (what, message)


def test_a_missing_booster_names_the_boosters_extra(tmp_path: Path) -> None:
    found = run_python(
        blocked("xgboost", "catboost"),
        f"""
        import json
        from adaptable import datasets, models
        ds = datasets.make_shift_dataset(seed=0)
        messages = {{}}
        for name in ("xgboost", "catboost"):
            try:
                models.train(name, ds, n_trials=1, cache_dir={str(tmp_path)!r}, use_cache=False)
            except ImportError as err:
                messages[name] = str(err)
        print(json.dumps(messages))
        """,
    )
    assert set(found) == {"xgboost", "catboost"}
    for name, message in found.items():
        assert "pip install 'adaptable-tta[boosters]'" in message, message
        assert f"models.train({name!r}" in message, message


# --------------------------------------------------------------------------- require itself


def test_require_returns_the_module_or_names_the_extra() -> None:
    assert require("json", feature="f", extra="torch") is json
    with pytest.raises(MissingExtraError) as caught:
        require("adaptable_no_such_module.sub", feature="The frobnicator", extra="plots")
    err = caught.value
    assert isinstance(err, ImportError) and err.name == "adaptable_no_such_module"
    assert str(err).startswith("The frobnicator needs adaptable_no_such_module, which is not")
    assert "pip install 'adaptable-tta[plots]'" in str(err)
    with pytest.raises(ValueError, match="Unknown extra"):
        install_command("torchh")


def test_require_leaves_a_broken_install_s_own_error_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An installed module whose own import fails (a dependency of *its* missing) is not a
    missing extra: the real error comes through."""
    (tmp_path / "adaptable_broken_pkg.py").write_text("import adaptable_its_missing_dependency\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ModuleNotFoundError) as caught:
        require("adaptable_broken_pkg", feature="f", extra="torch")
    assert not isinstance(caught.value, MissingExtraError)
    assert caught.value.name == "adaptable_its_missing_dependency"


def test_loaded_imports_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, "colorsys", raising=False)
    assert loaded("colorsys") is None
    assert "colorsys" not in sys.modules
    assert loaded("json") is json


# --------------------------------------------------------------------------- pyproject


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def _names(requirements: list[str]) -> set[str]:
    return {re.split(r"[\[<>=!~; ]", r, maxsplit=1)[0].lower() for r in requirements}


def test_the_core_dependencies_are_the_light_ones() -> None:
    core = _names(_pyproject()["dependencies"])
    assert core == {"numpy", "pandas", "scipy", "scikit-learn", "safetensors", "platformdirs"}


def test_the_extras_are_declared_and_all_and_dev_hold_them() -> None:
    extras = _pyproject()["optional-dependencies"]
    assert set(extras) == {*EXTRAS, "dev"}
    every = {name for name in EXTRAS if name != "all"}
    assert extras["all"] == [f"adaptable-tta[{','.join(sorted(every, key=list(EXTRAS).index))}]"]
    assert "adaptable-tta[all]" in extras["dev"]
    assert {"pytest", "hypothesis", "ruff"} <= _names(extras["dev"])


def _require_calls() -> list[tuple[str, str, str]]:
    """(file, module, extra) of every ``require(module, ..., extra=...)`` in the package."""
    calls = []
    for path in sorted(SOURCE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "require"):
                continue
            keywords = {k.arg: k.value for k in node.keywords}
            extra = keywords["extra"]
            assert isinstance(extra, ast.Constant), f"{path}: extra= must be a literal"
            module = node.args[0]
            name = module.value if isinstance(module, ast.Constant) else "<variable>"
            calls.append((path.relative_to(SOURCE).as_posix(), name, extra.value))
    return calls


def test_every_require_names_an_extra_that_holds_its_library() -> None:
    extras = _pyproject()["optional-dependencies"]
    calls = _require_calls()
    assert len(calls) >= 8
    for file, module, extra in calls:
        assert extra in EXTRAS and extra != "all", (file, extra)
        if module.startswith("<"):  # a loop over literal names: checked by the tests above
            continue
        top = module.split(".")[0]
        assert DISTRIBUTION.get(top, top).lower() in _names(extras[extra]), (file, module, extra)


def test_the_command_names_a_missing_extra_in_one_line(tmp_path: Path) -> None:
    found = run_python(
        blocked(*EXTRA_MODULES),
        f"""
        import contextlib, io, json
        from adaptable.cli import main
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            code = main(["run", "--results", {str(tmp_path / "store")!r}])
        print(json.dumps({{"code": code, "err": err.getvalue()}}))
        """,
    )
    assert found["code"] == 1
    assert "Traceback" not in found["err"]
    assert "pip install 'adaptable-tta[torch]'" in found["err"], found["err"]
