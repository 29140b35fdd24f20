"""The rate limiter holds the samples-per-insert ratio; tables get the right signature."""

from __future__ import annotations

import dataclasses
import threading
import time

import numpy as np
import pytest
import reverb
import tensorflow as tf
import tree
from dm_env import specs

from agentkit.specs import make_environment_spec
from components.adders import NStepTransitionAdder
from components.datasets import make_reverb_dataset
from components.replay import make_rate_limiter, make_replay_table, transition_signature
from tests import fakes

SPI, MIN_SIZE, BUFFER = 4.0, 50, 40.0


def _table(limiter, prioritized=False):
    return make_replay_table("t", tf.TensorSpec((), tf.float32), 10_000, limiter, prioritized)


def _counts(client):
    info = client.server_info()["t"].rate_limiter_info
    return info.insert_stats.completed, info.sample_stats.completed


def test_ratio_held_within_error_buffer_with_threads(reverb_server_factory):
    server, client = reverb_server_factory([_table(make_rate_limiter(SPI, MIN_SIZE, BUFFER))])
    done = threading.Event()
    num_items = 600

    def insert():
        try:
            with client.trajectory_writer(1) as writer:
                for i in range(num_items):
                    writer.append(np.float32(i))
                    writer.create_item("t", 1.0, writer.history[-1])
                    writer.flush(block_until_num_items=2)
        finally:
            done.set()

    def sample():
        dataset = reverb.TrajectoryDataset.from_table_signature(
            f"localhost:{server.port}", "t", max_in_flight_samples_per_worker=1,
            rate_limiter_timeout_ms=500)
        while not done.is_set():
            for _ in dataset:
                pass

    threads = [threading.Thread(target=insert), threading.Thread(target=sample)]
    for t in threads:
        t.start()
    observations = []
    while not done.is_set():
        observations.append(_counts(client))
        time.sleep(0.005)
    for t in threads:
        t.join(timeout=30)
    observations.append(_counts(client))
    inserts, samples = observations[-1]
    assert inserts == num_items
    # Sampling caught up with the inserts, to within the window, by the end.
    assert samples >= SPI * (inserts - MIN_SIZE) - BUFFER - 1
    for inserts, samples in observations:
        assert samples <= max(0.0, SPI * (inserts - MIN_SIZE)) + BUFFER + 1, (inserts, samples)
        if inserts >= MIN_SIZE:
            # Inserts never ran ahead of sampling by more than the window.
            assert SPI * (inserts - 1 - MIN_SIZE) - samples <= BUFFER + SPI, (inserts, samples)
    assert len(observations) > 10


def test_inserts_block_without_a_sampler(reverb_server_factory):
    _, client = reverb_server_factory([_table(make_rate_limiter(SPI, MIN_SIZE, BUFFER))])
    writer = client.trajectory_writer(1)
    with pytest.raises(reverb.errors.DeadlineExceededError):
        for i in range(MIN_SIZE + 100):
            writer.append(np.float32(i))
            writer.create_item("t", 1.0, writer.history[-1])
            writer.flush(timeout_ms=300)
    writer.close()  # Not a context manager: its exit would flush, and block.
    inserts, _ = _counts(client)
    # MIN_SIZE items, then the window allows BUFFER / SPI more before blocking.
    assert MIN_SIZE <= inserts <= MIN_SIZE + BUFFER / SPI + 1


def test_rate_limiter_choices():
    assert isinstance(make_rate_limiter(None, 10), reverb.rate_limiters.MinSize)
    assert isinstance(make_rate_limiter(8.0, 10), reverb.rate_limiters.SampleToInsertRatio)
    with pytest.raises(ValueError, match="error_buffer"):
        make_rate_limiter(8.0, 10, error_buffer=10.0)  # Narrower than 2 * 8.
    with pytest.raises(ValueError, match="min_replay_size"):
        make_rate_limiter(1.0, 0)


def test_transition_signature_follows_the_spec():
    spec = make_environment_spec(fakes.fake_atari())
    signature = transition_signature(spec)
    assert signature.observation.shape == (84, 84, 4)
    assert signature.observation.dtype == tf.uint8
    assert signature.next_observation == signature.observation
    assert signature.action.dtype == tf.int32
    assert signature.reward.shape == ()


