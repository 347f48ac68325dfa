"""Save and load AdapTable (one ``.safetensors`` file, no pickle), and objects pickled by
earlier versions.

- ``save_file.py``: the parts' states assembled into one file and read back.
"""
