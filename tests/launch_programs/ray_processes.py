"""Ray's processes on this machine, for tests that check that none outlives a run."""

from __future__ import annotations

from launch_programs.processes import RAY_PROCESS_MARKS, process_table


def ray_processes() -> list[str]:
    """`pid args` of every raylet, GCS and Ray worker process running now."""
    return [f"{pid} {args}" for pid, _, args in process_table()
            if any(mark in args for mark in RAY_PROCESS_MARKS)]
