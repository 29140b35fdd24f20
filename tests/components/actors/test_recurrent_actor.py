"""The batched recurrent actor: per-environment core states, reset at each episode start."""

from __future__ import annotations

import dm_env
import numpy as np

from agentkit.environment_loop import EnvironmentLoop
from components.actors import BatchedRecurrentActor
from components.adders import PerEnvironmentAdders
from components.environments import BatchedEnvironment
from tests import fakes


class CountingPolicy:
    """The state counts the steps since it was last reset; logits echo it."""

    def __call__(self, observation, state):
        (count,) = state
        batch = len(count)
        return (np.zeros(batch, np.int32), {"logits": np.stack([count, -count], -1)},
                (count + 1.0,))


class RecordingAdder:
    def __init__(self):
        self.steps = []  # (episode, core state the step began with, logits)
        self.episode = -1

    def add_first(self, timestep):
        assert timestep.first()
        self.episode += 1

    def add(self, action, next_timestep, extras=()):
        self.steps.append((self.episode, float(extras["core_state"][0]),
                           tuple(float(x) for x in extras["logits"])))

    def close(self):
        pass


def test_states_are_per_environment_and_reset_at_episode_starts():
    lengths = [3, 5]
    env = BatchedEnvironment([fakes.discrete_environment(episode_length=n) for n in lengths])
    adders = [RecordingAdder(), RecordingAdder()]  # Each environment's, behind one adder.
    actor = BatchedRecurrentActor(CountingPolicy(), lambda b: (np.zeros(b, np.float32),),
                                  PerEnvironmentAdders(adders))
    EnvironmentLoop(env, actor).run(num_steps=40)
    for adder, length in zip(adders, lengths):
        # Each episode's steps begin from states 0, 1, ..., length - 1: a fresh
        # state at every episode start, whatever the other environment does.
        by_episode = {}
        for episode, state, logits in adder.steps:
            by_episode.setdefault(episode, []).append(state)
            assert logits == (state, -state)  # The extras of the same step.
        complete = [states for states in by_episode.values() if len(states) == length]
        assert len(complete) >= 2
        for states in complete:
            assert states == [float(k) for k in range(length)]


def test_observe_first_starts_every_environment_afresh():
    actor = BatchedRecurrentActor(CountingPolicy(), lambda b: (np.zeros(b, np.float32),))
    observation = np.zeros((3, 4), np.float32)
    for _ in range(4):
        actor.select_action(observation)
    first = dm_env.TimeStep(step_type=np.full(3, dm_env.StepType.FIRST), reward=np.zeros(3),
                            discount=np.ones(3), observation=observation)
    actor.observe_first(first)
    actor.select_action(observation)
    assert actor._step_state[0].tolist() == [0.0, 0.0, 0.0]
