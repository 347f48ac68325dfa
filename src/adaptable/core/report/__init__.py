"""The drift report (``AdapTable.report``) and summary (``AdapTable.drift_summary``).

- ``drift_log.py``: :class:`DriftLog`, one record per batch and the scores kept for labels given
  by row id; ``log_storage.py``: its saved layout and bounded window; ``row_labels.py``: late
  labels matched to the kept rows by row id;
- ``heldout_estimate.py``: the calibration-free estimate from the held-out confusion rates;
  ``label_corrected_estimate.py``: the estimate corrected by the labels that came back;
- ``drift_summary.py``: the verdict against the held-out reference.
"""
