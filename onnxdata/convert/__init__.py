"""Numpy values from messages and messages from numpy values (``values``: ``to_numpy``,
``from_numpy``), tensor by tensor and container by container, and declared types."""
