"""The ground every layer stands on: data types, the message classes and their kind names,
STRING values, the densify budget, paths, and the limits. Imports nothing of onnxdata but
``errors`` and ``generated``."""
