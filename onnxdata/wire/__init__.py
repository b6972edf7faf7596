"""The wire format: tags and varints (``format``), the bytes walked (``source``), external
data, payload decoding, the schema walk (``walk``; compiled in ``_walk.pyx``, ``_layouts.pyx``
and ``_varints.pyx``, with the Python walk as the reference) and ``fit``, the field tree."""
