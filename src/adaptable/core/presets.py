"""The presets: which decider ``AdapTable(preset=...)`` builds, and every part's parameters.

The only place the preset is looked up. :data:`DECIDERS` maps each preset to its decider class;
:data:`PART_PARAMETERS` lists, per part of :class:`~adaptable.core.estimator.AdapTable`, the
constructor parameters it owns (each parameter belongs to exactly one part).
"""

from __future__ import annotations

from numbers import Integral
from typing import Any

from adaptable.core.paper.calibrators import CALIBRATOR_PARAMETERS, CALIBRATORS
from adaptable.core.paper.paper_decider import PaperDecider
from adaptable.core.parts.decider import Decider
from adaptable.core.recommended.recommended_decider import RecommendedDecider
from adaptable.core.updates.model_updates import MODES
from adaptable.framework.model_adapter import OUTPUTS
from adaptable.framework.parameters import ColumnNames, Constraint, Interval, StrOptions

#: preset -> the decider it builds; "default" is the recommended adapter
DECIDERS: dict[str, type[Decider]] = {
    RecommendedDecider.preset: RecommendedDecider,
    PaperDecider.preset: PaperDecider,
}
PRESETS = tuple(DECIDERS)

#: the parameters the estimator itself owns: what to build, how to read the model and the table
ESTIMATOR_PARAMETERS: dict[str, list[Constraint]] = {
    "preset": [StrOptions(PRESETS)],
    "calibrator": [StrOptions(("auto", *CALIBRATORS))],
    "numerical": [ColumnNames(), None],
    "categorical": [ColumnNames(), None],
    "output": [StrOptions(OUTPUTS)],
    "random_state": [Interval(Integral, 0, None), None],
    "verbose": [bool],
    "progress": [callable, None],
}

#: the model updates' parameters (:class:`~adaptable.core.updates.model_updates.ModelUpdates`):
#: which updates labels that come back fit (``"none"``: none), and whether in a worker thread
UPDATE_PARAMETERS: dict[str, list[Constraint]] = {
    "update": [StrOptions(MODES)],
    "update_in_background": [bool],
}

#: part -> the constructor parameters it owns, with their constraints
PART_PARAMETERS: dict[str, dict[str, list[Constraint]]] = {
    "estimator": ESTIMATOR_PARAMETERS,
    "calibrator": CALIBRATOR_PARAMETERS,
    "updates": UPDATE_PARAMETERS,
    **{f"decider[{preset}]": cls.parameter_constraints for preset, cls in DECIDERS.items()},
}

#: every constructor parameter of AdapTable, with its constraints
PARAMETER_CONSTRAINTS: dict[str, list[Constraint]] = {
    name: constraints for part in PART_PARAMETERS.values() for name, constraints in part.items()
}


def calibrator_name(params: dict[str, Any]) -> str:
    """The calibrator in use: ``calibrator``, with ``"auto"`` resolved for the preset."""
    if params["calibrator"] != "auto":
        return params["calibrator"]
    return DECIDERS[params["preset"]].default_calibrator
