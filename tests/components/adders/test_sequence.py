"""Exact overlapping sequences from the SequenceAdder (L = 4, P = 2), with core states and masks.

Episodes shorter than, equal to and longer than L. Observations are
100 * episode + step, actions 10 + step, rewards r_{t+1} = t + 1, and the
core state that step t began with is ((t, episode), (-t, episode)), so every
field of every step is checkable, and so is the state at each item's first step.
"""

from __future__ import annotations

import dm_env
import numpy as np
import pytest
import reverb
import tensorflow as tf

from components.adders import SequenceAdder, sequence_signature
from components.datasets import make_single_sample_iterator
from tests import fakes

L, P = 4, 2
STATE = tf.TensorSpec((2,), tf.float32)
EXTRAS_SPEC = {"core_state": (STATE, STATE)}
PAD = (0.0, 0, 0.0, 0.0, (0.0, 0.0, 0.0, 0.0), 0.0)


def _spec():
    from agentkit.specs import make_environment_spec

    return make_environment_spec(fakes.discrete_environment(observation_shape=()))


def _state(t, episode):
    return (np.array([t, episode], np.float32), np.array([-t, episode], np.float32))


def _episode(adder, length, episode, end="termination"):
    adder.add_first(dm_env.restart(np.float32(100 * episode)))
    for t in range(length):
        obs = np.float32(100 * episode + t + 1)
        if t < length - 1 or end == "none":
            timestep = dm_env.transition(float(t + 1), obs)
        elif end == "termination":
            timestep = dm_env.termination(float(t + 1), obs)
        else:
            timestep = dm_env.truncation(float(t + 1), obs)
        adder.add(np.int32(10 + t), timestep, extras={"core_state": _state(t, episode)})


def _expected(length, episode, end="termination"):
    """Every step (the actions, then the last observation), cut as the design says."""
    steps = []
    for t in range(length):
        last = t == length - 1
        discount = 0.0 if last and end == "termination" else 1.0
        steps.append((float(100 * episode + t), 10 + t, float(t + 1), discount,
                      (float(t), float(episode), float(-t), float(episode)), 1.0))
    steps.append((float(100 * episode + length), 0, 0.0, 0.0, (0.0, 0.0, 0.0, 0.0), 0.0))
    last_index = len(steps) - 1
    items, k = [], 0
    # Item k starts at step kP; one is needed while the previous one ends before the last step.
    while k == 0 or (k - 1) * P + L - 1 < last_index:
        chunk = steps[k * P:k * P + L]
        items.append(chunk + [PAD] * (L - len(chunk)))
        k += 1
    return items


def _read(server, n):
    samples = make_single_sample_iterator(f"localhost:{server.port}", "queue",
                                          rate_limiter_timeout_ms=100)
    items = []
    for _ in range(n):
        d = next(samples).data
        h, c = d["extras"]["core_state"]
        items.append([
            (float(d["observation"][i]), int(d["action"][i]), float(d["reward"][i]),
             float(d["discount"][i]), (float(h[i][0]), float(h[i][1]), float(c[i][0]),
                                       float(c[i][1])), float(d["mask"][i]))
            for i in range(L)
        ])
    return items


def _table():
    return reverb.Table.queue("queue", 100,
                              signature=sequence_signature(_spec(), L, EXTRAS_SPEC))


@pytest.mark.parametrize("length,end,num_items", [
    (2, "termination", 1),   # 3 steps: shorter than L, padded.
    (3, "termination", 1),   # 4 steps: exactly L.
    (4, "termination", 2),   # 5 steps: the last observation needs a second, padded item.
    (7, "termination", 3),   # 8 steps: 0-3, 2-5, 4-7.
    (8, "truncation", 4),    # 9 steps: 0-3, 2-5, 4-7, 6-8 + pad; bootstraps (discount 1).
])
def test_sequences_are_exact(length, end, num_items, reverb_server_factory):
    server, client = reverb_server_factory([_table()])
    adder = SequenceAdder(client, "queue", L, P, EXTRAS_SPEC)
    _episode(adder, length, 0, end)
    _episode(adder, 2, 1)  # A second episode never mixes with the first.
    adder.close()
    expected = _expected(length, 0, end) + _expected(2, 1)
    assert len(_expected(length, 0, end)) == num_items
    assert adder.items_written == len(expected)
    items = _read(server, len(expected))
    assert items == expected
    for k, item in enumerate(items[:num_items]):
        # Each sequence carries the core state of its first step: that of step kP.
        assert item[0][4][:2] == (float(k * P), 0.0)
    assert client.server_info()["queue"].current_size == 0  # Nothing else was written.


@pytest.mark.parametrize("period", [0, L + 1])
def test_period_out_of_range_is_refused(period, reverb_server_factory):
    _, client = reverb_server_factory([_table()])
    with pytest.raises(ValueError, match="period"):
        SequenceAdder(client, "queue", L, period, EXTRAS_SPEC)
