"""Ray's processes that this test suite started, for tests that check that none outlives a
run. Another user's or a benchmark's Ray on the same machine is not the suite's to judge:
only the runner's descendants and processes with the suite's mark count (tests/leaks.py)."""

from __future__ import annotations

from launch_programs.processes import RAY_PROCESS_MARKS, command_line
from tests.leaks import suite_processes


def ray_processes() -> list[str]:
    """`pid args` of every raylet, GCS and Ray worker process of the suite running now."""
    found = []
    for pid in sorted(suite_processes()):
        args = command_line(pid)
        if any(mark in args for mark in RAY_PROCESS_MARKS):
            found.append(f"{pid} {args}")
    return found
