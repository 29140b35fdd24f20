"""The variable client fetches in the background: acting never waits on a slow source."""

from __future__ import annotations

import threading
import time

import numpy as np
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
