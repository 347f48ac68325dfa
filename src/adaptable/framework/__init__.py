"""What every test-time method shares, AdapTable and the baselines alike.

- ``method.py``: :class:`TestTimeMethod`, the interface (labels handled once for every method,
  the batch checks) and :class:`SourceData`;
- ``sklearn_interface.py``: scikit-learn's parameter interface (``get_params``, ``set_params``,
  ``repr``, the classifier tags) without importing scikit-learn;
- ``model_adapter.py``: any model (torch, ``predict_proba``, a callable) as a logit function;
- ``fitted_columns.py``: the columns of a DataFrame ``fit`` saw, put back in order for the model;
- ``parameters.py``: constructor-parameter constraints (:class:`InvalidParameterError`);
- ``probability.py``: the package's one softmax and norm.

Nothing here imports the rest of the package (``adaptable.values`` and ``adaptable.encoding``
aside), so a method built on it pulls in nothing else.
"""
