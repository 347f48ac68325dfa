"""The default preset's decider: the rule that serves the objective, corrected for a change of
the label distribution only while the stream shows one.

- ``recommended_decider.py``: :class:`RecommendedDecider` (rule choice, label-shift tests,
  online prior, fallbacks, stream check); it owns the moment test, the prior estimate and
  the labelled-rows path;
- ``labelled_rows.py``: :class:`LabelledRows`, the part it owns for labels that come back
  and the drift report;
- ``saved_fields.py``: its own fields read back from a save file, every one checked;
- ``labelled_fields.py``: the labelled rows' and the report's saved tensors, checked against
  each other and the rest of the file;
- ``moment_test.py``: the moment-matching test of pure label shift;
- ``prior_estimate.py``: the MAP-EM target-prior estimate and its likelihood-ratio test;
- ``label_shift_estimate.py``: the stream read as a label shift, re-read only when a bound
  (``estimate_bound.py``) says the answer could change.
"""
