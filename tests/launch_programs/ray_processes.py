"""Ray's processes on this machine, for tests that check that none outlives a run."""

from __future__ import annotations

import subprocess

RAY_PROCESS_MARKS = ("raylet", "gcs_server", "ray::")


def ray_processes() -> list[str]:
    """`pid args` of every raylet, GCS and Ray worker process running now."""
    out = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if any(k in line for k in RAY_PROCESS_MARKS)]
