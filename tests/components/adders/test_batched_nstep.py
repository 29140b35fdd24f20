"""The batched n-step adder writes exactly the per-environment adder's items.

The exact cases of test_nstep run through it in one slot; random episodes in
several slots at once (resets cutting episodes short included) are compared
item by item with per-environment adders fed the same streams.
"""

from __future__ import annotations

import dm_env
import numpy as np
import pytest
import reverb
import tensorflow as tf

from agentkit.types import Transition
from components.adders import BatchedNStepTransitionAdder, NStepTransitionAdder
from components.environments.batched import stack_timesteps
from tests.components.adders.test_nstep import CASES, SIGNATURE, _read_all, episode_stream

FIRST, MID, LAST = (dm_env.StepType.FIRST, dm_env.StepType.MID, dm_env.StepType.LAST)


@pytest.mark.parametrize("name", sorted(CASES))
def test_single_slot_items_are_exact(name, reverb_server_factory):
    n, episodes, expected = CASES[name]
    server, client = reverb_server_factory(
        [reverb.Table.queue("queue", 100, signature=SIGNATURE)])
    adder = BatchedNStepTransitionAdder(client, "queue", num_envs=1, n_step=n, discount=0.5)
    stream = [pair for i, (length, end) in enumerate(episodes)
              for pair in episode_stream(length, 100.0 * i, end)]
    adder.add_first(stack_timesteps([stream[0][1]]))
    for action, timestep in stream[1:]:
        adder.add(np.array([0 if action is None else action], np.int32), stack_timesteps([timestep]))
    adder.close()
    items = [item for item, _ in _read_all(server, client)]
    assert items == [tuple(float(x) for x in e) for e in expected]
    assert adder.items_written == len(expected)


def _random_streams(rng, num_envs: int, steps: int) -> list[list[tuple]]:
    """Per slot, `steps + 1` (action, timestep) pairs in lock-step: random episodes,
    some terminated, some truncated, some cut short by a reset (FIRST after MID)."""
    streams = []
    for slot in range(num_envs):
        stream, episode = [], 0
        while len(stream) < steps + 1:
            length = int(rng.integers(1, 9))
            end = ["termination", "truncation", "none"][int(rng.integers(3))]
            offset = 1000.0 * slot + 20.0 * episode
            stream += episode_stream(length, offset, end)
            episode += 1
        streams.append(stream[:steps + 1])
    return streams


