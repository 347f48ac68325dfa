"""Save and load AdapTable (one ``.safetensors`` file, no pickle), and objects pickled by
earlier versions.

- ``save_file.py``: the parts' states assembled into one file and read back;
- ``file_digest.py``: the file's SHA-256 digest over its metadata and tensors.
"""
