"""Atheris harness: the ``load_optional`` target of targets.py (run through run.py).

    python tests/fuzz/fuzz_load_optional.py [--seconds N | --runs N]
"""

import sys

import run

if __name__ == "__main__":
    sys.exit(run.main_for("load_optional"))
