"""The loops' step and episode counts are exact; batched slots reset independently."""

from __future__ import annotations

import dm_env
import numpy as np

from agentkit import core
from agentkit.counting import Counter
from agentkit.environment_loop import BatchedEnvironmentLoop, EnvironmentLoop
from agentkit.loggers import Logger
from components.environments import BatchedEnvironment
from tests import fakes


class RecordingLogger(Logger):
    def __init__(self):
        self.rows = []

    def write(self, data):
        self.rows.append(dict(data))


class CountingActor(core.Actor):
    """Always picks action 1 and records what it observed."""

    def __init__(self, batch: int | None = None):
        self.batch = batch
        self.firsts = 0
        self.observes = 0
        self.updates = 0

    def select_action(self, observation):
        return np.ones(self.batch, np.int32) if self.batch else np.int32(1)

    def observe_first(self, timestep):
        self.firsts += 1

    def observe(self, action, next_timestep):
        self.observes += 1

    def update(self, wait=False):
        self.updates += 1


def test_loop_counts_steps_and_episodes_exactly():
    env = fakes.discrete_environment(episode_length=7, rewards=[1.0] * 7)
    actor, logger, counter = CountingActor(), RecordingLogger(), Counter(prefix="actor")
    loop = EnvironmentLoop(env, actor, counter=counter, logger=logger, count_every=3)
    loop.run(num_episodes=4)
    assert (loop.steps, loop.episodes) == (28, 4)
    assert counter.get_counts() == {"actor_steps": 28, "actor_episodes": 4}
    assert actor.firsts == 4 and actor.observes == 28 and actor.updates == 28
    assert [r["episode_return"] for r in logger.rows] == [7.0] * 4
    assert [r["episode_length"] for r in logger.rows] == [7] * 4
    assert logger.rows[-1]["actor_steps"] == 28
    assert all(r["steps_per_s"] > 0 for r in logger.rows)


def test_loop_stops_when_should_stop_says_so():
    env = fakes.discrete_environment(episode_length=1000)
    counter = Counter(prefix="actor")
    loop = EnvironmentLoop(env, CountingActor(), counter=counter, count_every=10,
                           should_stop=lambda c: c["actor_steps"] >= 50)
    loop.run()
    assert loop.steps == 50
    assert counter.get("steps") == 50


def test_batched_loop_counts_each_environment():
    lengths = [2, 3, 5]
    envs = [fakes.discrete_environment(episode_length=n, rewards=[1.0] * n, seed=i)
            for i, n in enumerate(lengths)]
    batched = BatchedEnvironment(envs)
    actor, logger, counter = CountingActor(batch=3), RecordingLogger(), Counter(prefix="actor")
    BatchedEnvironmentLoop(batched, actor, counter=counter, logger=logger).run(num_steps=60)
    counts = counter.get_counts()

    def stepped(b):  # Each slot alternates n steps with one reset step.
        return sum(b // (n + 1) * n + min(b % (n + 1), n) for n in lengths)

    batched_steps = next(b for b in range(1, 100) if stepped(b) >= 60)
    assert counts["actor_steps"] == stepped(batched_steps) == 60 + (stepped(batched_steps) - 60)
    assert counts["actor_steps"] < 60 + len(lengths)
    assert sorted({r["episode_return"] for r in logger.rows}) == [2.0, 3.0, 5.0]
    assert all(r["episode_length"] == r["episode_return"] for r in logger.rows)
    # Every environment was stepped only with the actions of its own slot.
    assert all(a == 1 for env in envs for a in env.actions)


def test_batched_environment_resets_a_finished_slot_on_the_next_step():
    envs = [fakes.discrete_environment(episode_length=1), fakes.discrete_environment(episode_length=3)]
    batched = BatchedEnvironment(envs)
    first = batched.reset()
    assert list(first.step_type) == [dm_env.StepType.FIRST] * 2
    ts = batched.step(np.zeros(2, np.int32))
    assert list(ts.step_type) == [dm_env.StepType.LAST, dm_env.StepType.MID]
    ts = batched.step(np.zeros(2, np.int32))
    assert list(ts.step_type) == [dm_env.StepType.FIRST, dm_env.StepType.MID]
    assert ts.observation.shape == (2, 4)
    assert envs[0].num_resets == 2 and len(envs[0].actions) == 1
