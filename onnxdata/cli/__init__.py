"""The ``onnxdata`` command: its subcommands' arguments and printing, the console and the
progress bar. Nothing below imports it."""
