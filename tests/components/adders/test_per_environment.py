"""PerEnvironmentAdders: K single-environment adders behind the batched adder contract."""

from __future__ import annotations

import dm_env
import numpy as np
import pytest

from components.adders import PerEnvironmentAdders, slot_timestep


class Recording:
    """A single-environment adder that records what it gets, and defers items on request."""

    def __init__(self, pending=()):
        self.log = []
        self._pending = list(pending)
        self.written = None

    def add_first(self, timestep):
        self.log.append(("first", float(timestep.observation[0])))

    def add(self, action, next_timestep, extras=()):
        self.log.append(("step", int(action), float(next_timestep.observation[0]),
                         float(next_timestep.reward), extras))

    def pending(self):
        return self._pending

    def write_pending(self, priorities=None):
        self.written = None if priorities is None else list(priorities)
        self._pending = []

    def reset(self):
        self.log.append(("reset",))

    def close(self):
        self.log.append(("close",))


def _batched(step_types, observations, rewards):
    return dm_env.TimeStep(step_type=np.asarray(step_types), reward=np.asarray(rewards, float),
                           discount=np.ones(len(step_types)),
                           observation=np.asarray(observations, np.float32)[:, None])


def test_row_i_of_each_step_goes_to_adder_i_and_a_restart_becomes_add_first():
    adders = [Recording(), Recording(), Recording()]
    batched = PerEnvironmentAdders(adders)
    assert batched.num_envs == 3
    F, M, L = dm_env.StepType.FIRST, dm_env.StepType.MID, dm_env.StepType.LAST
    batched.add_first(_batched([F, F, F], [10, 20, 30], [0, 0, 0]))
    batched.add(np.array([1, 2, 3]), _batched([M, L, M], [11, 21, 31], [0.5, 1.5, 2.5]),
                {"logits": np.array([[1.0], [2.0], [3.0]])})
    batched.add(np.array([4, 5, 6]), _batched([M, F, L], [12, 22, 32], [0.1, 0.0, 0.3]))
    assert adders[0].log == [("first", 10.0), ("step", 1, 11.0, 0.5, {"logits": [1.0]}),
                             ("step", 4, 12.0, 0.1, ())]
    # Environment 1's episode ended at the first step; its next row restarts it.
    assert adders[1].log == [("first", 20.0), ("step", 2, 21.0, 1.5, {"logits": [2.0]}),
                             ("first", 22.0)]
    assert adders[2].log[-1] == ("step", 6, 32.0, 0.3, ())
    batched.close()
    assert all(a.log[-1] == ("close",) for a in adders)


def test_pending_items_are_pooled_and_priorities_go_back_in_the_same_order():
    adders = [Recording(pending=[np.float32(1), np.float32(2)]), Recording(),
              Recording(pending=[np.float32(3)])]
    batched = PerEnvironmentAdders(adders)
    np.testing.assert_array_equal(batched.pending(), [1.0, 2.0, 3.0])
    batched.write_pending(np.array([0.1, 0.2, 0.3]))
    assert adders[0].written == [0.1, 0.2] and adders[2].written == [0.3]
    assert adders[1].written is None  # Nothing of its was pending: not called.
    assert batched.pending() is None  # All written.
    with pytest.raises(ValueError, match="0 items pending, got 2 priorities"):
        batched.write_pending(np.array([1.0, 2.0]))


def test_slot_timestep_takes_one_row_and_a_first_step_has_no_reward():
    step = _batched([dm_env.StepType.FIRST, dm_env.StepType.MID], [1, 2], [0.0, 4.0])
    first, mid = slot_timestep(step, 0), slot_timestep(step, 1)
    assert first.first() and first.reward is None and first.discount is None
    assert mid.mid() and mid.reward == 4.0 and float(mid.observation[0]) == 2.0


def test_an_actor_refuses_a_list_of_adders_naming_the_wrapper():
    from components.actors import BatchedFeedForwardActor

    with pytest.raises(TypeError, match="PerEnvironmentAdders"):
        BatchedFeedForwardActor(lambda o: o, [Recording(), Recording()])
