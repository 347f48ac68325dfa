"""The paper's tables: which experiments each needs, and the paper's numbers to compare with.

Only the paper's tables live here; the benchmark's (domain splits and label shifts beyond the
paper) are in :mod:`adaptable.experiments.benchmark`.

The numbers come from a copy of ``paper_results.csv`` shipped in ``experiments/data`` (columns
``table, shift, model, dataset, method, metric, mean, se``; means and standard errors in percent).

>>> sorted(TABLES)[:3]
['architectures', 'calibrator_ablation', 'corruptions']
>>> paper_value("main", "natural", "MLP", "heloc", "AdapTable", "macro_f1")
(64.5, 0.3)
"""

from __future__ import annotations

import csv
import functools
import io
from dataclasses import replace
from importlib import resources

from adaptable.experiments.table_def import CALIBRATOR_OPTION, Row, TableDef

#: our dataset names -> the paper's titles
DATASET_TITLES = {
    "heloc": "HELOC",
    "voting": "Voting",
    "hospital_readmission": "Hospital Readmission",
    "icu_mortality": "ICU Mortality",
    "childhood_lead": "Childhood Lead",
    "diabetes": "Diabetes",
}
#: our scenario names -> the paper's ``shift`` column
SCENARIO_TITLES = {
    "natural": "natural",
    "gaussian": "Gaussian",
    "uniform": "Uniform",
    "random_drop": "Random Drop",
    "column_drop": "Column Drop",
    "numerical": "Numerical",
    "categorical": "Categorical",
    "class_imbalance": "Class Imbalance",
    "temporal": "Temporal Correlation",
}
#: our metric names -> the paper's ``metric`` column
METRIC_TITLES = {"macro_f1": "F1", "balanced_accuracy": "bAcc"}
#: the calibrator value of the oracle study; the runner passes the batch labels to such methods
ORACLE_CALIBRATOR = "oracle_test_labels"

# The paper states AdapTable's total adaptation time on HELOC (MLP) in the text of its
# "Computational efficiency" paragraph (Appendix, Further Analysis): about 1.54 s in total,
# about 0.0002 s per test row. paper_results.csv has no efficiency rows, so they live here.
PAPER_EFFICIENCY = {("heloc", "mlp", "adaptable"): {"adapt_seconds": 1.54, "ms_per_row": 0.2}}


def _mlp_rows(
    methods: tuple[tuple[str, str], ...], model: str = "mlp", paper_model: str = "MLP"
) -> tuple[Row, ...]:
    return tuple(Row(model, name, title, paper_model, title) for name, title in methods)


_TTA = (
    ("source", "Source"),
    ("pl", "PL"),
    ("tent", "TENT"),
    ("eata", "EATA"),
    ("sar", "SAR"),
    ("lame", "LAME"),
    ("adaptable", "AdapTable"),
)
_NO_CALIBRATOR = Row(
    "mlp", "adaptable", "AdapTable w/o calibrator", options=((CALIBRATOR_OPTION, "none"),)
)
#: later peers beyond the paper (no paper value): FTAT (AAAI 2025), on the model or, without its
#: ensemble, on its outputs only, and the online label-shift methods
_PEERS = (
    Row("mlp", "ftat", "FTAT (Zhou et al.)"),
    Row("mlp", "ftat", "FTAT w/o ensemble", options=(("ensemble", False),)),
    Row("mlp", "fth", "FTH (Wu et al.)"),
    Row("mlp", "ogd", "OGD (Wu et al.)"),
    Row("mlp", "flh_ftl", "FLH-FTL (Baby et al.)"),
)
_PEERS_NOTE = "Rows without a paper value (FTAT, FTH, OGD, FLH-FTL) go beyond the paper."
_SUPERVISED = (
    ("knn", "kNN"),
    ("logreg", "LogReg"),
    ("random_forest", "RandomForest"),
    ("xgboost", "XGBoost"),
    ("catboost", "CatBoost"),
)
#: beyond the paper: the stateless balanced rule and the true-prior oracle, on the MLP
_DECISION_RULES = (
    Row("mlp", "adaptable", "AdapTable (default)", options=(("preset", "default"),)),
    Row("mlp", "balanced", "Balanced (p / p_s)"),
    Row("mlp", "oracle_prior", "Oracle prior (test labels)"),
)
_ALL_DATASETS = tuple(DATASET_TITLES)
_THREE = ("heloc", "voting", "childhood_lead")

