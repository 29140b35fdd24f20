"""bench/suite_under_load.py: how a run's log is read (a summary, or none when the runner
vanished), without running the suite."""

from __future__ import annotations

import os
import sys

from tests.commands import ROOT

sys.path.insert(0, os.path.join(ROOT, "bench"))
try:
    import suite_under_load
finally:
    sys.path.pop(0)

LOG = """tests/a.py ....F.                                                       [ 59%]
FAILED tests/launch_programs/test_cluster.py::test_pinned - AssertionError: x
ERROR tests/b.py::test_c - Failed: left 1 process(es) running: sleep 60
FAILED tests/launch_programs/test_cluster.py::test_pinned - AssertionError: x
2 failed, 1020 passed, 7 skipped, 9 deselected, 1 error in 731.20s (0:12:11)
"""


def test_the_summary_and_the_failures_are_read():
    counts = suite_under_load.counts_of(LOG)
    assert counts["summary"].startswith("2 failed, 1020 passed")
    assert (counts["failed"], counts["passed"], counts["skipped"], counts["error"]) == \
        (2, 1020, 7, 1)
    assert suite_under_load.failures_of(LOG) == [
        "tests/b.py::test_c", "tests/launch_programs/test_cluster.py::test_pinned"]


def test_a_runner_that_vanished_has_no_summary():
    cut = "\n".join(LOG.splitlines()[:3])  # The log ends mid-run: no summary line.
    assert suite_under_load.counts_of(cut) == {"summary": None}
