"""The runner's public names, from the modules that now hold them.

Scripts outside the package (the benchmarks among them) import these from here; the package's
own modules import from :mod:`~adaptable.experiments.components` (providers, run context,
per-process memo), :mod:`~adaptable.experiments.experiment` (one experiment),
:mod:`~adaptable.experiments.late_labels` (the feedback protocol) and
:mod:`~adaptable.experiments.sweep` (sweeps against a results store).
"""

from adaptable.experiments.components import (
    DEVICES,
    Components,
    RunContext,
    clear_memo,
    fold_case,
    get_dataset,
    incompatible_pairs,
    lookup_device,
    prepare_source,
    source_model,
    torch_only_reason,
    unknown_names,
)
from adaptable.experiments.experiment import (
    RECORD_VERSION,
    BatchOutcome,
    FittedExperiment,
    fit_experiment,
    method_state,
    needs_test_labels,
    predict_stream,
    run_experiment,
    shifted_stream,
    uses_test_labels,
)
from adaptable.experiments.late_labels import LateLabels, take_rows
from adaptable.experiments.process import seed_method
from adaptable.experiments.sweep import SweepResult, run_sweep, stored_only

__all__ = [
    "DEVICES",
    "RECORD_VERSION",
    "BatchOutcome",
    "Components",
    "FittedExperiment",
    "LateLabels",
    "RunContext",
    "SweepResult",
    "clear_memo",
    "fit_experiment",
    "fold_case",
    "get_dataset",
    "incompatible_pairs",
    "lookup_device",
    "method_state",
    "needs_test_labels",
    "predict_stream",
    "prepare_source",
    "run_experiment",
    "run_sweep",
    "seed_method",
    "shifted_stream",
    "source_model",
    "stored_only",
    "take_rows",
    "torch_only_reason",
    "unknown_names",
    "uses_test_labels",
]
