"""Files and messages: the one atomic writer of files and folders (``atomic``),
``load``/``save`` of whole messages (``load_save``), ``read``
(zero-copy arrays, ``read``), ``write`` (streamed, ``write``), serialization, and
``to_numpy``/``problems`` of a message through the engine."""
