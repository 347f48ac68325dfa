"""HELOC (FICO): credit applicants; shift in the external risk estimate (datasets.md 3.1)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from adaptable.datasets._base import (
    DataFormatError,
    PreparedTable,
    ShiftDataset,
    as_category_strings,
    as_declared_int,
    check_row_count,
    find_file,
    narrow_numerics,
    read_csv_checked,
    require_columns,
    require_numbers,
)

TASK = "heloc"
FILES = ["heloc/heloc_dataset_v1.csv", "heloc_dataset_v1.csv"]
OBTAIN = (
    "FICO's 'Explainable Machine Learning Challenge' page on the FICO Community site "
    "(free registration and data-use agreement); save it as heloc/heloc_dataset_v1.csv"
)
RAW_ROWS = 10_459
TARGET = "RiskPerformance"
SPLIT_COLUMN = "ExternalRiskEstimate"
NUMERICAL = [
    "MSinceOldestTradeOpen", "MSinceMostRecentTradeOpen", "AverageMInFile",
    "NumSatisfactoryTrades", "NumTrades60Ever2DerogPubRec", "NumTrades90Ever2DerogPubRec",
    "PercentTradesNeverDelq", "MSinceMostRecentDelq", "NumTotalTrades", "NumTradesOpeninLast12M",
    "PercentInstallTrades", "MSinceMostRecentInqexcl7days", "NumInqLast6M",
    "NumInqLast6Mexcl7days", "NetFractionRevolvingBurden", "NetFractionInstallBurden",
    "NumRevolvingTradesWBalance", "NumInstallTradesWBalance",
    "NumBank2NatlTradesWHighUtilization", "PercentTradesWBalance",
]  # fmt: skip
CATEGORICAL = ["MaxDelq2PublicRecLast12M", "MaxDelqEver"]


def locate(data_dir: Path) -> Path:
    """The raw file (raises DataFileError when absent)."""
    return find_file(data_dir, TASK, FILES, OBTAIN)


def load_heloc(data_dir: Path) -> ShiftDataset:
    """HELOC as AdapTable uses it: in-domain ExternalRiskEstimate <= 63, test > 63.

    Args:
        data_dir: the data directory holding ``heloc/heloc_dataset_v1.csv`` (plain or .gz).

    Raises:
        DataFileError: the file is absent. DataFormatError: wrong columns, row count, labels,
        or a feature / split column holding text, gaps or fractions.
    """
    return prepare_heloc(data_dir).to_dataset()


def prepare_heloc(data_dir: Path) -> PreparedTable:
    """HELOC's whole table before the domain split (see :func:`load_heloc`)."""
    path = locate(data_dir)
    raw = read_csv_checked(path, TASK)
    require_columns(raw, [TARGET, SPLIT_COLUMN, *NUMERICAL, *CATEGORICAL], TASK, path)
    check_row_count(raw, RAW_ROWS, TASK, path)
    # Every HELOC feature, and the split variable, is a whole number in FICO's file (special
    # values are negative codes, never blanks): a gap or a word means an edited or torn file.
    require_numbers(raw, [SPLIT_COLUMN, *NUMERICAL, *CATEGORICAL], TASK, path, whole=True)
    labels = raw[TARGET].astype(str).str.strip()
    unknown = sorted(set(labels) - {"Good", "Bad"})
    if unknown:
        raise DataFormatError(
            f"{path.name} (task {TASK!r}): {TARGET} must be 'Good' or 'Bad'; found {unknown[:5]}."
        )
    target = (labels == "Good").to_numpy().astype(np.int64)
    # The split variable: TableShift's ExternalRiskEstimateLow; training is the LOW-score side
    # (the paper's prose says the opposite; the code, counts and class balance agree on this).
    low_score = (raw[SPLIT_COLUMN] <= 63).to_numpy()

    table = narrow_numerics(raw[[c for c in raw.columns if c in NUMERICAL or c in CATEGORICAL]])
    for col in table.columns:
        table[col] = (
            as_category_strings(table[col]) if col in CATEGORICAL else as_declared_int(table[col])
        )
    return PreparedTable(
        TASK,
        table,
        target,
        ood_mask=~low_score,
        classes=["Bad", "Good"],
        domain_split=(
            "ExternalRiskEstimate <= 63 (in-domain: train/valid) vs > 63 (out-of-domain test)"
        ),
        sources=[str(path)],
    )
