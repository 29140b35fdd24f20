"""Exact n-step transitions for several episode shapes, through a real Reverb server.

Observations are the step index (plus 100 per episode) so each expected item
reads as (o_t, a_t, R, D, o_{t+m}); rewards are r_k = k; gamma = 0.5.
"""

from __future__ import annotations

import dm_env
import numpy as np
import pytest
import reverb
import tensorflow as tf
import tree

from agentkit.types import Transition
from components.adders import NStepTransitionAdder, nstep_return

SIGNATURE = Transition(
    observation=tf.TensorSpec((), tf.float32),
    action=tf.TensorSpec((), tf.int32),
    reward=tf.TensorSpec((), tf.float32),
    discount=tf.TensorSpec((), tf.float32),
    next_observation=tf.TensorSpec((), tf.float32),
)


def episode_stream(length: int, offset: float = 0.0, end: str = "termination") -> list[tuple]:
    """(action, timestep) pairs of one episode, the first with action None: observations
    offset + k, rewards k; it ends in a termination, a truncation, or not at all ("none")."""
    stream = [(None, dm_env.restart(np.float32(offset)))]
    for k in range(1, length + 1):
        obs, reward = np.float32(offset + k), float(k)
        if k < length or end == "none":
            timestep = dm_env.transition(reward, obs)
        elif end == "termination":
            timestep = dm_env.termination(reward, obs)
        else:
            timestep = dm_env.truncation(reward, obs)
        stream.append((np.int32(offset + k - 1), timestep))
    return stream


def _episode(adder, length, offset=0.0, end="termination"):
    for action, timestep in episode_stream(length, offset, end):
        if action is None:
            adder.add_first(timestep)
        else:
            adder.add(action, timestep)


CASES = {
    # n, episodes as (length, end), expected items in insertion order.
    "longer_than_n_terminated": (3, [(5, "termination")], [
        (0, 0, 2.75, 0.125, 3), (1, 1, 4.5, 0.125, 4), (2, 2, 6.25, 0.0, 5),
        (3, 3, 6.5, 0.0, 5), (4, 4, 5.0, 0.0, 5)]),
    "shorter_than_n_terminated": (3, [(2, "termination")], [
        (0, 0, 2.0, 0.0, 2), (1, 1, 2.0, 0.0, 2)]),
    "shorter_than_n_truncated": (3, [(2, "truncation")], [
        (0, 0, 2.0, 0.25, 2), (1, 1, 2.0, 0.5, 2)]),
    "equal_to_n_truncated": (2, [(2, "truncation")], [
        (0, 0, 2.0, 0.25, 2), (1, 1, 2.0, 0.5, 2)]),
    "one_step": (1, [(3, "termination")], [
        (0, 0, 1.0, 0.5, 1), (1, 1, 2.0, 0.5, 2), (2, 2, 3.0, 0.0, 3)]),
    "two_episodes_do_not_mix": (2, [(2, "termination"), (3, "truncation")], [
        (0, 0, 2.0, 0.0, 2), (1, 1, 2.0, 0.0, 2),
        (100, 100, 2.0, 0.25, 102), (101, 101, 3.5, 0.25, 103), (102, 102, 3.0, 0.5, 103)]),
    "cut_short_by_close": (3, [(4, "none")], [
        (0, 0, 2.75, 0.125, 3), (1, 1, 4.5, 0.125, 4), (2, 2, 5.0, 0.25, 4),
        (3, 3, 4.0, 0.5, 4)]),
}


def _read_all(server, client, table="queue"):
    size = client.server_info()[table].current_size
    dataset = reverb.TrajectoryDataset.from_table_signature(
        f"localhost:{server.port}", table, max_in_flight_samples_per_worker=1,
        num_workers_per_iterator=1, rate_limiter_timeout_ms=0)
    # One worker that gives up at once on the empty queue: reading takes
    # 0.1 s instead of 3-5 s of other workers waiting on it.
    items = []
    for sample in dataset.take(size):
        # The leaves in column order: (o_t, a_t, R, D, o_{t+m}); extras=() has none.
        items.append((tuple(float(x) for x in tree.flatten(sample.data)),
                      float(sample.info.priority)))
    return items


