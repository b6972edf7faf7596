"""Staging folders left by a killed save are removed by the next save into the same folder
(issue 42): only our own names, only when their process is gone (or, without a pid, after
``STALE_SECONDS``); a running save's stage and anyone else's files are left alone."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np

from onnxdata.cases import save_test_data_set
from onnxdata.io.atomic import STALE_SECONDS, staged_folder

#: A save that is killed (SIGKILL: no cleanup runs) while its stage holds a written file,
#: or (with "wait") one that stays in the block until its stdin closes.
CHILD = textwrap.dedent("""
    import os, signal, sys
    from pathlib import Path
    from onnxdata.io.atomic import staged_folder
    with staged_folder(Path(sys.argv[1])) as stage:
        (stage / "input_0.pb").write_bytes(b"x" * 100_000)
        if sys.argv[2] == "wait":
            print("in", flush=True)
            sys.stdin.read()
        else:
            os.kill(os.getpid(), signal.SIGKILL)
""")


def _stages(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith(".test_data_set_0."))


def test_a_killed_saves_stage_is_removed_by_the_next_save(tmp_path: Path) -> None:
    target = tmp_path / "test_data_set_0"
    for _ in range(3):
        done = subprocess.run([sys.executable, "-c", CHILD, str(target), "kill"],
                              timeout=60, check=False)
        assert done.returncode == -signal.SIGKILL
    assert len(_stages(tmp_path)) >= 1  # what kill -9 leaves (each kill's, before)
    save_test_data_set(target, [np.zeros(2, np.int64)], [])
    assert _stages(tmp_path) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["test_data_set_0"]


def test_a_running_saves_stage_and_other_names_are_left(tmp_path: Path) -> None:
    target = tmp_path / "test_data_set_0"
    mine = tmp_path / ".test_data_set_0.onnxdata-tmp-notours"  # not our pattern
    mine.mkdir()
    other = tmp_path / ".test_data_set_1.onnxdata-tmp-0123abcd-000000-1"  # another target
    other.mkdir()
    link = tmp_path / ".test_data_set_0.onnxdata-tmp-0123abcd-000000-1"  # a symlink
    os.symlink(mine, link)
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(target), "wait"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline() == "in\n"
        running = [n for n in _stages(tmp_path) if n.endswith(f"-{child.pid}")]
        assert len(running) == 1
        save_test_data_set(target, [np.zeros(2, np.int64)], [], overwrite=True)
        assert (tmp_path / running[0] / "input_0.pb").exists()  # still the child's
    finally:
        assert child.stdin is not None
        child.stdin.close()
        child.wait(timeout=60)
    assert mine.is_dir() and other.is_dir() and os.path.islink(link)


def test_a_stage_without_a_pid_is_removed_once_old(tmp_path: Path) -> None:
    target = tmp_path / "test_data_set_0"
    old = tmp_path / ".test_data_set_0.onnxdata-tmp-0123abcd"  # the name before pids
    new = tmp_path / ".test_data_set_0.onnxdata-tmp-89abcdef"
    for p in (old, new):
        p.mkdir()
        (p / "input_0.pb").write_bytes(b"x")
    then = time.time() - STALE_SECONDS - 60
    os.utime(old, (then, then))
    with staged_folder(target) as stage:
        (stage / "input_0.pb").write_bytes(b"\x08\x01")
    assert not old.exists() and new.exists()
