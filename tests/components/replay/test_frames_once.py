"""Frames stored once: the learner's batches are those of whole stored stacks, frame by frame.

Three fake Atari games (4-frame stacks, a first stack repeating its first
frame, episodes of 1 to 6 steps) feed two adders at once: the batched n-step
adder storing whole observations and the frames-once adder. Read back in order
through the dataset (with `unpack_frames_once` for the second), every batch is
equal, episode starts included.
"""

from __future__ import annotations

import numpy as np
import pytest
import reverb

from agentkit.specs import make_environment_spec
from agents.dqn import DQNBuilder, DQNConfig
from components.adders import (
    BatchedNStepTransitionAdder,
    FramesOnceNStepAdder,
    frames_once_signature,
)
from components.datasets import make_reverb_dataset, unpack_frames_once
from components.environments.batched import BatchedEnvironment, stack_timesteps
from components.replay.tables import transition_signature
from tests import fakes

NUM_ENVS, STEPS, BATCH = 3, 40, 8


def _read(server, table: str, count: int, transform=None) -> list:
    dataset = make_reverb_dataset(f"localhost:{server.port}", table, BATCH, prefetch_size=0,
                                  max_in_flight_samples_per_worker=1, num_workers_per_iterator=1,
                                  rate_limiter_timeout_ms=0, transform=transform)
    return [sample.data for sample in dataset.take(count // BATCH)]


@pytest.mark.parametrize("n_step", [1, 3, 5])  # 5: more steps than frames in a stack.
def test_frames_once_gives_the_same_batches_frame_by_frame(reverb_server_factory, n_step):
    envs = BatchedEnvironment([fakes.FrameStackAtari(episode_length=6, seed=i)
                               for i in range(NUM_ENVS)])
    spec = make_environment_spec(fakes.FrameStackAtari())
    server, client = reverb_server_factory([
        reverb.Table.queue("whole", 10_000, signature=transition_signature(spec)),
        reverb.Table.queue("once", 10_000, signature=frames_once_signature(spec, n_step))])
    whole = BatchedNStepTransitionAdder(client, "whole", NUM_ENVS, n_step, 0.99)
    once = FramesOnceNStepAdder(client, "once", NUM_ENVS, n_step, 0.99)
    timestep = envs.reset()
    for adder in (whole, once):
        adder.add_first(timestep)
    rng = np.random.default_rng(0)
    for _ in range(STEPS):
        actions = rng.integers(0, 6, NUM_ENVS).astype(np.int32)
        timestep = envs.step(actions)
        for adder in (whole, once):
            adder.add(actions, timestep)
    for adder in (whole, once):
        adder.close()
    count = whole.items_written
    assert count == once.items_written > STEPS * NUM_ENVS // 2
    info = client.server_info()
    assert info["whole"].current_size == info["once"].current_size == count

    want = _read(server, "whole", count)
    got = _read(server, "once", count, unpack_frames_once(n_step))
    assert len(got) == len(want) == count // BATCH
    starts = 0
    for a, b in zip(want, got):
        assert b.observation.shape == (BATCH, 84, 84, 4) and b.observation.dtype == np.uint8
        for field in ("observation", "action", "reward", "discount", "next_observation"):
            assert getattr(a, field).dtype == getattr(b, field).dtype, field
            np.testing.assert_array_equal(getattr(a, field), getattr(b, field), err_msg=field)
        frames = b.observation.numpy()
        starts += int(np.sum(np.all(frames == frames[..., :1], axis=(1, 2, 3))))
    assert starts >= 3  # Items at episode starts, whose stacks repeat the first frame.


def test_observations_that_do_not_stack_frames_fail_in_one_line(reverb_server_factory):
    spec = make_environment_spec(fakes.fake_atari())
    _, client = reverb_server_factory(
        [reverb.Table.queue("once", 100, signature=frames_once_signature(spec, 1))])
    envs = BatchedEnvironment([fakes.fake_atari(seed=i) for i in range(2)])  # Random stacks.
    adder = FramesOnceNStepAdder(client, "once", 2, 1, 0.99)
    adder.add_first(envs.reset())
    with pytest.raises(ValueError, match="store_frames_once: items carry no extras"):
        adder.add(np.zeros(2, np.int32), envs.step(np.zeros(2, np.int32)),
                  {"logits": np.zeros((2, 6), np.float32)})
    with pytest.raises(ValueError, match="not its previous one moved on by one frame"):
        adder.add(np.zeros(2, np.int32), envs.step(np.zeros(2, np.int32)))
    vectors = FramesOnceNStepAdder(client, "once", 1, 1, 0.99)
    with pytest.raises(ValueError, match=r"must be 1 uint8 \[H, W, S\] stacks"):
        vectors.add_first(stack_timesteps([fakes.discrete_environment().reset()]))
    with pytest.raises(ValueError, match="the observation must be one uint8"):
        frames_once_signature(make_environment_spec(fakes.discrete_environment()), 1)


def test_deferred_priorities_see_whole_stacks(reverb_server_factory):
    """Ape-X actors compute priorities from `pending()`: whole stacks, as stored whole."""
    spec = make_environment_spec(fakes.FrameStackAtari())
    server, client = reverb_server_factory(
        [reverb.Table.queue("once", 1000, signature=frames_once_signature(spec, 2))])
    envs = BatchedEnvironment([fakes.FrameStackAtari(episode_length=6, seed=i) for i in range(2)])
    adder = FramesOnceNStepAdder(client, "once", 2, 2, 0.9, defer_items=True)
    timestep = envs.reset()
    adder.add_first(timestep)
    stacks, priorities = [], []
    for _ in range(12):
        timestep = envs.step(np.zeros(2, np.int32))
        adder.add(np.zeros(2, np.int32), timestep)
        pending = adder.pending()
        if pending is not None:
            assert pending.observation.shape[1:] == (84, 84, 4)
            stacks.append(pending.observation)
            priorities += [float(len(priorities) + 1 + k) for k in range(len(pending.reward))]
            adder.write_pending(priorities[-len(pending.reward):])
        else:
            adder.write_pending()
    assert adder.items_written < len(priorities)  # The last 8 steps' items wait for chunks.
    adder.close()  # Creates them, and the unfinished episodes' items at priority 1.
    written, closing = len(priorities), adder.items_written - len(priorities)
    assert written > 6 and 1 <= closing <= 2 * 2
    dataset = make_reverb_dataset(f"localhost:{server.port}", "once", 1, prefetch_size=0,
                                  max_in_flight_samples_per_worker=1, num_workers_per_iterator=1,
                                  rate_limiter_timeout_ms=0, transform=unpack_frames_once(2))
    samples = list(dataset.take(adder.items_written))[:written]
    assert [float(s.info.priority[0]) for s in samples] == priorities
    np.testing.assert_array_equal(np.concatenate(stacks),
                                  np.concatenate([s.data.observation for s in samples]))


def test_the_atari_preset_stores_frames_once_and_checks_the_spec():
    builder = DQNBuilder(DQNConfig.atari())
    spec = make_environment_spec(fakes.FrameStackAtari())
    [table] = builder.make_replay_tables(spec=spec)
    assert table.info.signature.frames.shape == (4 + 3, 84, 84)  # S + n frames.
    assert table.info.signature.scalars.shape == (4,)
    whole = DQNBuilder(DQNConfig.atari(store_frames_once=False))
    [table] = whole.make_replay_tables(spec=spec)
    assert table.info.signature.observation.shape == (84, 84, 4)
    vectors = make_environment_spec(fakes.discrete_environment())
    with pytest.raises(ValueError, match="store_frames_once: the observation must be one uint8"):
        builder.make_replay_tables(spec=vectors)
    with pytest.raises(ValueError, match="store_frames_once: the observation must be one uint8"):
        builder.make_adder(replay_client=None, spec=vectors, num_envs=2)
