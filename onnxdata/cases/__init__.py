"""ONNX test data sets: load, save, make, compare and diff them, and run them on backends
(one case, many in a pool, a scoreboard)."""
