"""The variable client fetches in the background: acting never waits on a slow source."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
import tensorflow as tf

from agentkit import core
from components.variable_client import VariableClient


class SlowSource(core.VariableSource):
    def __init__(self, delay_s: float):
        self.delay_s = delay_s
        self.value = 1.0
        self.calls = 0
        self.release = threading.Event()

    def get_variables(self, names):
        self.calls += 1
        time.sleep(self.delay_s)
        return [[np.full((3,), self.value, np.float32)] for _ in names]


def test_update_never_blocks_and_values_arrive_later():
    source = SlowSource(delay_s=0.3)
    variable = tf.Variable(np.zeros(3, np.float32))
    client = VariableClient(source, {"policy": [variable]}, update_period=5)
    start = time.time()
    for _ in range(5):
        client.update()
    assert time.time() - start < 0.05  # The fetch runs in the background.
    assert source.calls <= 1 and client.num_updates == 0
    time.sleep(0.5)
    client.update()  # Copies what arrived.
    np.testing.assert_array_equal(variable.numpy(), np.ones(3))
    assert client.num_updates == 1


def test_fetches_happen_every_update_period_calls():
    source = SlowSource(delay_s=0.0)
    variable = tf.Variable(np.zeros(3, np.float32))
    client = VariableClient(source, {"policy": [variable]}, update_period=10)
    for _ in range(35):
        client.update()
        time.sleep(0.002)
    assert source.calls == 3


def test_update_and_wait_copies_now():
    source = SlowSource(delay_s=0.0)
    source.value = 7.0
    variable = tf.Variable(np.zeros(3, np.float32))
    VariableClient(source, {"policy": [variable]}).update(wait=True)
    np.testing.assert_array_equal(variable.numpy(), np.full(3, 7.0))


class VersionedSource(core.VariableSource):
    """Serves weights (all equal to the version) and the version, which a test bumps."""

    def __init__(self):
        self.version = 0
        self.polls = 0

    def get_variables(self, names):
        if names == ["policy_version"]:
            self.polls += 1
        return [[np.array(self.version, np.int64)] if name == "policy_version"
                else [np.full((3,), float(self.version), np.float32)] for name in names]


def _round_client(source, round_length=4):
    from components.variable_client import RoundVariableClient

    weights = tf.Variable(np.zeros(3, np.float32))
    version = tf.Variable(0, dtype=tf.int64)
    client = RoundVariableClient(source, {"policy": [weights], "policy_version": [version]},
                                 round_length=round_length)
    return client, weights, version


def test_a_round_client_waits_at_each_round_end_for_the_next_version():
    source = VersionedSource()
    client, weights, version = _round_client(source)
    for _ in range(3):  # Inside the round: no wait, no fetch.
        client.update()
    assert source.polls == 0 and client.num_updates == 0
    threading.Timer(0.3, lambda: setattr(source, "version", 1)).start()
    start = time.monotonic()
    client.update()  # The round's last step: waits for version 1.
    waited = time.monotonic() - start
    assert 0.25 <= waited < 2.0 and client.wait_s >= 0.25
    assert int(version.numpy()) == 1 and client.num_updates == 1
    np.testing.assert_array_equal(weights.numpy(), np.ones(3))
    assert source.polls >= 2  # It polled the version alone until it changed.
    source.version = 0  # A learner restored from an older checkpoint: differs, so it releases.
    for _ in range(4):
        client.update()
    assert int(version.numpy()) == 0 and client.num_updates == 2


def test_interrupt_ends_a_round_clients_wait_without_new_weights():
    source = VersionedSource()
    client, weights, version = _round_client(source, round_length=1)
    threading.Timer(0.2, client.interrupt).start()
    start = time.monotonic()
    client.update()  # The learner never moves on: only the interrupt ends this.
    assert time.monotonic() - start < 2.0
    assert client.num_updates == 0 and int(version.numpy()) == 0


def test_a_round_client_with_a_lag_of_one_acts_a_round_ahead_and_never_two():
    """Round 0 acts with version 0; round 1 starts at once with it (the learner learns round
    0 meanwhile); from then on every round needs a version newer than the last round's, so
    the actor stays one round ahead: round 2 waits for version 1, round 3 takes a newer
    one at once, round 4 waits again; a restarted learner's older version releases it."""
    from components.variable_client import RoundVariableClient

    source = VersionedSource()
    weights, version = tf.Variable(np.zeros(3, np.float32)), tf.Variable(0, dtype=tf.int64)
    client = RoundVariableClient(source, {"policy": [weights], "policy_version": [version]},
                                 round_length=2, max_lag=1)

    def round_end(bump_to=None, after_s=0.3):
        client.update()
        if bump_to is not None:
            threading.Timer(after_s, lambda: setattr(source, "version", bump_to)).start()
        start = time.monotonic()
        client.update()
        return time.monotonic() - start

    assert round_end() < 0.1  # End of round 0: nothing newer, no wait, no fetch.
    assert client.num_updates == 0 and source.polls == 1
    assert round_end(bump_to=1) >= 0.25  # End of round 1: waits for a version other than 0.
    assert int(version.numpy()) == 1 and client.num_updates == 1
    source.version = 3  # The learner moved on twice: the newest is fetched, no wait.
    assert round_end() < 0.1
    assert int(version.numpy()) == 3 and client.num_updates == 2
    np.testing.assert_array_equal(weights.numpy(), np.full(3, 3.0))
    assert round_end(bump_to=2) >= 0.25  # Never two ahead; a restart's older 2 releases it.
    assert int(version.numpy()) == 2 and client.num_updates == 3


def test_a_round_clients_lag_cannot_be_negative():
    from components.variable_client import RoundVariableClient

    with pytest.raises(ValueError, match="max_lag must be >= 0, got -1"):
        RoundVariableClient(VersionedSource(), {"policy_version": [tf.Variable(0)]}, 4,
                            max_lag=-1)
