"""What a reproducible table is: (dataset, scenario) cells x rows of (model, method, options),
the metrics it reports, and for a benchmark table how its cases are summed up.

The paper's tables (:mod:`adaptable.experiments.paper`) and the benchmark's
(:mod:`adaptable.experiments.benchmark`) are values of :class:`TableDef`;
:mod:`adaptable.experiments.tables` turns one, with run records, into Markdown and CSV.

>>> table = from_cases("toy", "Toy", [("heloc", "natural"), ("heloc", "prior_0.1")],
...                    (Row("mlp", "source", "Source"),))
>>> table.datasets, table.scenarios, table.cells(["heloc"])[1]
(('heloc',), ('natural', 'prior_0.1'), ('heloc', 'prior_0.1'))
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from adaptable.experiments.spec import DEFAULT_RECIPE, ExperimentSpec

#: the option of ``adaptable.methods.create("adaptable", ...)`` that selects the calibrator
CALIBRATOR_OPTION = "calibrator"


@dataclass(frozen=True)
class Row:
    """One row of a paper table: a (model, method, options) and its labels in the paper.

    ``paper_model`` / ``paper_method`` are ``None`` for rows we add beyond the paper (no paper
    value to compare with).
    """

    model: str
    method: str
    label: str
    paper_model: str | None = None
    paper_method: str | None = None
    options: tuple[tuple[str, Any], ...] = ()

    @property
    def option_dict(self) -> dict[str, Any]:
        """Options as a dict (for ``ExperimentSpec``)."""
        return dict(self.options)


@dataclass(frozen=True)
class Summary:
    """How a benchmark table sums its cases up (instead of the paper's one-column-per-dataset
    layout): every (dataset, scenario, source model) is a case, and each method is compared,
    on per-case means over seeds, with a reference row and with the better of the reference
    and a simple rule.

    Args:
        reference: the method label every row is compared with (e.g. ``"Source"``).
        simple_rule: the label of the one-line rule whose max with the reference is the bar.
        tolerance: points within which a method counts as matching that bar.
        groups: ``(group title, scenarios)`` pairs; the summary is given for all cases and for
            each group's cases.
        goal: (share of cases within ``tolerance`` of the bar, worst difference vs the
            reference) a method should reach, shaded in the table's risk-and-reach figure;
            ``None`` for no goal.
    """

    reference: str
    simple_rule: str
    tolerance: float = 1.5
    groups: tuple[tuple[str, tuple[str, ...]], ...] = ()
    goal: tuple[float, float] | None = None


@dataclass(frozen=True)
class TableDef:
    """A reproducible table: (dataset, scenario) cells x rows, and the metrics it reports.

    The cells are ``datasets x scenarios`` unless ``cases`` lists them explicitly (a benchmark
    whose datasets each have their own scenarios); ``summary`` switches the Markdown layout to
    a summary per method plus one line per case. ``recipe`` is the source models' training
    recipe (``adaptable.models.train(recipe=...)``) and ``shift_options`` maps a scenario to
    its shift's options (``(scenario, ((name, value), ...))`` pairs); both go into every
    experiment of the table (:meth:`spec`).
    """

    name: str
    title: str
    paper_table: str | None
    datasets: tuple[str, ...]
    scenarios: tuple[str, ...]
    rows: tuple[Row, ...]
    metrics: tuple[str, ...] = ("macro_f1",)
    notes: tuple[str, ...] = field(default=())
    cases: tuple[tuple[str, str], ...] = ()
    summary: Summary | None = None
    recipe: str = DEFAULT_RECIPE
    shift_options: tuple[tuple[str, tuple[tuple[str, Any], ...]], ...] = ()

    def cells(self, datasets: Iterable[str] | None = None) -> list[tuple[str, str]]:
        """The (dataset, scenario) cells, in table order, of ``datasets`` (default: all)."""
        chosen = list(self.datasets) if datasets is None else list(datasets)
        if self.cases:
            wanted = set(chosen)
            return [(d, s) for d, s in self.cases if d in wanted]
        return [(d, s) for d in chosen for s in self.scenarios]

    def spec(self, dataset: str, scenario: str, row: Row, seed: int) -> ExperimentSpec:
        """The experiment of one row in one cell for one seed, with the table's recipe and the
        scenario's shift options.

        >>> table = TableDef("t", "T", None, ("heloc",), ("class_imbalance",),
        ...                  (Row("mlp", "source", "Source"),), recipe="authors",
        ...                  shift_options=(("class_imbalance", (("convention", "authors_code"),)),))
        >>> table.spec("heloc", "class_imbalance", table.rows[0], 0).key
        'heloc|class_imbalance|mlp|source|seed=0|recipe=authors|shift={"convention":"authors_code"}'
        """
        return ExperimentSpec(
            dataset,
            scenario,
            row.model,
            row.method,
            seed,
            row.option_dict,
            recipe=self.recipe,
            shift_options=dict(dict(self.shift_options).get(scenario, ())),
        )


def from_cases(
    name: str,
    title: str,
    cases: Iterable[tuple[str, str]],
    rows: tuple[Row, ...],
    **fields: Any,
) -> TableDef:
    """A :class:`TableDef` over an explicit list of (dataset, scenario) cases."""
    cases = tuple(cases)
    return TableDef(
        name,
        title,
        fields.pop("paper_table", None),
        tuple(dict.fromkeys(d for d, _ in cases)),
        tuple(dict.fromkeys(s for _, s in cases)),
        rows,
        cases=cases,
        **fields,
    )
