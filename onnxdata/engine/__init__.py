"""The engine, the second half of the one route from bytes to a value:

    (bytes -> source -> fields -> walk) -> engine -> values

One streaming consumer of the wire walk that applies every rule of ``rules`` to the facts
the walk gives and builds values straight from the payloads (``engine``, ``tensor``); a
sequence's many small elements are taken a layout at a time by the compiled layouts
(``by_layout``, ``layout_values``). ``io.read.read_source`` calls it for ``read``,
``load_test_data_set`` and ``to_numpy``/``problems`` of a container; ``key_values`` reads
string-pair entries by their distinct bytes, ``one_line`` says a value in one line."""
