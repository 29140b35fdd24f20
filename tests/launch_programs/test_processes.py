"""This host's processes from /proc: a process tree's memory, and whole command lines."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from launch_programs.processes import (
    RAY_PROCESS_MARKS,
    cpu_seconds,
    descendants,
    process_kind,
    process_table,
    process_tree_rss_mb,
)


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
