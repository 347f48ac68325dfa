"""The drift report (``AdapTable.report``) and summary (``AdapTable.drift_summary``).

- ``drift_log.py``: :class:`DriftLog`, one record per batch and late labels scored by row id,
  built from four parts: ``record_window.py``, the window of batch records (the oldest
  forgotten past ``max_batches``) and the records still to settle; ``kept_rows.py``, the last
  rows' predictions and the labels given for them, found by row id;
  ``label_corrected_estimate.py``, the labelled rows' residual sums; ``feature_sample.py``, the
  held-out rows' features, a reservoir sample of the stream's and the importance weights;
- ``report_columns.py``: the report's columns, the classes' names in them, the empty report;
- ``heldout_estimate.py``: the calibration-free estimate from the held-out confusion rates;
  ``label_corrected_estimate.py``: the estimate corrected by the labels that came back;
  ``covariate_estimate.py``: the estimate under covariate shift, the held-out rows weighted
  towards the stream's features;
- ``drift_summary.py``: the verdict against the held-out reference;
- ``feature_drift.py``: :class:`FeatureMonitor`, per-column drift (``AdapTable.feature_drift``)
  against the held-out rows, on ``row_reservoir.py`` (a fixed-size uniform sample of the
  stream's rows) and ``column_tests.py`` (the two-sample tests and Holm's correction);
  ``feature_drift_fields.py``: its saved fields.
"""
