"""Shared fixtures: an in-process Reverb server per test that asks for one."""

from __future__ import annotations

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import pytest
import reverb

from components.autograph_rules import skip_autograph_for
from components.replay.server import NoCheckpointer

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
