"""The wire format, the first half of the one route from bytes to a value:

    bytes -> source -> fields -> walk -> (engine -> values)

``source`` (a buffer, a file read with pread, a memory map; lengths checked before any
allocation, a file that changes noticed) -> ``fields`` (a message's fields in wire order,
runs of one tag as arrays; ``Occurrences``, where a message's occurrences are) -> ``walk``
(one message by the ``schema``, occurrences merged as protobuf merges them, kept in the
arrays of ``occurrences``). The walk's inner loop is compiled where built (``compiled``
over ``_walk.pyx`` and ``_layouts.pyx``; ``decode`` over ``_varints.pyx``), with the
Python walk (``walk.scan_reference``) as the reference; ``loops`` is the one switch that
loads the compiled loops and reads ``ONNXDATA_PURE_PYTHON``. Beside the route: ``format``
(tags and varints by hand), ``field_values`` (payloads decoded), ``external`` (external
data through one checked descriptor) and ``field_tree`` (the whole field tree, for the
explorer and declared-type checks)."""
