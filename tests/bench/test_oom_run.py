"""bench/oom_run.py: how it reads the kernel's OOM kills of its cgroup (the run itself needs
root and a writable cgroup hierarchy: a benchmark, not a test)."""

from __future__ import annotations

import os
import sys

from tests.commands import ROOT

sys.path.insert(0, os.path.join(ROOT, "bench"))
try:
    import oom_run
finally:
    sys.path.pop(0)


def test_the_oom_kills_are_read_from_either_cgroup_version(tmp_path):
    (tmp_path / "memory.oom_control").write_text("oom_kill_disable 0\nunder_oom 0\noom_kill 2\n")
    assert oom_run.oom_kills(str(tmp_path), "cgroup") == 2
    (tmp_path / "memory.events").write_text("low 0\nhigh 0\nmax 7\noom 1\noom_kill 1\n")
    assert oom_run.oom_kills(str(tmp_path), "cgroup2") == 1
    assert oom_run.oom_kills(str(tmp_path / "gone"), "cgroup2") is None
