"""``python -m onnxdata`` runs the command-line tool."""

from onnxdata.cli.main import main

raise SystemExit(main())
