"""This host's processes from /proc: a process tree's memory, and whole command lines."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from launch_programs.processes import RAY_PROCESS_MARKS, process_table, process_tree_rss_mb


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