def test_transition_signature_of_scalar_rewards_is_unchanged():
    signature = transition_signature(make_environment_spec(fakes.discrete_environment()))
    assert signature.reward == signature.discount == tf.TensorSpec((), tf.float32)
    assert signature.extras == ()
    assert len(tree.flatten(signature)) == 5  # The columns of existing tables, no more.


def test_transition_signature_of_nests_and_extras():
    spec = make_environment_spec(fakes.nested_environment())
    extras_spec = {"logits": tf.TensorSpec((3,), tf.float32)}
    signature = transition_signature(spec, extras_spec)
    assert signature.observation["pixels"] == tf.TensorSpec((2, 2), tf.uint8)
    assert signature.observation["vec"][1] == tf.TensorSpec((), tf.int32)
    assert signature.next_observation == signature.observation
    assert signature.reward == {"a": tf.TensorSpec((2,), tf.float32),
                                "b": tf.TensorSpec((), tf.float32)}
    # A scalar discount applies to every reward leaf: D has the reward's structure.
    assert signature.discount == {"a": tf.TensorSpec((), tf.float32),
                                  "b": tf.TensorSpec((), tf.float32)}
    assert signature.extras == extras_spec
    # A discount of the reward's structure keeps its own shapes; R broadcasts over both.
    nested = dataclasses.replace(spec, rewards={"a": specs.Array((), np.float32),
                                                "b": specs.Array((2,), np.float32)},
                                 discounts={"a": specs.Array((3,), np.float32),
                                            "b": specs.Array((), np.float32)})
    signature = transition_signature(nested)
    assert signature.reward == {"a": tf.TensorSpec((3,), tf.float32),
                                "b": tf.TensorSpec((2,), tf.float32)}
    assert signature.discount == {"a": tf.TensorSpec((3,), tf.float32),
                                  "b": tf.TensorSpec((), tf.float32)}
    with pytest.raises(ValueError, match="discount: must be one array for every reward leaf"):
        transition_signature(dataclasses.replace(spec, discounts={"x": specs.Array((), np.float32)}))


def test_dataset_samples_nested_items_of_a_signature_table(reverb_server_factory):
    env = fakes.nested_environment(episode_length=5, rewards=[1.0, 2.0, 3.0, 4.0, 5.0])
    signature = transition_signature(make_environment_spec(env))
    server, client = reverb_server_factory([reverb.Table.queue("q", 10, signature=signature)])
    adder = NStepTransitionAdder(client, "q", n_step=2, discount=0.5)
    timestep = env.reset()
    observations = [timestep.observation]
    adder.add_first(timestep)
    while not timestep.last():
        timestep = env.step(np.int32(len(observations) % 3))
        observations.append(timestep.observation)
        adder.add(np.int32((len(observations) - 1) % 3), timestep)
    adder.close()
    dataset = make_reverb_dataset(f"localhost:{server.port}", "q", batch_size=5,
                                  num_workers_per_iterator=1, rate_limiter_timeout_ms=100)
    batch = next(iter(dataset)).data
    assert batch.observation["pixels"].shape == (5, 2, 2)
    assert batch.observation["pixels"].dtype == tf.uint8
    np.testing.assert_array_equal(batch.observation["vec"][0],
                                  [o["vec"][0] for o in observations[:5]])
    np.testing.assert_array_equal(batch.next_observation["vec"][1],
                                  [observations[k]["vec"][1] for k in (2, 3, 4, 5, 5)])
    returns = [2.0, 3.5, 5.0, 6.5, 5.0]  # r_{t+1} + 0.5 r_{t+2}, the last one alone.
    np.testing.assert_array_equal(batch.reward["b"], returns)
    np.testing.assert_array_equal(batch.reward["a"], np.stack([returns, returns], axis=1))
    np.testing.assert_array_equal(batch.discount["a"], [0.25, 0.25, 0.25, 0.0, 0.0])
    np.testing.assert_array_equal(batch.discount["b"], batch.discount["a"])
    assert batch.extras == ()
