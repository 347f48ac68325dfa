"""Model updates when labels come back: the model refitted or patched beside the adapted
decision, and the labels' honest record choosing between them.

- ``row_tables.py``: :class:`TableReservoir`, a bounded uniform sample of table rows, and the
  helpers that take and stack rows of a DataFrame or an array alike;
- ``refit.py``: which models can be refitted, and a refitted copy;
- ``patch.py``: the patch, a ridge logistic regression over the model's log-posteriors and the
  encoded features, its strength chosen by cross-validation;
- ``candidates.py``: the refit and the patch as candidates fitted on a snapshot of the labels;
- ``prequential.py``: :class:`PrequentialRecord`, each candidate's predictions of labelled rows
  before their labels, and the choice on that record;
- ``model_updates.py``: :class:`ModelUpdates`, all of it for one adapter.

>>> from adaptable.core.updates import ModelUpdates
"""

from __future__ import annotations

from adaptable.core.updates.model_updates import MODES, ModelUpdates
from adaptable.core.updates.prequential import PrequentialRecord

__all__ = ["MODES", "ModelUpdates", "PrequentialRecord"]
