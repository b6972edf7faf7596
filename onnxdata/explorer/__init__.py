"""The explorer: which messages a file's bytes can be (``readings``), and the byte table of
a reading (``table``)."""
