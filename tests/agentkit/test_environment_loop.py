"""The one loop: its step and episode counts are exact, slots reset independently, and an
evaluation round runs one episode in each environment."""

from __future__ import annotations

import time

import dm_env
import numpy as np
import pytest

from agentkit import core
from agentkit.counting import Counter
from agentkit.environment_loop import EnvironmentLoop
from agentkit.loggers import Logger
from components.environments import BatchedEnvironment, EnvironmentFailure
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
    env = BatchedEnvironment([fakes.discrete_environment(episode_length=7, rewards=[1.0] * 7)])
    actor, logger, counter = CountingActor(batch=1), RecordingLogger(), Counter(prefix="actor")
    loop = EnvironmentLoop(env, actor, counter=counter, logger=logger, count_every=3)
    loop.run(num_episodes=4)
    assert (loop.steps, loop.episodes) == (28, 4)
    assert counter.get_counts() == {"actor_steps": 28, "actor_episodes": 4}
    # One observe_first; the 3 later episodes start with a reset step (observed, not counted).
    assert actor.firsts == 1 and actor.observes == 28 + 3 and actor.updates == 28 + 3
    assert [r["episode_return"] for r in logger.rows] == [7.0] * 4
    assert [r["episode_length"] for r in logger.rows] == [7] * 4
    assert logger.rows[-1]["actor_steps"] == 28
    assert all(r["steps_per_s"] > 0 for r in logger.rows)


def test_loop_stops_when_should_stop_says_so():
    env = BatchedEnvironment([fakes.discrete_environment(episode_length=1000)])
    counter = Counter(prefix="actor")
    loop = EnvironmentLoop(env, CountingActor(batch=1), counter=counter, count_every=10,
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
    EnvironmentLoop(batched, actor, counter=counter, logger=logger).run(num_steps=60)
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


class SlowRecordingActor(CountingActor):
    """Takes `delay_s` per action (a network call) and records each slot's stream."""

    def __init__(self, batch: int, delay_s: float = 0.0):
        super().__init__(batch)
        self.delay_s = delay_s
        self.streams: list[list] = [[] for _ in range(batch)]

    def select_action(self, observation):
        if self.delay_s:
            time.sleep(self.delay_s)
        return super().select_action(observation)

    def observe_first(self, timestep):
        super().observe_first(timestep)
        for i in range(self.batch):
            self.streams[i].append(("first", timestep.observation[i].tolist()))

    def observe(self, action, next_timestep):
        super().observe(action, next_timestep)
        for i in range(self.batch):
            self.streams[i].append((int(next_timestep.step_type[i]),
                                    next_timestep.observation[i].tolist()))


def _groups(lengths, delay_s=0.0):
    envs = [[fakes.discrete_environment(episode_length=n, rewards=[1.0] * n, seed=10 * g + i,
                                        step_delay_s=delay_s)
             for i, n in enumerate(group)] for g, group in enumerate(lengths)]
    return envs, [BatchedEnvironment(group) for group in envs]


def test_alternating_groups_keep_each_stream_and_count_every_step():
    lengths = [[2, 3], [4, 5]]
    _, solo = _groups(lengths)  # The same environments, one group at a time.
    envs, batched = _groups(lengths)
    actors = [SlowRecordingActor(2), SlowRecordingActor(2)]
    counter, logger = Counter(prefix="actor"), RecordingLogger()
    loop = EnvironmentLoop(batched, actors, counter=counter, logger=logger)
    loop.run(num_steps=200)
    # Each group was stepped as often as the other (round robin), give or take one step.
    assert abs(actors[0].observes - actors[1].observes) <= 1
    assert actors[0].firsts == actors[1].firsts == 1
    assert counter.get("steps") == loop.steps >= 200
    # Every slot saw exactly the stream its environment alone produces.
    for g in range(len(lengths)):
        reference = SlowRecordingActor(2)
        EnvironmentLoop(solo[g], reference).run(num_steps=10_000)
        for i in range(2):
            stream = actors[g].streams[i]
            assert stream == reference.streams[i][:len(stream)]
    assert sorted({r["episode_return"] for r in logger.rows}) == [2.0, 3.0, 4.0, 5.0]
    assert all(a == 1 for group in envs for env in group for a in env.actions)


def test_alternating_groups_overlap_simulation_and_inference():
    """Sequentially a step costs simulation + inference; alternating, about the larger one."""
    delay = 0.02
    _, one = _groups([[1000] * 4], delay_s=delay / 4)  # 4 simulators: `delay` per batch.
    start = time.perf_counter()
    EnvironmentLoop(one[0], SlowRecordingActor(4, delay)).run(num_steps=4 * 40)
    sequential = time.perf_counter() - start
    _, two = _groups([[1000] * 2] * 2, delay_s=delay / 4)  # Two groups of 2: delay/2 each.
    start = time.perf_counter()
    EnvironmentLoop(two, [SlowRecordingActor(2, delay / 2), SlowRecordingActor(2, delay / 2)]
                           ).run(num_steps=4 * 40)
    alternating = time.perf_counter() - start
    assert sequential >= 40 * 2 * delay
    assert alternating < 0.7 * sequential, (alternating, sequential)


def test_an_environment_failure_in_a_group_is_raised_after_the_other_group_finishes():
    flaky = BatchedEnvironment([fakes.FlakyEnvironment(
        fakes.discrete_environment(episode_length=100), fail_at_steps=(3,))], max_failures=0)
    fine = BatchedEnvironment([fakes.discrete_environment(episode_length=100)])
    loop = EnvironmentLoop([flaky, fine], [CountingActor(1), CountingActor(1)])
    with pytest.raises(EnvironmentFailure):
        loop.run(num_steps=50)
    flaky.close()
    fine.close()


def test_an_evaluation_round_runs_one_episode_in_each_environment_and_counts_nothing():
    """Short episodes do not count twice: each environment's first episode is its row, with
    the counts the round was given."""
    lengths = [2, 5, 3]
    envs = [fakes.discrete_environment(episode_length=n, rewards=[float(i + 1)] * n, seed=i)
            for i, n in enumerate(lengths)]
    actor, logger, counter = CountingActor(batch=3), RecordingLogger(), Counter(prefix="actor")
    loop = EnvironmentLoop(BatchedEnvironment(envs), actor, counter=counter, logger=logger,
                           update_actor=False)
    returns = loop.run_episode_each(row_fields={"actor_steps": 1234, "learner_steps": 5})
    assert returns == [2.0, 10.0, 9.0]  # Lengths 2, 5, 3 at rewards 1, 2, 3.
    assert [(r["episode_return"], r["episode_length"]) for r in logger.rows] == [
        (2.0, 2), (10.0, 5), (9.0, 3)]
    assert all(r["actor_steps"] == 1234 and r["learner_steps"] == 5 for r in logger.rows)
    assert actor.observes == 5 and actor.updates == 0  # The longest episode's steps.
    assert counter.get_counts() == {} and loop.steps == 0
    loop.stop()  # Stopped: the next round logs nothing.
    assert loop.run_episode_each() is None and len(logger.rows) == 3
