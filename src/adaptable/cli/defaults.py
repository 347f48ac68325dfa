"""What the commands run where an option is left out."""

#: the main job's defaults: the embedded dataset, the MLP, and methods that finish in minutes
DEFAULT_DATASETS = ["hospital_readmission"]
DEFAULT_MODELS = ["mlp"]
# The main job: no adaptation, the one-line balanced rule, the recommended adapter, the paper's
# AdapTable, the label-shift classics and an online one, TENT, and the oracle-prior reference.
# LAME is left out: its affinity matrix makes it the slowest output-only method;
# `--methods ... lame` adds it.
DEFAULT_METHODS = [
    "source",
    "balanced",
    "adaptable",
    "adaptable[preset=paper]",
    "em",
    "bbse",
    "fth",
    "tent",
    "oracle_prior",
]
#: the methods of ``run --feedback`` without ``--methods``: of the main job's methods only the
#: recommended adapter learns from late labels (the paper preset and the others take none)
FEEDBACK_METHODS = ["adaptable"]
DEFAULT_RESULTS = "adaptable-results/results.jsonl"
#: what ``plot``'s list options fall back to when they held figure names alone
PLOT_DEFAULTS = {"datasets": DEFAULT_DATASETS, "models": DEFAULT_MODELS, "method": ["adaptable"]}
