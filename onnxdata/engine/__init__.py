"""The wire engine: one streaming walk over a buffer or file that checks every rule and
builds values (``engine``), tensors (``tensor``), and a sequence's elements a layout at a time
(``by_layout``, ``layout_values``)."""
