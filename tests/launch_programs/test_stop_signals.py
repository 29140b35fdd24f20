"""StopSignals: when a signal raises, and when it waits for the code that answers it."""

from __future__ import annotations

import os
import signal

import pytest

from launch_programs.stop_signals import StopSignals


@pytest.fixture
def signals():
    installed = StopSignals().install()
    yield installed
    installed.uninstall()


def test_a_signal_inside_held_waits_for_arm(signals):
    with signals.held():
        os.kill(os.getpid(), signal.SIGTERM)  # Recorded, not raised.
    assert signals.received == signal.SIGTERM
    with pytest.raises(KeyboardInterrupt):
        signals.arm()
    assert signals.exit_code == 128 + signal.SIGTERM


def test_held_until_armed_keeps_a_signal_after_the_block_for_the_code_that_answers_it(signals):
    """The command line's isolation: a signal between the block and _main's first arm() used
    to raise outside the handler that answers it (a traceback and exit 130 for a SIGHUP)."""
    with signals.held(until_armed=True):
        pass
    os.kill(os.getpid(), signal.SIGTERM)  # After the block: still held.
    assert signals.received == signal.SIGTERM
    with pytest.raises(KeyboardInterrupt):
        signals.arm()
    assert signals.exit_code == 128 + signal.SIGTERM


def test_after_a_plain_held_block_a_signal_raises_at_once(signals):
    with signals.held():
        pass
    with pytest.raises(KeyboardInterrupt):
        os.kill(os.getpid(), signal.SIGINT)
    assert signals.received == signal.SIGINT
