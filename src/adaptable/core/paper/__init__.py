"""The paper's method: the shift-aware uncertainty calibrator and the label distribution handler.

- ``shift_trend.py``: source statistics and the shift trend (Eq. 1);
- ``graph_network.py``: the network g_phi; ``post_training.py``: its post-training (focal and
  calibration losses); ``graph_numpy_forward.py``: its complete-graph forward pass in numpy;
  ``graph_calibrator.py``: g_phi as AdapTable's calibrator part;
- ``calibrators.py``: the ablation calibrators (temperature, Platt, isotonic, oracle, none) and
  the calibrator registry;
- ``label_handler.py``: the label distribution handler, step by step (Algorithm 1);
- ``paper_decider.py``: :class:`PaperDecider`, the paper preset's decider.
"""
