"""The suite's leak check (tests/conftest.py): a process a test leaves is found, an orphan
too, after the grace; one that exits within it is not."""

from __future__ import annotations

import subprocess
import time

from launch_programs.processes import alive, reap
from tests.commands import user_env
from tests.leaks import processes_left, suite_processes


def test_a_left_orphan_is_found_and_one_that_exits_in_the_grace_is_not():
    before = suite_processes()
    # An orphan started in a user's clean environment (user_env carries the mark on).
    subprocess.run(["sh", "-c", "sleep 61 >/dev/null 2>&1 & exit 0"], env=user_env(),
                   check=True)
    quick = subprocess.Popen(["sleep", "0.5"])
    started = time.monotonic()
    left = processes_left(before, grace_s=2.0)
    try:
        assert quick.pid not in left  # Exited within the grace (and was reaped by wait).
        assert len(left) == 1 and 1.9 <= time.monotonic() - started < 5.0
    finally:
        quick.wait()
        reap(left, grace_s=1.0)
    assert not any(alive(pid, start) for pid, start in left.items())
    assert processes_left(before, grace_s=0.0) == {}
