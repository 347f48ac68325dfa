"""The one registry of test-time methods: AdapTable, the TTA baselines and no adaptation.

The experiment runner builds every method through it, so they are all treated alike:

    >>> from adaptable import methods
    >>> methods.names()  # doctest: +NORMALIZE_WHITESPACE
    ['source', 'adaptable', 'pl', 'tent', 'ttt++', 'eata', 'sar', 'lame', 'em', 'bbse', 'ftat',
     'fth', 'ogd', 'flh_ftl', 'balanced', 'oracle_prior', 'labelled_recalibration',
     'labelled_prior', 'labelled_online', 'labelled_patch', 'labelled_refit']
    >>> method = methods.create("tent", lr=1e-4)  # doctest: +SKIP
    >>> method.fit(source_model, X_train, y_train, X_valid, y_valid)  # doctest: +SKIP

Options are passed to the method's constructor unchanged (see each class for its defaults,
which are the paper's settings).
"""

from __future__ import annotations

import importlib
from typing import Any

from adaptable.framework.method import TestTimeMethod
from adaptable.framework.parameters import InvalidParameterError

# name -> (module, class); imported on demand so that asking for one method loads only it.
_REGISTRY: dict[str, tuple[str, str]] = {
    "source": ("adaptable.baselines.source", "SourceOnly"),
    "adaptable": ("adaptable.core", "AdapTable"),
    "pl": ("adaptable.baselines.pl", "PseudoLabel"),
    "tent": ("adaptable.baselines.tent", "Tent"),
    "ttt++": ("adaptable.baselines.tttpp", "TTTPlusPlus"),
    "eata": ("adaptable.baselines.eata", "EATA"),
    "sar": ("adaptable.baselines.sar", "SAR"),
    "lame": ("adaptable.baselines.lame", "LAME"),
    "em": ("adaptable.baselines.em", "EMPriorAdjustment"),
    "bbse": ("adaptable.baselines.bbse", "BBSE"),
    "ftat": ("adaptable.baselines.ftat", "FTAT"),
    "fth": ("adaptable.baselines.online_label_shift", "FollowTheHistory"),
    "ogd": ("adaptable.baselines.online_label_shift", "OnlineGradientDescent"),
    "flh_ftl": ("adaptable.baselines.online_label_shift", "FLHFTL"),
    "balanced": ("adaptable.baselines.decision_rules", "BalancedDecision"),
    # An oracle (reads the test stream's labels): a reference row for tables only.
    "oracle_prior": ("adaptable.baselines.decision_rules", "OraclePrior"),
    # Anchors that use late labels alone (``partial_fit``): reference rows of the feedback table.
    "labelled_recalibration": ("adaptable.baselines.labelled", "LabelledRecalibration"),
    "labelled_prior": ("adaptable.baselines.labelled", "LabelledPrior"),
    "labelled_online": ("adaptable.baselines.labelled", "LabelledOnline"),
    # Anchors that use late labels to update the model: a patch over [log p, x] (any model)
    # and a refit on the source rows plus the labelled target rows (refittable models).
    "labelled_patch": ("adaptable.baselines.labelled_update", "LabelledPatch"),
    "labelled_refit": ("adaptable.baselines.labelled_update", "LabelledRefit"),
}

#: methods that update model parameters and therefore need a torch source model; ``ftat`` does
#: too by default, but ``ftat[ensemble=false]`` works with any model, so it is not listed here
PARAMETER_UPDATING = ("pl", "tent", "ttt++", "eata", "sar")


def names() -> list[str]:
    """Registered method names: the paper's table order, the label-shift classics, the later
    peers (FTAT and the online label-shift methods), the stateless decision rules
    (``balanced``; ``oracle_prior`` reads the test labels), then the anchors that learn from
    late labels (``partial_fit``)."""
    return list(_REGISTRY)


def method_class(name: str) -> type[TestTimeMethod]:
    """The class registered under ``name`` (raises ``ValueError`` for an unknown name)."""
    if name not in _REGISTRY:
        raise ValueError(f"unknown method {name!r}; expected one of {names()}")
    module, attribute = _REGISTRY[name]
    return getattr(importlib.import_module(module), attribute)


def create(name: str, **options: Any) -> TestTimeMethod:
    """A new, unfitted method.

    Args:
        name: one of :func:`names`.
        **options: constructor keywords of that method (e.g. ``lr``, ``steps``, ``alpha``).

    Raises:
        ValueError: unknown name.
        InvalidParameterError: an option of the wrong type or value (names the option).
        TypeError: an option the method does not take.
    """
    cls = method_class(name)
    try:
        return cls(**options)
    except InvalidParameterError:
        raise  # it names the parameter and the method already
    except TypeError as err:
        raise TypeError(f"method {name!r} ({cls.__name__}): bad options {options}: {err}") from err
