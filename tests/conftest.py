"""Shared fixtures: an in-process Reverb server per test that asks for one; and, for every
test, a check that no process it started outlives it."""

from __future__ import annotations

import os
import uuid

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import pytest
import reverb

from components.autograph_rules import skip_autograph_for
from components.replay.server import NoCheckpointer
from launch_programs.processes import command_line, reap
from tests.commands import SUITE_MARK_ENV
from tests.leaks import processes_left, suite_processes

# Every process a test starts inherits the mark (tests.commands.user_env passes it on too),
# and so do the processes below those: a process that outlives its test is found by it,
# whoever its parent is by then (an orphan's is pid 1).
os.environ.setdefault(SUITE_MARK_ENV, uuid.uuid4().hex)

LEAK_GRACE_S = 15.0  # How long a test's processes may take to exit after it.


@pytest.fixture(autouse=True)
def no_process_outlives_its_test(request):
    """Fails the test that leaves a process behind (after LEAK_GRACE_S for it to exit),
    naming each, and stops them, so that the next test starts on a clean machine."""
    before = suite_processes()
    yield
    left = processes_left(before, LEAK_GRACE_S)
    if left:
        names = [command_line(pid)[:160] or str(pid) for pid in left]
        reap(left, grace_s=2.0)
        pytest.fail(f"{request.node.nodeid} left {len(names)} process(es) running: "
                    + "; ".join(names), pytrace=False)

# The launcher's set-up applies these in every process it runs; tests that
# build learners and policies directly get the same fast tracing.
skip_autograph_for()


@pytest.fixture
def reverb_server_factory():
    """Starts Reverb servers for a test and stops them after it."""
    servers = []

    def make(tables):
        server = reverb.Server(tables, checkpointer=NoCheckpointer())
        servers.append(server)
        return server, reverb.Client(f"localhost:{server.port}")

    yield make
    for server in servers:
        server.stop()
