"""Atheris harness: the ``load_sequence`` target of targets.py (run through run.py).

    python tests/fuzz/fuzz_load_sequence.py [--seconds N | --runs N]
"""

import sys

import run

if __name__ == "__main__":
    sys.exit(run.main_for("load_sequence"))
