"""Protobuf wire bytes written by hand, for tests: bench/shapes.py's encoder, which the
bench's files are built with too. An encoder of our own, so the readers under test are
not checked against themselves."""

from __future__ import annotations

from bench.shapes import key, ld, varint, vint

__all__ = ["key", "ld", "varint", "vint"]