@pytest.mark.parametrize("n_step", [1, 3, 5])
def test_many_slots_match_per_environment_adders(n_step, reverb_server_factory):
    rng = np.random.default_rng(n_step)
    num_envs, steps = 6, 60
    streams = _random_streams(rng, num_envs, steps)
    server, client = reverb_server_factory([
        reverb.Table.queue("batched", 10_000, signature=SIGNATURE),
        reverb.Table.queue("single", 10_000, signature=SIGNATURE)])
    batched = BatchedNStepTransitionAdder(client, "batched", num_envs, n_step, 0.9,
                                          max_in_flight_items=2)
    singles = [NStepTransitionAdder(client, "single", n_step, 0.9) for _ in range(num_envs)]
    batched.add_first(stack_timesteps([s[0][1] for s in streams]))
    for adder, stream in zip(singles, streams):
        adder.add_first(stream[0][1])
    for t in range(1, steps + 1):
        pairs = [s[t] for s in streams]
        actions = np.array([0 if a is None else a for a, _ in pairs], np.int32)
        batched.add(actions, stack_timesteps([ts for _, ts in pairs]))
        for adder, (action, timestep) in zip(singles, pairs):
            if timestep.first():
                adder.add_first(timestep)
            else:
                adder.add(action, timestep)
    batched.close()
    for adder in singles:
        adder.close()
    got = [item for item, _ in _read_all(server, client, "batched")]
    want = [item for item, _ in _read_all(server, client, "single")]
    assert len(got) == len(want) == batched.items_written > steps  # About one per step and slot.

    def by_slot(items):  # Slots write in parallel; within a slot the order is fixed.
        return {slot: [x for x in items if x[0] // 1000 == slot] for slot in range(num_envs)}

    got_by, want_by = by_slot(got), by_slot(want)
    for slot in range(num_envs):
        np.testing.assert_allclose(got_by[slot], want_by[slot], rtol=1e-6, err_msg=f"slot {slot}")


def test_deferred_items_get_the_given_priorities(reverb_server_factory):
    server, client = reverb_server_factory(
        [reverb.Table.queue("queue", 100, signature=SIGNATURE)])
    adder = BatchedNStepTransitionAdder(client, "queue", num_envs=2, n_step=2, discount=0.5,
                                        defer_items=True)
    streams = [episode_stream(3, 0.0, "termination"), episode_stream(4, 1000.0, "none")]
    adder.add_first(stack_timesteps([streams[0][0][1], streams[1][0][1]]))
    assert adder.pending() is None
    written = []
    for t in range(1, 4):
        pairs = [streams[0][t], streams[1][t]]
        adder.add(np.array([a for a, _ in pairs], np.int32), stack_timesteps([ts for _, ts in pairs]))
        pending = adder.pending()
        assert adder.items_written == len(written)  # Nothing reaches replay before its priority.
        if t == 1:  # No item is complete yet.
            assert pending is None
            continue
        priorities = [100.0 * t + i for i in range(len(pending.reward))]
        with pytest.raises(ValueError, match="priorities"):
            adder.write_pending(priorities + [0.0])
        adder.write_pending(priorities)
        written += list(zip(pending.observation.tolist(), pending.action.tolist(),
                            pending.reward.tolist(), pending.next_observation.tolist(),
                            priorities))
    adder.close()  # Slot 1's unfinished episode: its last item, priority 1.
    items = [(item[0], item[1], item[2], item[4], p) for item, p in _read_all(server, client)]
    assert items == written + [(1002.0, 1002.0, 3.0, 1003.0, 1.0)]
    # Step 2: the first item of each slot; step 3: slot 0's end writes three in all.
    assert [p for *_, p in written] == [200.0, 201.0, 300.0, 301.0, 302.0]


def test_nested_observations_and_keep_alive_under_many_episode_ends(reverb_server_factory):
    """16 slots whose episodes all end on the same steps: every reference is still alive."""
    spec = {"position": tf.TensorSpec((2,), tf.float32), "step": tf.TensorSpec((), tf.float32)}
    signature = Transition(observation=spec, action=tf.TensorSpec((), tf.int32),
                           reward=tf.TensorSpec((), tf.float32),
                           discount=tf.TensorSpec((), tf.float32), next_observation=spec)
    server, client = reverb_server_factory([reverb.Table.queue("queue", 10_000, signature=signature)])
    num_envs, n, length = 16, 5, 4  # Episodes shorter than n: every item is written at the end.
    adder = BatchedNStepTransitionAdder(client, "queue", num_envs, n, 1.0, defer_items=True)

    def observation(k):
        return {"position": np.tile(np.arange(num_envs, dtype=np.float32)[:, None], (1, 2)),
                "step": np.full(num_envs, k, np.float32)}

    step_types = {0: FIRST, length: LAST}
    for k in range(3 * (length + 1)):
        phase = k % (length + 1)
        timestep = dm_env.TimeStep(
            step_type=np.full(num_envs, step_types.get(phase, MID), np.int8),
            reward=np.full(num_envs, float(phase), np.float32),
            discount=np.full(num_envs, 0.0 if phase == length else 1.0, np.float32),
            observation=observation(phase))
        if k == 0:
            adder.add_first(timestep)
        else:
            adder.add(np.zeros(num_envs, np.int32), timestep)
        pending = adder.pending()
        if phase == length:
            assert set(pending.observation) == {"position", "step"}
            assert pending.observation["position"].shape == (num_envs * length, 2)
            assert pending.next_observation["step"].tolist() == [length] * (num_envs * length)
        else:
            assert pending is None
        adder.write_pending(None if pending is None else np.ones(len(pending.reward)))
    adder.close()
    assert client.server_info()["queue"].current_size == adder.items_written == 3 * num_envs * length


def test_bad_input_raises(reverb_server_factory):
    _, client = reverb_server_factory([reverb.Table.queue("queue", 10, signature=SIGNATURE)])
    with pytest.raises(ValueError, match="num_envs"):
        BatchedNStepTransitionAdder(client, "queue", num_envs=0, n_step=1, discount=0.9)
    with pytest.raises(ValueError, match="n_step"):
        BatchedNStepTransitionAdder(client, "queue", num_envs=1, n_step=0, discount=0.9)
    adder = BatchedNStepTransitionAdder(client, "queue", num_envs=1, n_step=1, discount=0.9)
    with pytest.raises(ValueError, match="FIRST"):
        adder.add_first(stack_timesteps([dm_env.transition(1.0, np.float32(1))]))
    with pytest.raises(ValueError, match="before add_first"):
        adder.add(np.zeros(1, np.int32), stack_timesteps([dm_env.transition(1.0, np.float32(1))]))


def test_no_reverb_warning_of_pending_items_with_many_slots(reverb_server_factory, capfd):
    """Reverb's writer warns once 50 items wait unconfirmed ("did you forget to call
    Flush?"); 64 slots whose episodes all end at once create 64 + 64 x (n - 1) items in one
    step, which the adder writes in bounded portions, never holding 50."""
    num_envs, n_step = 64, 3
    server, client = reverb_server_factory(
        [reverb.Table.queue("queue", 100_000, signature=SIGNATURE)])
    adder = BatchedNStepTransitionAdder(client, "queue", num_envs, n_step, 0.9,
                                        max_in_flight_items=32)
    for episode in range(3):
        stream = episode_stream(6, 10.0 * episode, "termination")
        adder.add_first(stack_timesteps([stream[0][1]] * num_envs))
        for action, timestep in stream[1:]:
            adder.add(np.full(num_envs, action, np.int32), stack_timesteps([timestep] * num_envs))
    adder.close()
    written = server.localhost_client().server_info()["queue"].current_size
    assert written == adder.items_written == 3 * 6 * num_envs
    err = capfd.readouterr().err
    assert "alarmingly high" not in err, err[-500:]
