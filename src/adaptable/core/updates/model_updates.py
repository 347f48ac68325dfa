"""Model updates beside the adapted decision: when labels come back, the model is refitted or
patched too, and the labels' honest record chooses which output the stream gets.

:class:`ModelUpdates` is the default preset's part behind ``AdapTable(update=...)``:

- it keeps, by row id, the rows of the last batches (as the model reads them) and the class
  the adapted decision predicted for each, so that labels sent later with ``rows=`` find them;
- the labelled rows (a bounded uniform sample), with the model's logits;
- on a schedule in labels (the first update at :attr:`ModelUpdates.SETTINGS` ``min_labelled``
  labels, then each time the labelled count has doubled) it fits the candidates:
  ``"refit"`` (a copy of the model fitted on its training rows, at most ``max_source_rows`` of
  them, plus the labelled target rows) where the model can be refitted, and ``"patch"`` (a
  correction over the model's log-posteriors and the encoded features fitted on the labelled
  rows alone), each deciding for the objective by class weights computed over its posteriors of
  the labelled rows (a sample of the stream that a save file can do without: once labels have
  come, ``save`` refuses, so a loaded adapter continues as the saved one would);
- each labelled row is scored when its label arrives, by every candidate that has not seen it
  (:mod:`~adaptable.core.updates.prequential`): the adapted decision by what it predicted, an
  update by what it predicts now; the output switches from the adapted decision to an update,
  or back, only on strong evidence of that record.

``update="auto"`` fits both where the model can be refitted (the patch alone otherwise);
``"refit"`` and ``"patch"`` fit one; ``"none"`` builds no part at all (the adapter of
earlier versions). Without labels nothing is fitted and the output is the adapted decision's.

Fits run where the labels are given, or, with ``background=True``, in a worker thread: the
stream then goes on with the candidates fitted before, and the new ones are swapped in at the
start of the first batch after the fit ends (so ``predict_proba`` never waits on a fit; which
batch sees the swap then depends on timing).

Example:
    >>> import numpy as np
    >>> from sklearn.linear_model import LogisticRegression
    >>> from adaptable import AdapTable
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(400, 2)); y = (X[:, 0] > 0).astype(int)
    >>> adapter = AdapTable(random_state=0).fit(LogisticRegression().fit(X, y), X, y, X, y)
    >>> Xt = rng.normal(size=(640, 2)); yt = (Xt[:, 1] > 0).astype(int)  # the concept moved
    >>> for start in range(0, 640, 64):
    ...     rows = np.arange(start, start + 64)  # the ids let the labels score the candidates
    ...     _ = adapter.predict_proba(Xt[rows])
    ...     _ = adapter.partial_fit(Xt[rows], yt[rows], rows=rows)
    >>> adapter.updates_.in_use
    'patch'
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import warnings
from collections import deque
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple

import numpy as np
import pandas as pd

from adaptable.core.updates.candidates import (
    CANDIDATES,
    FittedCandidate,
    LabelledSnapshot,
    UpdateSource,
    fit_candidate,
)
from adaptable.core.updates.prequential import PrequentialRecord
from adaptable.core.updates.refit import refit_refusal, source_sample
from adaptable.core.updates.row_tables import TableReservoir, as_table, concat_tables, take_rows

if TYPE_CHECKING:
    from adaptable.core.parts.decider import Decision
    from adaptable.encoding import EncodedBatch, Encoder

#: the values of ``AdapTable(update=...)``
MODES = ("auto", "refit", "patch", "none")
#: the adapted decision's name among the candidates
ADAPTED = "adapted"


class FitRecord(NamedTuple):
    """One fit of an update: which, on how many labelled rows, and how long it took."""

    name: str
    n_labelled: int
    seconds: float


@dataclasses.dataclass
class _KeptBatch:
    """One adapted batch, kept for labels that come later by row id."""

    first_row: int
    number: int  # the batch's number in the stream
    rows: Any  # the batch as the model read it (None: adapted on logits alone)
    logits: np.ndarray
    adapted: np.ndarray  # the adapted decision's class codes
    labelled: np.ndarray  # whether each row's label has come


class ModelUpdates:
    """The model updates of one adapter (see the module docstring).

    Args:
        mode: ``"auto"``, ``"refit"`` or ``"patch"`` (``"none"`` builds no part).
        objective: the metric decided for.
        n_classes: C.
        seed: seeds the samples, the patch's folds and the bootstrap.
        background: fit in a worker thread.

    Attributes:
        names: the candidates compared: ``"adapted"`` and the updates fitted.
        in_use: the candidate whose output the stream gets now.
        fitted: the latest fitted update of each name (derived from the kept versions).
        history: each fit (:class:`FitRecord`).
        switches: (batch number, candidate) at each change of ``in_use``.
        refusal: why the model is not refitted (``None``: it is, or not asked for).
    """

    #: when the updates are fitted (labels), what they keep (rows) and how the record chooses
    SETTINGS: ClassVar[dict[str, float]] = {
        "min_labelled": 20,
        "growth": 2.0,
        "max_source_rows": 20_000,
        "labelled_capacity": 2048,
        "kept_rows": 65_536,
        "window": 2000,
        "min_rows": 30,
        "evidence": 0.95,
    }

    def __init__(
        self, mode: str, *, objective: str, n_classes: int, seed: int, background: bool = False
    ) -> None:
        if mode not in MODES or mode == "none":
            raise ValueError(f"update must be one of {MODES[:-1]} here; got {mode!r}.")
        self.mode, self.objective, self.n_classes = mode, objective, int(n_classes)
        self.seed, self.background = int(seed), bool(background)
        self.source = UpdateSource(None, None, None, None, "auto", self.n_classes)
        self.refusal: str | None = None
        self.names = [ADAPTED]
        self.reset()

    # ------------------------------------------------------------------ fit
    def fit(
        self, model: Any, X: Any, labels: np.ndarray | None, encoder: Encoder | None, output: str
    ) -> ModelUpdates:
        """What the updates keep of ``fit``: the model, a sample of its training rows ``X``
        with their label codes ``labels`` (``None``: none given), and the patch's Encoder.

        A model that cannot be refitted leaves the patch alone (``update="refit"`` warns)."""
        wanted = [name for name in CANDIDATES if self.mode in ("auto", name)]
        has_rows = X is not None and labels is not None and model is not None
        self.refusal = refit_refusal(model, has_rows=has_rows) if "refit" in wanted else None
        kept_X = kept_labels = None
        if "refit" in wanted and self.refusal is None:
            keep = source_sample(labels, int(self.SETTINGS["max_source_rows"]), self.seed)
            kept_X, kept_labels = take_rows(as_table(X), keep), labels[keep]
        elif "refit" in wanted:
            wanted = ["patch"]
            if self.mode == "refit":
                warnings.warn(
                    f"adaptable: update='refit' cannot refit the model ({self.refusal}); the "
                    "patch stands in.",
                    UserWarning,
                    stacklevel=4,
                )
        self.source = UpdateSource(
            model if kept_X is not None else None, kept_X, kept_labels, encoder, output,
            self.n_classes,
        )  # fmt: skip
        self.names = [ADAPTED, *wanted]
        self.reset()
        return self

    def reset(self) -> None:
        """Forget the stream: its rows, labels, fitted updates and record."""
        self._wait()
        self._batches: deque[_KeptBatch] = deque()
        self._kept_count = 0
        self.n_rows = 0
        self.n_batches = 0
        self._first_kept = 0
        settings = self.SETTINGS
        self._labelled = TableReservoir(
            int(settings["labelled_capacity"]), self.seed + 7, width=self.n_classes
        )
        self.record = PrequentialRecord(self.names, self.n_classes, int(settings["window"]))
        #: each fit: (candidate, labelled rows, seconds), the fitted models not kept
        self.history: list[FitRecord] = []
        #: each update's fitted versions, with the batch from which each was in use (the last
        #: is the one in use now: :attr:`fitted`)
        self._versions: dict[str, list[tuple[int, FittedCandidate]]] = {}
        self.in_use = ADAPTED
        self.switches: list[tuple[int, str]] = []
        self._next_update = int(settings["min_labelled"])
        self._pending: concurrent.futures.Future[dict[str, FittedCandidate]] | None = None
        self._fit_due = False
        self._failed: set[str] = set()

    @property
    def fitted(self) -> dict[str, FittedCandidate]:
        """The latest fitted version of each update (none before its first fit)."""
        return {name: versions[-1][1] for name, versions in self._versions.items() if versions}

    @property
    def fitting(self) -> bool:
        """Whether a background fit is under way."""
        return self._pending is not None and not self._pending.done()

    @property
    def n_labelled(self) -> int:
        """Labelled rows received since fit / reset."""
        return self._labelled.n_seen

    # ------------------------------------------------------------------ one batch
    def amend(
        self, rows: Any, logits: np.ndarray, encoded: EncodedBatch | None, decision: Decision
    ) -> Decision:
        """The batch's output: the adapted ``decision``, or the update in use's where one is
        (its rule named ``"update:<name>"``); the batch kept for later labels.

        Args:
            rows: the batch as the model read it (``None``: adapted on logits alone; the
                updates then leave it to the adapted decision).
            logits: the model's logits of the batch, (n, C).
            encoded: the batch as the adapter's Encoder encoded it (``None``: not encoded).
            decision: the adapted decision.
        """
        self._collect()
        adapted = decision.proba.argmax(axis=1).astype(np.int16)
        self._keep(rows, logits, adapted)
        self.n_batches += 1
        versions = self._versions.get(self.in_use)
        chosen = versions[-1][1] if versions else None
        if chosen is None or rows is None:
            return decision
        return dataclasses.replace(
            decision, proba=chosen.proba(rows, logits, encoded), rule=f"update:{self.in_use}"
        )

    def _keep(self, rows: Any, logits: np.ndarray, adapted: np.ndarray) -> None:
        n = len(logits)
        batch = _KeptBatch(
            self.n_rows, self.n_batches, rows, logits, adapted, np.zeros(n, dtype=bool)
        )
        self._batches.append(batch)
        self._kept_count += n
        self.n_rows += n
        limit = int(self.SETTINGS["kept_rows"])
        while self._kept_count - len(self._batches[0].adapted) >= limit:
            self._kept_count -= len(self._batches.popleft().adapted)

    # ------------------------------------------------------------------ labels
    def learn(
        self,
        X: Any,
        codes: np.ndarray,
        ids: np.ndarray | None,
        logits: np.ndarray,
        earlier: np.ndarray | None = None,
    ) -> None:
        """Labelled rows: scored by each candidate that has not seen them, then learnt from;
        the updates refitted when the schedule says, and the candidate in use chosen again.

        Args:
            X: the rows as the model reads them, or ``None``: the rows kept for ``ids``.
            codes: their labels, codes 0..C-1, (n,).
            ids: their row ids in the stream (``None``: not known; such rows are learnt from
                but not scored, as the adapted decision's prediction of them is not known).
            logits: the model's logits of the rows, (n, C).
            earlier: the classes the report holds as predicted for ``ids`` (-1: none), read
                for rows predicted before this part kept any (an adapter loaded mid-stream).
        """
        self._collect()
        if ids is not None:
            adapted, fresh, tables, numbers = self._kept(ids, earlier)
            if X is None:
                if tables is None:
                    self._warn_featureless()
                    return
                X = tables
            if not fresh.all():
                keep = np.flatnonzero(fresh)
                X, codes, logits = take_rows(X, keep), codes[keep], logits[keep]
                adapted, numbers = adapted[keep], numbers[keep]
            if not len(codes):
                return
            scored = adapted >= 0
            if scored.any():
                part = np.flatnonzero(scored)
                self._score(
                    take_rows(X, part), codes[part], logits[part], adapted[part], numbers[part]
                )
        elif X is None:
            return
        self._labelled.add(as_table(X), codes, logits)
        if self._labelled.n_seen >= self._next_update and len(self.names) > 1:
            n = self._labelled.n_seen
            self._next_update = max(n + 1, int(np.ceil(n * self.SETTINGS["growth"])))
            self._start_fit()
        self._choose()

    def resume(self, n_rows: int, n_batches: int) -> None:
        """Continue a stream of ``n_rows`` rows in ``n_batches`` batches whose rows this part
        did not keep (an adapter loaded mid-stream): later batches' ids follow on."""
        self.n_rows, self.n_batches = int(n_rows), int(n_batches)
        self._first_kept = self.n_rows

    def kept_from(self, ids: np.ndarray) -> bool:
        """Whether every row of ``ids`` was predicted since this part started keeping rows
        (else :meth:`learn` reads the report's predictions of the earlier ones)."""
        return not len(ids) or int(np.min(ids)) >= getattr(self, "_first_kept", 0)

    def _kept(
        self, ids: np.ndarray, earlier: np.ndarray | None
    ) -> tuple[np.ndarray, np.ndarray, Any, np.ndarray]:
        """For rows ``ids``: the adapted decision's classes (-1: not known), whether each
        label is new here, the kept rows as one table (``None`` where some are not kept), and
        the number of the batch each was predicted in (-1: not kept); the rows are marked
        labelled."""
        n = len(ids)
        adapted = np.full(n, -1, dtype=np.int64)
        numbers = np.full(n, -1, dtype=np.int64)
        fresh = np.ones(n, dtype=bool)
        if earlier is not None:
            adapted[:] = earlier
        pieces: list[Any] = []
        order: list[np.ndarray] = []
        complete = True
        firsts = np.array([b.first_row for b in self._batches], dtype=np.int64)
        where = np.searchsorted(firsts, ids, side="right") - 1
        for index in np.unique(where):
            part = np.flatnonzero(where == index)
            if index < 0:
                complete = False
                continue
            batch = self._batches[int(index)]
            offsets = ids[part] - batch.first_row
            adapted[part] = batch.adapted[offsets]
            numbers[part] = batch.number
            fresh[part] = ~batch.labelled[offsets]
            batch.labelled[offsets] = True
            if batch.rows is None:
                complete = False
            else:
                pieces.append(take_rows(batch.rows, offsets))
                order.append(part)
        if not complete or not pieces:
            return adapted, fresh, None, numbers
        table = concat_tables(pieces)
        position = np.empty(n, dtype=np.int64)
        position[np.concatenate(order)] = np.arange(n)
        return adapted, fresh, take_rows(table, position), numbers

    def _warn_featureless(self) -> None:
        if not getattr(self, "_warned_featureless", False):
            self._warned_featureless = True
            warnings.warn(
                "adaptable: labels came by row id for rows whose features the model updates "
                "do not hold (rows predicted before a load, or adapted from logits alone); "
                "the updates learn nothing from them. Pass the rows too: "
                "partial_fit(X, y, rows=...).",
                UserWarning,
                stacklevel=5,
            )

    def _score(
        self,
        X: Any,
        codes: np.ndarray,
        logits: np.ndarray,
        adapted: np.ndarray,
        numbers: np.ndarray,
    ) -> None:
        """Each candidate's prediction of labelled rows as it stood when each row was adapted
        (batch ``numbers``; -1: a row predicted before a load, when no update was fitted): the
        adapted decision's then, and the version of each update in use then (none before its
        first fit), so that no candidate's record reads labels that came after the row's
        prediction."""
        predictions = np.full((len(self.names), len(codes)), -1, dtype=np.int64)
        predictions[0] = adapted
        for k, name in enumerate(self.names[1:], start=1):
            versions = self._versions.get(name, [])
            if not versions:
                continue
            starts = np.array([start for start, _ in versions])
            which = np.searchsorted(starts, numbers, side="right") - 1
            which[numbers < 0] = -1  # (before a load: no update was fitted, save refuses)
            for v in np.unique(which[which >= 0]):
                part = np.flatnonzero(which == v)
                predictions[k, part] = versions[int(v)][1].codes(take_rows(X, part), logits[part])
        self.record.add(codes, predictions)

    def _choose(self) -> None:
        settings = self.SETTINGS
        chosen = self.record.choose(
            self.in_use, self.objective, min_rows=int(settings["min_rows"]),
            evidence=float(settings["evidence"]), seed=self.seed,
        )  # fmt: skip
        if chosen != self.in_use and (chosen == ADAPTED or self._versions.get(chosen)):
            self.in_use = chosen
            self.switches.append((self.n_batches, chosen))

    # ------------------------------------------------------------------ fits
    def _snapshot(self) -> LabelledSnapshot:
        labelled = self._labelled
        return LabelledSnapshot(labelled.rows(), labelled.labels.copy(), labelled.values.copy())

    def _start_fit(self) -> None:
        if self._pending is not None:
            # a background fit is under way: the next starts when it ends, on the labels
            # there are then (a caller never waits on a fit)
            self._fit_due = True
            return
        names = [n for n in self.names[1:] if n not in self._failed]
        snapshot = self._snapshot()
        if not self.background:
            self._swap(self._fit_all(names, snapshot))
            return
        executor = concurrent.futures.ThreadPoolExecutor(max_workers=1)
        self._pending = executor.submit(self._fit_all, names, snapshot)
        executor.shutdown(wait=False)

    def _fit_all(self, names: list[str], snapshot: LabelledSnapshot) -> dict[str, Any]:
        fitted: dict[str, Any] = {}
        for name in names:
            try:
                fitted[name] = fit_candidate(name, snapshot, self.source, self.objective, self.seed)
            except Exception as err:  # noqa: BLE001 - any failure of the user's fit
                fitted[name] = err
        return fitted

    def _swap(self, fitted: dict[str, Any]) -> None:
        for name, candidate in fitted.items():
            if isinstance(candidate, Exception):
                self._failed.add(name)
                self._versions.pop(name, None)
                warnings.warn(
                    f"adaptable: the model update {name!r} failed ({candidate!r}); it is left "
                    "out from now on.",
                    UserWarning,
                    stacklevel=5,
                )
                if self.in_use == name:
                    self.in_use = ADAPTED
                    self.switches.append((self.n_batches, ADAPTED))
                continue
            self.history.append(FitRecord(name, candidate.n_labelled, candidate.seconds))
            self._versions.setdefault(name, []).append((self.n_batches, candidate))
        self._forget_versions()

    def _forget_versions(self) -> None:
        """Drop the versions no kept batch was predicted under (all but the latest before the
        oldest kept batch)."""
        oldest = self._batches[0].number if self._batches else self.n_batches
        for versions in self._versions.values():
            while len(versions) > 1 and versions[1][0] <= oldest:
                versions.pop(0)

    def _collect(self) -> None:
        """Swap in a background fit that has ended, and start one that waited for it."""
        if self._pending is not None and self._pending.done():
            pending, self._pending = self._pending, None
            self._swap(pending.result())
        if self._pending is None and self._fit_due:  # a fit that waited for the last one
            self._fit_due = False
            self._start_fit()

    def _wait(self) -> None:
        """End a background fit under way (its candidates swapped in)."""
        pending = getattr(self, "_pending", None)
        if pending is not None:
            self._pending = None
            self._swap(pending.result())

    # ------------------------------------------------------------------ what it shows
    def summary(self) -> pd.DataFrame:
        """One row per candidate: whether it is in use, the labels of its latest fit, the
        seconds that fit took, its prequential score and the rows behind it."""
        scores, latest = self.record.scores(self.objective), self.fitted
        rows = []
        for name in self.names:
            fitted = latest.get(name)
            value, n = scores[name]
            rows.append({
                "candidate": name,
                "in_use": name == self.in_use,
                "fitted_on": None if fitted is None else fitted.n_labelled,
                "fit_seconds": None if fitted is None else fitted.seconds,
                f"prequential_{self.objective}": value,
                "scored_rows": n,
            })  # fmt: skip
        return pd.DataFrame(rows)

    def __getstate__(self) -> dict[str, Any]:
        # a fit under way ends first, so that the pickle holds what the stream will use
        self._wait()
        return self.__dict__.copy()
