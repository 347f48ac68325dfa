"""Decision rules for an objective (macro-F1, balanced accuracy, accuracy), shared by the
recommended decider, the labelled rule choice and the report's estimates.

- ``rules.py``: the metric-aware plug-in rules, expected confusions and scores;
- ``class_presence.py``: each class's chance of occurring in the stream;
- ``distinct_rows.py``: numpy's row-wise unique without its cost.
"""