@pytest.mark.parametrize("name", sorted(CASES))
def test_nstep_items_are_exact(name, reverb_server_factory):
    n, episodes, expected = CASES[name]
    server, client = reverb_server_factory(
        [reverb.Table.queue("queue", 100, signature=SIGNATURE)])
    adder = NStepTransitionAdder(client, "queue", n_step=n, discount=0.5)
    for i, (length, end) in enumerate(episodes):
        _episode(adder, length, offset=100.0 * i, end=end)
    adder.close()
    items = [item for item, _ in _read_all(server, client)]
    assert items == [tuple(float(x) for x in e) for e in expected]
    assert adder.items_written == len(expected)


def test_initial_priorities_come_from_priority_fn(reverb_server_factory):
    server, client = reverb_server_factory(
        [reverb.Table.queue("queue", 100, signature=SIGNATURE)])
    batches = []

    def priority_fn(batch):
        batches.append(len(batch.reward))
        return batch.reward + 10.0

    adder = NStepTransitionAdder(client, "queue", n_step=2, discount=0.5,
                                 priority_fn=priority_fn)
    _episode(adder, 3)
    adder.close()
    priorities = [(item[2] + 10.0, p) for item, p in _read_all(server, client)]
    assert [a for a, _ in priorities] == [b for _, b in priorities]
    assert len(priorities) == 3
    # One call per step that produced items; the episode's end writes two at once.
    assert batches == [1, 2]


def test_deferred_items_wait_for_their_priorities(reverb_server_factory):
    server, client = reverb_server_factory(
        [reverb.Table.queue("queue", 100, signature=SIGNATURE)])
    adder = NStepTransitionAdder(client, "queue", n_step=2, discount=0.5, defer_items=True)
    written = []
    adder.add_first(dm_env.restart(np.float32(0)))
    for k in range(1, 4):
        timestep = (dm_env.termination if k == 3 else dm_env.transition)(float(k), np.float32(k))
        adder.add(np.int32(k - 1), timestep)
        pending = adder.pending()
        assert adder.items_written == len(written)  # Nothing reaches replay before its priority.
        adder.write_pending([100.0 * k + i for i in range(len(pending))])
        written += [(float(t.observation), 100.0 * k + i) for i, t in enumerate(pending)]
    adder.add_first(dm_env.restart(np.float32(10)))
    adder.add(np.int32(0), dm_env.transition(1.0, np.float32(11)))
    adder.add(np.int32(1), dm_env.termination(1.0, np.float32(12)))
    with pytest.raises(ValueError, match="2 items pending, got 1"):
        adder.write_pending([1.0])
    adder.add_first(dm_env.restart(np.float32(20)))  # Writes what waits, with priority 1.
    adder.close()
    items = _read_all(server, client)
    assert [(item[0], p) for item, p in items] == written + [(10.0, 1.0), (11.0, 1.0)]
    assert written == [(0.0, 200.0), (1.0, 300.0), (2.0, 301.0)]


def test_nstep_return_formula():
    # R = 1 + 0.9*0.5*2 + (0.9*0.5)*(0.9*1.0)*3, D = 0.9^3 * 0.5 * 1.0 * 1.0
    reward, discount = nstep_return([1, 2, 3], [0.5, 1.0, 1.0], 0.9)
    assert reward == pytest.approx(1 + 0.45 * 2 + 0.405 * 3)
    assert discount == pytest.approx(0.729 * 0.5)


def test_bad_arguments_raise(reverb_server_factory):
    _, client = reverb_server_factory([reverb.Table.queue("queue", 10, signature=SIGNATURE)])
    with pytest.raises(ValueError, match="n_step"):
        NStepTransitionAdder(client, "queue", n_step=0, discount=0.9)
    adder = NStepTransitionAdder(client, "queue", n_step=1, discount=0.9)
    with pytest.raises(ValueError, match="before add_first"):
        adder.add(np.int32(0), dm_env.transition(1.0, np.float32(1)))