TABLES: dict[str, TableDef] = {
    "main": TableDef(
        "main",
        "Natural distribution shifts (Table 1): supervised baselines, CatBoost + AdapTable, "
        "MLP with TTA methods",
        "main",
        _ALL_DATASETS,
        ("natural",),
        tuple(Row(m, "source", t, t, t) for m, t in _SUPERVISED)
        + (Row("catboost", "adaptable", "CatBoost+AdapTable", "CatBoost", "CatBoost+AdapTable"),)
        + _mlp_rows((_TTA[0], ("ttt++", "TTT++"), *_TTA[1:]))
        + (
            _NO_CALIBRATOR,
            Row("mlp", "em", "EM (Saerens et al.)"),
            Row("mlp", "bbse", "BBSE (Lipton et al.)"),
        )
        + _PEERS
        + _DECISION_RULES,
        ("macro_f1", "balanced_accuracy"),
        (
            "Rows without a paper value (AdapTable w/o calibrator, EM, BBSE, FTAT, FTH, OGD, "
            "FLH-FTL, Balanced, Oracle prior) go beyond the paper. Oracle prior reads the test "
            "labels (the true target prior): a reference, not a method.",
        ),
    ),
    "corruptions": TableDef(
        "corruptions",
        "Common corruptions (Table 'further common corruptions'), MLP, macro-F1",
        "corruption",
        _THREE,
        ("gaussian", "uniform", "random_drop", "column_drop", "numerical", "categorical"),
        _mlp_rows(_TTA) + _PEERS,
        notes=(_PEERS_NOTE,),
    ),
    "architectures": TableDef(
        "architectures",
        "Other backbones (Table 'further architecture'), macro-F1",
        "architecture",
        _THREE,
        ("natural",),
        _mlp_rows(_TTA, "autoint", "AutoInt")
        + _mlp_rows(_TTA, "resnet", "ResNet")
        + _mlp_rows(_TTA, "ft_transformer", "FT-Transformer"),
    ),
    "label_shift": TableDef(
        "label_shift",
        "Label-distribution shifts (Table 3): class imbalance and temporal correlation, MLP, "
        "macro-F1",
        "label_shift",
        _THREE,
        ("class_imbalance", "temporal"),
        _mlp_rows(_TTA) + _PEERS + _DECISION_RULES,
        ("macro_f1",),
        (
            _PEERS_NOTE,
            "Balanced and Oracle prior go beyond the paper (no paper value); Oracle prior reads "
            "the test labels.",
        ),
    ),
    "calibrator_ablation": TableDef(
        "calibrator_ablation",
        "Calibrator ablation (Table 2): Platt scaling (PS), isotonic regression (IR), ours; "
        "MLP, macro-F1",
        "calibrator_ablation",
        ("heloc", "voting", "hospital_readmission"),
        ("natural",),
        (
            Row("mlp", "source", "Source", "MLP", "Source"),
            Row("mlp", "adaptable", "PS", "MLP", "PS", ((CALIBRATOR_OPTION, "platt"),)),
            Row("mlp", "adaptable", "IR", "MLP", "IR", ((CALIBRATOR_OPTION, "isotonic"),)),
            Row("mlp", "adaptable", "AdapTable", "MLP", "AdapTable"),
            _NO_CALIBRATOR,
        ),
    ),
    "oracle": TableDef(
        "oracle",
        "Oracle calibration (Table 'observation oracle'): a perfectly calibrated model's "
        "uncertainties feed the label distribution handler; MLP",
        "oracle",
        ("heloc", "voting"),
        ("natural",),
        (
            Row("mlp", "source", "Source", "MLP", "Source"),
            Row("mlp", "adaptable", "AdapTable", "MLP", "AdapTable"),
            Row(
                "mlp",
                "adaptable",
                "AdapTable (Oracle)",
                "MLP",
                "AdapTable (Oracle)",
                ((CALIBRATOR_OPTION, ORACLE_CALIBRATOR),),
            ),
        ),  # fmt: skip
        ("macro_f1",),
        (
            "The paper does not say which metric this table reports (its Source values match "
            "neither its F1 nor its bAcc elsewhere); we compare with our macro-F1.",
        ),
    ),
    "efficiency": TableDef(
        "efficiency",
        "Computational efficiency (Figure 'efficiency', left): adaptation time and macro-F1, "
        "MLP on HELOC",
        None,
        ("heloc",),
        ("natural",),
        _mlp_rows((_TTA[0], ("ttt++", "TTT++"), *_TTA[1:]))
        + (
            _NO_CALIBRATOR,
            Row("mlp", "em", "EM"),
            Row("mlp", "bbse", "BBSE"),
            Row("mlp", "balanced", "Balanced"),
        ),
        ("macro_f1", "ms_per_row", "adapt_seconds"),
        (
            "Times are wall-clock on this machine: prediction plus adaptation over the whole "
            "test stream (adapt_seconds) and per test row (ms_per_row); method fitting and "
            "source training are excluded. The paper reports only AdapTable's (1.54 s, "
            "0.0002 s per row, on a GPU).",
        ),
    ),
    "sensitivity": TableDef(
        "sensitivity",
        "Hyperparameter sensitivity (Figure 'efficiency', right): AdapTable's alpha, q_low, "
        "q_high, MLP, macro-F1",
        None,
        # Deliberate difference: the paper uses Childhood Lead only; HELOC is added so that the
        # study runs where Childhood Lead's files are absent.
        ("childhood_lead", "heloc"),
        ("natural",),
        tuple(
            Row("mlp", "adaptable", f"{name} = {value}", options=((name, value),))
            for name, values in (
                ("alpha", (0.0, 0.05, 0.1, 0.2, 0.5)),
                ("q_low", (0.05, 0.1, 0.25, 0.4, 0.5)),
                ("q_high", (0.5, 0.6, 0.75, 0.9, 0.95)),
            )
            for value in values
        ),
        ("macro_f1",),
        (
            "The paper shows this study as a figure without numbers and reports AdapTable as "
            "insensitive to all three; defaults alpha = 0.1, q_low = 0.25, q_high = 0.75.",
        ),
    ),
}


