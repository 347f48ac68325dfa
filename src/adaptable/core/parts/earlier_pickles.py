"""Objects pickled by earlier versions of the package: where their classes live now, the parts
their attributes moved into, and the attributes they lack.

Pickle (and joblib) records an object by its class's module path and its attributes as they
were. Three things change between versions: a module moves, a class gains an attribute, and a
class's attributes are regrouped into parts of their own. Each is answered here, so that no
class carries compatibility code of its own:

- :data:`MOVED_MODULES`: a module path of an earlier version -> where its names live now.
  :func:`install` (called by ``import adaptable.core``) lets the unpickler import the old path.
- :data:`ADDED_ATTRIBUTES`: class name -> attribute -> the value that keeps an object pickled
  before the attribute existed behaving as it did (a callable receives the pickled state).
- :data:`REGROUPED`: class name -> the function that rewrites a state pickled with the class's
  earlier layout into the current one (the drift log's window of records and kept rows, once
  mixins sharing the log's attributes: :func:`drift_log_parts`).
- :data:`GATHERED_PARTS`: class name -> attribute -> the :class:`GatheredPart` built from the
  attributes an object pickled before the part existed held itself (the recommended decider's
  labelled-rows path, once a mixin).

Each class's ``__setstate__`` passes its state through :func:`with_added_attributes`, which
regroups it, gathers its parts, then adds the missing attributes. A later change that moves a module, adds an
attribute to a pickled class or regroups one adds its row here.

Example:
    >>> state = with_added_attributes("LabelledFeedback", {"objective": "macro_f1"})
    >>> state["likelihood_incumbent"]
    False
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import types
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

#: earlier module path -> the module that holds its names now (the regrouping by feature)
MOVED_MODULES: Mapping[str, str] = {
    "adaptable.core.interface": "adaptable.framework.method",
    "adaptable.core.parameters": "adaptable.framework.parameters",
    "adaptable.core.probability": "adaptable.framework.probability",
    "adaptable.core.model_adapter": "adaptable.framework.model_adapter",
    "adaptable.core.fitted_columns": "adaptable.framework.fitted_columns",
    "adaptable.core.deciders": "adaptable.core.parts.decider",
    "adaptable.core.state": "adaptable.core.parts.saved_state",
    "adaptable.core.decision": "adaptable.core.decision.rules",
    "adaptable.core.distinct_rows": "adaptable.core.decision.distinct_rows",
    "adaptable.core.class_presence": "adaptable.core.decision.class_presence",
    "adaptable.core.shift_trend": "adaptable.core.paper.shift_trend",
    "adaptable.core.graph_network": "adaptable.core.paper.graph_network",
    "adaptable.core.post_training": "adaptable.core.paper.post_training",
    "adaptable.core.kernel": "adaptable.core.paper.graph_numpy_forward",
    "adaptable.core.graph_calibrator": "adaptable.core.paper.graph_calibrator",
    "adaptable.core.calibrators": "adaptable.core.paper.calibrators",
    "adaptable.core.label_handler": "adaptable.core.paper.label_handler",
    "adaptable.core.paper_decider": "adaptable.core.paper.paper_decider",
    "adaptable.core.feedback": "adaptable.core.labels",
    "adaptable.core.feedback.reservoir": "adaptable.core.labels.reservoir",
    "adaptable.core.feedback.prior": "adaptable.core.labels.label_prior",
    "adaptable.core.feedback.rules": "adaptable.core.labels.rule_choice",
    "adaptable.core.feedback.correction": "adaptable.core.labels.score_correction",
    "adaptable.core.feedback.learner": "adaptable.core.labels.labelled_choice",
    "adaptable.core.drift_report": "adaptable.core.report.drift_log",
    "adaptable.core.drift_log_state": "adaptable.core.report.record_window",
    "adaptable.core.drift_log_rows": "adaptable.core.report.kept_rows",
    "adaptable.core.drift_summary": "adaptable.core.report.drift_summary",
    "adaptable.core.heldout_estimate": "adaptable.core.report.heldout_estimate",
    "adaptable.core.label_corrected": "adaptable.core.report.label_corrected_estimate",
    "adaptable.core.recommended_decider": "adaptable.core.recommended.recommended_decider",
    "adaptable.core.recommended_labelled": "adaptable.core.recommended.labelled_rows",
    "adaptable.core.label_shift": "adaptable.core.recommended.moment_test",
    "adaptable.core.prior_estimate": "adaptable.core.recommended.prior_estimate",
    "adaptable.core.label_shift_reading": "adaptable.core.recommended.label_shift_estimate",
    "adaptable.core.reading_bound": "adaptable.core.recommended.estimate_bound",
    "adaptable.core.serialization": "adaptable.core.persistence.save_file",
    "adaptable.core.late_labels": "adaptable.core.label_intake",
    # the drift log's parts, once mixins, each an object of its own
    "adaptable.core.report.log_storage": "adaptable.core.report.record_window",
    "adaptable.core.report.row_labels": "adaptable.core.report.kept_rows",
}

#: the report's window when a log or an adapter was pickled before it had one (records kept
#: since then are bounded by this many batches; equal to the report's ``REPORT_BATCHES``)
EARLIER_REPORT_BATCHES = 1 << 14

#: class name -> attribute -> its value for an object pickled before the attribute existed
ADDED_ATTRIBUTES: Mapping[str, Mapping[str, Any]] = {
    "AdapTable": {
        # before fit kept the columns, batches were read as given
        "columns_": None,
        # before the report's window, every batch's record was kept
        "report_batches": EARLIER_REPORT_BATCHES,
        # before prior_reference, label shift was read against p_s
        "prior_reference": "labels",
        # before per-column drift, none was kept
        "feature_monitor_": None,
        # before the model updates, labels re-weighted the frozen model only
        "update": "none",
        "update_in_background": False,
        "updates_": None,
    },
    "RecommendedDecider": {
        "report_batches": EARLIER_REPORT_BATCHES,
        "prior_reference": "labels",
    },
    "LabelledFeedback": {
        # before the likelihood incumbent, the labels' rule choice started from the reading
        "likelihood_incumbent": False,
    },
    "DriftLog": {
        # before the covariate-shift estimate, no features were kept: an empty sample, which
        # leaves that estimate unread
        "_sample": lambda state: _empty("adaptable.core.report.feature_sample", "FeatureSample"),
    },
}

#: a DriftLog's attributes that its earlier layout (the window of records and the kept rows as
#: mixins, their attributes on the log) gained over time, as :data:`ADDED_ATTRIBUTES`
DRIFT_LOG_MIXINS_ADDED: Mapping[str, Any] = {
    # before labels were kept by row id, none were
    "_given": {},
    # before the report could forget records, none were forgotten
    "dropped": 0,
    "max_batches": EARLIER_REPORT_BATCHES,
    # the first row ids were kept from the first kept record on
    "_start_base": lambda state: state.get("dropped", 0),
}

#: the parts of a DriftLog: its attribute -> the part's class, as the unpickler finds it
DRIFT_LOG_PARTS: Mapping[str, tuple[str, str]] = {
    "_records": ("adaptable.core.report.record_window", "RecordWindow"),
    "_rows": ("adaptable.core.report.kept_rows", "KeptRows"),
}

#: a DriftLog's attribute in the earlier layout -> the part that holds it now, and its name
#: there; the attributes not listed stay on the log (``n_classes`` also goes to every part)
DRIFT_LOG_MOVED: Mapping[str, tuple[str, str]] = {
    "_batches": ("_records", "records"),
    "dropped": ("_records", "dropped"),
    "max_batches": ("_records", "max_batches"),
    "_pending": ("_records", "pending"),
    "_pending_rows": ("_records", "pending_rows"),
    "n_rows": ("_rows", "n_rows"),
    "prediction_rows": ("_rows", "prediction_rows"),
    "_oldest": ("_rows", "oldest"),
    "_kept": ("_rows", "kept"),
    "_predictions": ("_rows", "codes"),
    "_logits": ("_rows", "logits"),
    "_believed": ("_rows", "believed"),
    "_given": ("_rows", "given"),
    # the first row id of each batch from batch ``_start_base`` on; the start is at most the
    # oldest kept batch, as the kept rows' own buffer requires
    "_start_buffer": ("_rows", "_starts"),
    "_start_base": ("_rows", "_starts_from"),
}


def drift_log_parts(state: dict[str, Any]) -> dict[str, Any]:
    """A DriftLog's state pickled with the earlier layout (recognised by ``_batches``, the
    records then held by the log itself) rewritten with the log's parts
    (:data:`DRIFT_LOG_PARTS`), each holding its attributes (:data:`DRIFT_LOG_MOVED`); a
    state of the current layout unchanged."""
    if "_batches" not in state:
        return state
    state = _filled(DRIFT_LOG_MIXINS_ADDED, state)
    parts: dict[str, dict[str, Any]] = {
        part: {"n_classes": state["n_classes"]} for part in DRIFT_LOG_PARTS
    }
    log: dict[str, Any] = {}
    for name, value in state.items():
        if name in DRIFT_LOG_MOVED:
            part, attribute = DRIFT_LOG_MOVED[name]
            parts[part][attribute] = value
        else:
            log[name] = value
    # the kept rows count the batches themselves; the log read them off its records
    parts["_rows"]["n_batches"] = state["dropped"] + len(state["_batches"])
    for part, attributes in parts.items():
        log[part] = _instance(*DRIFT_LOG_PARTS[part], attributes)
    return log


#: class name -> the function that rewrites a state of its earlier layout into the current one
REGROUPED: Mapping[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "DriftLog": drift_log_parts,
}


@dataclass(frozen=True)
class GatheredPart:
    """A part that took over attributes its owner held itself in an earlier version (a mixin).

    Attributes:
        part: the part's class, ``"module:Class"`` (imported when an earlier pickle needs it:
            the part may live in a higher layer than this module).
        moved: the part's attribute -> the owner's earlier attribute it takes over (removed
            from the owner).
        shared: the part's attribute -> the owner's attribute it is given as well (kept by the
            owner; the same object).
    """

    part: str
    moved: Mapping[str, str]
    shared: Mapping[str, str] = field(default_factory=dict)


#: class name -> attribute now holding a part -> how an object pickled before that part existed
#: builds it from its own attributes
GATHERED_PARTS: Mapping[str, Mapping[str, GatheredPart]] = {
    "RecommendedDecider": {
        # the labelled-rows path, a mixin of the decider before it was a part of its own
        "labelled": GatheredPart(
            "adaptable.core.recommended.labelled_rows:LabelledRows",
            moved={
                "feedback": "feedback",
                "drift_log": "drift_log",
                "_worth_cache": "_worth_cache",
            },
            shared={"source_prior": "source_prior_", "objective": "objective"},
        ),
    },
}


def with_added_attributes(class_name: str, state: dict[str, Any]) -> dict[str, Any]:
    """``state`` (a pickled ``__dict__``) in the class's current layout (:data:`REGROUPED`,
    :data:`GATHERED_PARTS`),
    with every attribute that ``class_name`` gained since it was pickled set to the value that
    keeps the object behaving as it did (:data:`ADDED_ATTRIBUTES`).

    Args:
        class_name: a key of those tables (another name: ``state`` unchanged).
        state: the unpickled attribute dictionary.

    Returns:
        a new dictionary; attributes present in ``state`` are kept as they are (or moved to
        the part that holds them now).
    """
    regroup = REGROUPED.get(class_name)
    if regroup is not None:
        state = regroup(state)
    state = _with_gathered_parts(class_name, state)
    return _filled(ADDED_ATTRIBUTES.get(class_name, {}), state)


def _filled(added: Mapping[str, Any], state: dict[str, Any]) -> dict[str, Any]:
    """``state`` with the attributes of ``added`` it lacks (a callable receives ``state``)."""
    missing = {
        name: value(state) if isinstance(value, Callable) else _fresh(value)
        for name, value in added.items()
        if name not in state
    }
    return {**state, **missing}


def _with_gathered_parts(class_name: str, state: dict[str, Any]) -> dict[str, Any]:
    """``state`` with each part of :data:`GATHERED_PARTS` built from the attributes it took
    over; a state that already holds the part, or holds none of them (an unfitted object),
    is left as it is."""
    state = dict(state)
    for name, gathered in GATHERED_PARTS.get(class_name, {}).items():
        if name in state or not any(old in state for old in gathered.moved.values()):
            continue
        attributes = {new: state.pop(old) for new, old in gathered.moved.items() if old in state}
        attributes |= {new: state[old] for new, old in gathered.shared.items()}
        module, _, class_path = gathered.part.partition(":")
        state[name] = _instance(module, class_path, attributes)
    return state


def _instance(module: str, class_name: str, attributes: dict[str, Any]) -> Any:
    """An object of the class ``class_name`` of ``module`` with ``attributes``, made as the
    unpickler makes it (the class found by its path, so that this lower layer imports none of
    the classes it builds)."""
    cls = getattr(importlib.import_module(module), class_name)
    instance = cls.__new__(cls)
    setstate = getattr(instance, "__setstate__", None)
    if setstate is not None:
        setstate(attributes)
    else:
        instance.__dict__.update(attributes)
    return instance


def _empty(module: str, class_name: str) -> Any:
    """A new object of the class ``class_name`` of ``module``, built with no arguments (the
    class found by its path, as :func:`_instance` finds it)."""
    return getattr(importlib.import_module(module), class_name)()


def _fresh(value: Any) -> Any:
    # a mutable default must not be shared between objects
    return type(value)() if isinstance(value, dict | list | set) and not value else value


class _MovedModuleFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports an earlier module path as a stand-in whose names are read from the new module."""

    def find_spec(
        self, fullname: str, path: Any = None, target: Any = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in MOVED_MODULES:
            return None
        return importlib.machinery.ModuleSpec(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        module = types.ModuleType(spec.name, f"Moved to {MOVED_MODULES[spec.name]}.")
        current = importlib.import_module(MOVED_MODULES[spec.name])
        # a stand-in, not the module itself: the module keeps its own name, so objects
        # pickled from now on record where their classes live now
        module.__getattr__ = lambda name: getattr(current, name)  # type: ignore[method-assign]
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        return None


_FINDER = _MovedModuleFinder()


def install() -> None:
    """Let earlier module paths be imported (by the unpickler); idempotent."""
    if _FINDER not in sys.meta_path:
        sys.meta_path.append(_FINDER)
