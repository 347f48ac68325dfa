"""What AdapTable hands its two parts (a calibrator and a decider), and the decider interface.

- ``contexts.py``: the fit and load contexts and a part's saved state;
- ``decider.py``: :class:`Decider`, :class:`CalibratedBatch` and :class:`Decision`;
- ``saved_state.py``: checked reading of a saved file, through which every part loads (each
  field and tensor named when wrong).
"""
