"""This host's processes from /proc: a process tree's memory, and whole command lines."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from launch_programs.processes import (
    OWNER_ENV,
    RAY_PROCESS_MARKS,
    alive,
    cpu_seconds,
    descendants,
    marked,
    marking,
    process_kind,
    process_table,
    process_tree_rss_mb,
    reap,
)
from launch_programs.ray_session import OwnedProcesses


def test_rss_counts_this_process_and_its_children():
    alone = process_tree_rss_mb()
    assert alone is not None and alone > 20  # Python and pytest are loaded here.
    child = subprocess.Popen([sys.executable, "-c",
                              "import numpy, time; a = numpy.ones(2**25); time.sleep(30)"])
    try:
        time.sleep(3.0)  # It has imported numpy and filled 256 MB.
        with_child = process_tree_rss_mb()
        assert with_child - alone > 200, (alone, with_child)
        assert process_tree_rss_mb(child.pid) > 200
    finally:
        child.kill()
        child.wait()


def test_the_table_holds_whole_command_lines_and_process_groups():
    """A command line far wider than any terminal is listed whole, mark included: under a
    deep checkout a raylet's path is wider than `ps`'s 80 columns, which once hid it."""
    padding = "x" * 300
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)", padding,
                              "raylet"], start_new_session=True)
    try:
        time.sleep(0.5)
        rows = {pid: (group, args) for pid, group, args in process_table()}
        group, args = rows[child.pid]
        assert args.endswith(f"{padding} raylet") and len(args) > 300
        assert group == child.pid != os.getpgid(0)  # Its own session and group.
        assert any(mark in args for mark in RAY_PROCESS_MARKS)
        assert rows[os.getpid()][0] == os.getpgid(0)
    finally:
        child.kill()
        child.wait()
    assert child.pid not in {pid for pid, _, _ in process_table()}


def test_a_trees_processes_and_their_cpu_time_are_counted():
    """A child that burns CPU is under this process and its CPU seconds grow; a gone
    process reads 0. These feed bench/startup.py's CPU floor and bench/scaling.py's cores."""
    child = subprocess.Popen([sys.executable, "-c", "import time\nt = time.time()\n"
                              "while time.time() - t < 30: pass"])
    try:
        time.sleep(1.5)
        assert child.pid in descendants(os.getpid())
        first = cpu_seconds(child.pid)
        time.sleep(1.0)
        second = cpu_seconds(child.pid)
        assert 0.5 < first < 2.0, first  # It spins from its start (after Python's own).
        assert 0.7 < second - first <= 1.1, (first, second)
    finally:
        child.kill()
        child.wait()
    assert child.pid not in descendants(os.getpid())
    assert cpu_seconds(child.pid) == 0.0


def test_process_kinds_from_command_lines():
    root = "/x/site-packages/ray/core/src/ray"
    assert process_kind(f"{root}/raylet/raylet --raylet_socket_name=/tmp/s") == "ray_raylet"
    assert process_kind(f"{root}/gcs/gcs_server --log_dir=/tmp") == "ray_gcs"
    assert process_kind("ray::NodeProcess.run") == "ray_worker"
    assert process_kind("python -m launch_programs.run --agent=dqn") == "driver"
    assert process_kind("python bench/scaling.py") == "other"


def _orphan(seconds: int = 60) -> None:
    """Starts a process whose parent exits at once: it lives on under pid 1 (or a subreaper),
    no longer a descendant of this one, as a hard-killed raylet's agents do."""
    subprocess.run(["sh", "-c", f"sleep {seconds} >/dev/null 2>&1 & exit 0"], check=True)
    deadline = time.monotonic() + 5.0  # Until it has become `sleep` (past its exec).
    while not any(args == f"sleep {seconds}" for _, _, args in process_table()):
        assert time.monotonic() < deadline, "the orphan did not start"
        time.sleep(0.02)


def test_a_mark_follows_orphans_and_reaping_ends_them():
    before = os.environ.get(OWNER_ENV)
    with marking("mark-a"):
        assert os.environ[OWNER_ENV] == "mark-a"
        _orphan()
        child = subprocess.Popen(["sleep", "60"])
    assert os.environ.get(OWNER_ENV) == before  # Put back as it was.
    outside = subprocess.Popen(["sleep", "60"])  # Started after the block: not marked.
    try:
        found = marked("mark-a")
        assert child.pid in found and len(found) == 2  # The orphan too, not `outside`.
        assert not set(descendants(os.getpid())) >= set(found)  # One is no descendant.
        assert outside.pid not in found and marked("mark-b") == {}
        stopped = reap(found, grace_s=2.0)
        assert len(stopped) == 2 and all("sleep 60" in name for name in stopped)
        child.wait(timeout=5)
        assert marked("mark-a") == {} and not any(alive(p, s) for p, s in found.items())
    finally:
        outside.kill()
        outside.wait()


def test_a_process_that_ignores_sigterm_is_killed_after_the_grace():
    with marking("mark-stubborn"):
        child = subprocess.Popen(["sh", "-c", "trap '' TERM; sleep 60 & wait"])
    time.sleep(0.3)
    started = time.monotonic()
    assert len(reap(marked("mark-stubborn"), grace_s=0.5)) == 2  # The shell and its sleep.
    assert time.monotonic() - started < 5.0
    child.wait(timeout=5)
    assert marked("mark-stubborn") == {}


def test_owned_processes_end_what_was_started_and_restore_the_environment(monkeypatch):
    monkeypatch.setenv("AGENTKIT_PROBE_KEPT", "before")
    owned = OwnedProcesses()
    with owned.starting():
        _orphan()
    os.environ["AGENTKIT_PROBE_KEPT"] = "changed"  # As Ray's start-up sets its variables.
    os.environ["AGENTKIT_PROBE_NEW"] = "1"
    monkeypatch.setenv("AGENTKIT_PROBE_OTHERS", "before")
    owned.started()
    os.environ["AGENTKIT_PROBE_OTHERS"] = "another session's"  # Changed after: kept.
    assert len(owned.left()) == 1
    [stopped] = owned.end(grace_s=1.0)
    assert "sleep 60" in stopped  # (Its command line may be the shell's until it execs.)
    assert owned.left() == {}
    assert os.environ["AGENTKIT_PROBE_KEPT"] == "before"
    assert "AGENTKIT_PROBE_NEW" not in os.environ
    assert os.environ["AGENTKIT_PROBE_OTHERS"] == "another session's"


@pytest.mark.parametrize("value", ["-2", "=b"])
def test_a_mark_matches_whole_values_only(value):
    with marking("mark-c" + value):
        child = subprocess.Popen(["sleep", "60"])
    try:
        assert child.pid not in marked("mark-c")
    finally:
        child.kill()
        child.wait()
