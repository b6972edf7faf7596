"""Atheris harness: the ``load_sparse_tensor`` target of targets.py (run through run.py).

    python tests/fuzz/fuzz_load_sparse_tensor.py [--seconds N | --runs N]
"""

import sys

import run

if __name__ == "__main__":
    sys.exit(run.main_for("load_sparse_tensor"))
