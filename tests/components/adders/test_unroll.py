"""Exact unrolls from the UnrollAdder for episodes shorter than, equal to and longer than T.

Observations are 100 * episode + step, actions 10 + step, rewards r_{t+1} = t + 1,
and the behaviour "logits" are (t, -t): every field of every step is checkable.
"""

from __future__ import annotations

import dm_env
import numpy as np
import pytest
import reverb
import tensorflow as tf

from components.adders import UnrollAdder, unroll_signature
from components.datasets import BatchingIterator, make_single_sample_iterator
from tests import fakes

T = 3
EXTRAS_SPEC = tf.TensorSpec((2,), tf.float32)


def _spec():
    from agentkit.specs import make_environment_spec

    return make_environment_spec(fakes.discrete_environment(observation_shape=()))


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
        adder.add(np.int32(10 + t), timestep, extras=np.array([t, -t], np.float32))


def _expected(length, episode, end="termination"):
    """The steps of one episode (actions, then the last observation), padded, cut in unrolls."""
    steps = []
    for t in range(length):
        last = t == length - 1 and end != "none"
        steps.append((100 * episode + t, 10 + t, t + 1, 0.0 if last and end == "termination" else 1.0,
                      (t, -t), 1.0))
    steps.append((100 * episode + length, 0, 0.0, 0.0, (0, 0), 0.0))
    items = []
    k = 0
    while k * T < length:
        chunk = steps[k * T:k * T + T + 1]
        chunk += [(0, 0, 0.0, 0.0, (0, 0), 0.0)] * (T + 1 - len(chunk))
        items.append(chunk)
        k += 1
    return items


def _read(server, n):
    samples = make_single_sample_iterator(f"localhost:{server.port}", "queue",
                                          rate_limiter_timeout_ms=100)
    items = []
    for _ in range(n):
        d = next(samples).data
        items.append([
            (float(d["observation"][i]), int(d["action"][i]), float(d["reward"][i]),
             float(d["discount"][i]), tuple(float(x) for x in d["extras"][i]),
             float(d["mask"][i]))
            for i in range(T + 1)
        ])
    return items


@pytest.mark.parametrize("length,end", [(2, "termination"), (3, "termination"),
                                        (4, "termination"), (6, "termination"),
                                        (5, "truncation")])
def test_unrolls_are_exact(length, end, reverb_server_factory):
    server, client = reverb_server_factory([reverb.Table.queue(
        "queue", 100, signature=unroll_signature(_spec(), T, EXTRAS_SPEC))])
    adder = UnrollAdder(client, "queue", T, EXTRAS_SPEC)
    _episode(adder, length, 0, end)
    _episode(adder, 2, 1)  # A second episode never mixes with the first.
    adder.close()
    expected = _expected(length, 0, end) + _expected(2, 1)
    assert adder.items_written == len(expected) == -(-length // T) + 1
    assert _read(server, len(expected)) == [
        [(float(o), a, float(r), d, (float(e[0]), float(e[1])), m) for o, a, r, d, e, m in item]
        for item in expected
    ]
    assert client.server_info()["queue"].current_size == 0  # Nothing else was written.


def test_close_writes_an_unfinished_episode_as_truncated(reverb_server_factory):
    server, client = reverb_server_factory([reverb.Table.queue(
        "queue", 100, signature=unroll_signature(_spec(), T, EXTRAS_SPEC))])
    adder = UnrollAdder(client, "queue", T, EXTRAS_SPEC)
    _episode(adder, 4, 0, end="none")
    adder.close()
    items = _read(server, 2)
    assert items[1][0][:2] == (3.0, 13) and items[1][0][3] == 1.0  # Bootstraps: discount 1.
    assert [step[5] for step in items[1]] == [1.0, 0.0, 0.0, 0.0]
    assert items[1][1][0] == 4.0  # The last observation is there, masked.


def test_batching_iterator_keeps_samples_across_restarts(reverb_server_factory):
    server, client = reverb_server_factory([reverb.Table.queue(
        "queue", 100, signature=unroll_signature(_spec(), T, EXTRAS_SPEC))])
    adder = UnrollAdder(client, "queue", T, EXTRAS_SPEC)
    stop = [False]
    batches = BatchingIterator(
        lambda: make_single_sample_iterator(f"localhost:{server.port}", "queue", 50), 4,
        lambda: stop[0])
    firsts = []
    for episode in range(3):  # 3 items, then 5 more: the fourth waits across timeouts.
        _episode(adder, 3, episode)
    adder._writer.flush()

    def take_one():
        batch = next(batches)
        firsts.extend(float(x) for x in batch["observation"][:, 0])

    import threading
    taker = threading.Thread(target=take_one)
    taker.start()
    taker.join(0.5)  # Blocked: 3 samples pending, the dataset times out and restarts.
    assert taker.is_alive() and len(batches.pending) == 3
    for episode in range(3, 8):
        _episode(adder, 3, episode)
    adder._writer.flush()
    taker.join(5)
    take_one()
    assert firsts == [0.0, 100.0, 200.0, 300.0, 400.0, 500.0, 600.0, 700.0]  # FIFO, none lost.
    assert batches.samples_taken == 8
    stop[0] = True
    with pytest.raises(StopIteration):
        next(batches)
    adder.close()
