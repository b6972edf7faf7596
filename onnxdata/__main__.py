"""``python -m onnxdata`` runs the command-line tool."""

from onnxdata.cli import main

raise SystemExit(main())