#: the note every paper table carries about which AdapTable it runs
PAPER_PRESET_NOTE = (
    'Every AdapTable row runs the paper\'s algorithm, AdapTable(preset="paper"), except the row '
    '"AdapTable (default)", the recommended adapter (docs/maintainer/method.md, section 7).'
)


def _with_paper_preset(table: TableDef) -> TableDef:
    """The paper's tables run the paper's algorithm: AdapTable rows get ``preset="paper"``
    unless a row names its preset."""
    rows = tuple(
        row
        if row.method != "adaptable" or "preset" in row.option_dict
        else replace(row, options=(("preset", "paper"), *row.options))
        for row in table.rows
    )
    return replace(table, rows=rows, notes=(*table.notes, PAPER_PRESET_NOTE))


TABLES = {name: _with_paper_preset(table) for name, table in TABLES.items()}

#: the paper tables whose deep source models are trained as the authors' code trains them
#: (``adaptable.models.train(recipe="authors")``): the paper's numbers came from that code.
#: ``main`` keeps the default recipe (its committed numbers, and the package's main results,
#: use it); ``efficiency`` and ``sensitivity`` are studies of AdapTable, not of a source model.
AUTHORS_RECIPE_TABLES = (
    "corruptions",
    "architectures",
    "label_shift",
    "calibrator_ablation",
    "oracle",
)
#: the class-imbalance stream as the authors' code draws it (``shifts`` ``convention``), the one
#: that reproduces the paper's class-imbalance numbers (docs/research/paper_fidelity.md)
AUTHORS_STREAMS = (("class_imbalance", (("convention", "authors_code"),)),)
AUTHORS_RECIPE_NOTE = (
    "Deep source models are trained with recipe=\"authors\" (the authors' code's batch order, "
    "which reproduces their HELOC MLPs seed for seed); see docs/research/paper_fidelity.md."
)
AUTHORS_STREAM_NOTE = (
    'Class imbalance is drawn as the authors\' code draws it (convention="authors_code"), the '
    "stream that reproduces the paper's numbers; the paper's formula gives Source about 7 points "
    "higher on HELOC."
)


def _as_authors_ran_it(table: TableDef) -> TableDef:
    streams = tuple(pair for pair in AUTHORS_STREAMS if pair[0] in table.scenarios)
    notes = (*table.notes, AUTHORS_RECIPE_NOTE, *((AUTHORS_STREAM_NOTE,) if streams else ()))
    return replace(table, recipe="authors", shift_options=streams, notes=notes)


TABLES = {
    name: _as_authors_ran_it(table) if name in AUTHORS_RECIPE_TABLES else table
    for name, table in TABLES.items()
}


@functools.cache
def paper_rows() -> tuple[dict[str, str], ...]:
    """Every row of the packaged ``paper_results.csv``."""
    text = resources.files("adaptable.experiments").joinpath("data/paper_results.csv").read_text()
    return tuple(csv.DictReader(io.StringIO(text)))


@functools.cache
def _index() -> dict[tuple[str, str, str, str, str, str], tuple[float, float]]:
    out = {}
    for row in paper_rows():
        key = (
            row["table"],
            row["shift"],
            row["model"],
            row["dataset"],
            row["method"],
            row["metric"],
        )
        out[key] = (float(row["mean"]), float(row["se"]) if row["se"] else float("nan"))
    return out


def paper_value(
    table: str, scenario: str, paper_model: str, dataset: str, paper_method: str, metric: str
) -> tuple[float, float] | None:
    """The paper's (mean, se) in percent, or ``None`` where the paper has no such cell.

    Args:
        table: the CSV's table name (``main``, ``corruption``, ...).
        scenario: our scenario name (``natural``, ``gaussian``, ...).
        paper_model, paper_method: labels as in the paper (``MLP``, ``AdapTable``).
        dataset: our dataset name (``heloc``).
        metric: ``macro_f1`` or ``balanced_accuracy``.
    """
    shift = SCENARIO_TITLES.get(scenario, scenario)
    title = DATASET_TITLES.get(dataset, dataset)
    index = _index()
    for paper_metric in (METRIC_TITLES.get(metric, metric), "unspecified"):
        found = index.get((table, shift, paper_model, title, paper_method, paper_metric))
        if found is not None:
            return found
    return None
