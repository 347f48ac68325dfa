"""AdapTable: test-time adaptation for tabular classifiers."""
__version__ = "0.1.0"
