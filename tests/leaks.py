"""What finds a process that outlived its test: the runner's descendants, and every process
with the suite's mark in its environment (orphans included, whoever their parent is now)."""

from __future__ import annotations

import os
import time

from launch_programs.processes import descendants, marked
from tests.commands import SUITE_MARK_ENV


def suite_processes() -> dict[int, str]:
    """pid -> start time of the runner's descendants and of every process with the mark."""
    found = {pid: start for pid, (start, _) in descendants(os.getpid()).items()}
    if SUITE_MARK_ENV in os.environ:
        found.update(marked(os.environ[SUITE_MARK_ENV], SUITE_MARK_ENV))
    return found


def processes_left(before: dict[int, str], grace_s: float) -> dict[int, str]:
    """The suite's processes that were not there `before`, once `grace_s` has passed for
    them to exit (at once when none is left)."""
    deadline = time.monotonic() + grace_s
    while True:
        left = {pid: start for pid, start in suite_processes().items()
                if before.get(pid) != start}
        if not left or time.monotonic() >= deadline:
            return left
        time.sleep(0.25)
