"""Runs an actor in its environments: the one loop of every actor and evaluator.

K environments (K = 1 included) step in lock-step with one batched action a
step (see `components.environments.batched`, which resets a finished
environment itself). The loop counts steps and episodes in a (child) counter,
logs one row per episode (return, length, steps/s and all counts of the
program), and stops when asked to, or after a number of steps or episodes.
An evaluator runs it one episode in each environment at a time
(`run_episode_each`), counting nothing.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping

import dm_env
import numpy as np

from agentkit import core
from agentkit.counting import Counter
from agentkit.loggers import Logger, NoOpLogger

ShouldStop = Callable[[Mapping[str, float]], bool]


class _Group:
    """One batched environment, its actor and the running returns of its episodes."""

    def __init__(self, environment, actor: core.Actor):
        self.environment = environment
        self.actor = actor
        self.returns = np.zeros(environment.num_envs, np.float64)
        self.lengths = np.zeros(environment.num_envs, np.int64)
        self.timestep: dm_env.TimeStep | None = None
        self.actions = None
        self.in_flight = False


class EnvironmentLoop:
    """Steps K environments in lock-step with one batched actor call per step.

    The environment returns batched timesteps (arrays with a leading K axis)
    and resets an environment whose previous timestep was LAST on the next
    `step`, returning a FIRST timestep for it; the actor hands each batched
    step to its one adder. A reset is not counted as a step.

    Alternating groups (Sample Factory's double buffering): given a list of
    environments and a list of actors, group g's simulators step (through
    the environment's `step_async`/`step_wait`) while the other group's
    actor computes its actions, so neither the CPU nor the network waits.
    Each group has its own actor (its own adders and recurrent states); the
    actors may share networks, and then one variable client is enough.
    """

    def __init__(
        self,
        environment,
        actor,
        counter: Counter | None = None,
        logger: Logger | None = None,
        should_stop: ShouldStop | None = None,
        count_every: int = 100,
        update_actor: bool = True,
        row_fields: Mapping[str, object] | None = None,
    ):
        """`environment` and `actor`: one group's, or lists of the alternating groups'.
        `row_fields`: constant columns of every episode's row (an actor node's `actor_id`,
        so that the rows of several actors in one CSV stay apart)."""
        environments = list(environment) if isinstance(environment, (list, tuple)) else [environment]
        actors = list(actor) if isinstance(actor, (list, tuple)) else [actor]
        if len(environments) != len(actors):
            raise ValueError(f"{len(environments)} environment groups but {len(actors)} actors")
        self._groups = [_Group(e, a) for e, a in zip(environments, actors)]
        self._counter = counter or Counter()
        self._logger = logger or NoOpLogger()
        self._should_stop = should_stop
        self._count_every = count_every
        self._update_actor = update_actor
        self._row_fields = dict(row_fields or {})
        self._pending_steps = 0
        self._pending_episodes = 0
        self.steps = 0  # Steps taken by this loop.
        self.episodes = 0  # Episodes finished by this loop.
        self._counts: dict[str, float] = {}
        self._start = time.time()
        self._stopped = False

    def _count(self, steps: int, episodes: int = 0, force: bool = False) -> None:
        self.steps += steps
        self.episodes += episodes
        self._pending_steps += steps
        self._pending_episodes += episodes
        if force or self._pending_steps >= self._count_every or self._pending_episodes:
            self._counts = self._counter.increment(
                steps=self._pending_steps, episodes=self._pending_episodes
            )
            self._pending_steps = self._pending_episodes = 0
            if self._should_stop is not None and self._should_stop(self._counts):
                self._stopped = True

    def _log_episode(self, episode_return: float, episode_length: int) -> None:
        elapsed = max(time.time() - self._start, 1e-9)
        row = dict(self._counts)
        row.update(self._row_fields)
        row.update(
            episode_return=float(episode_return),
            episode_length=int(episode_length),
            steps_per_s=self.steps / elapsed,
        )
        self._logger.write(row)

    def _done(self, num_steps: int | None, num_episodes: int | None) -> bool:
        return (
            self._stopped
            or (num_steps is not None and self.steps >= num_steps)
            or (num_episodes is not None and self.episodes >= num_episodes)
        )

    def stop(self) -> None:
        """Asks the loop to stop after its current step (thread-safe); an actor waiting for
        its learner is interrupted."""
        self._stopped = True
        for group in self._groups:
            group.actor.interrupt()

    def close(self) -> None:
        self._count(0, force=True)

    def run(self, num_episodes: int | None = None, num_steps: int | None = None) -> None:
        groups = self._groups
        try:
            for group in groups:
                timestep = group.environment.reset()
                group.actor.observe_first(timestep)
                group.timestep = timestep
            if len(groups) == 1:
                group = groups[0]
                while not self._done(num_steps, num_episodes):
                    actions = group.actor.select_action(group.timestep.observation)
                    self._observe(group, actions, group.environment.step(actions))
                return
            # Round robin: while group g's simulators run, the next group's
            # actor infers; then g's results are recorded and g starts again.
            for group in groups:
                self._start_step(group)
            g = 0
            while not self._done(num_steps, num_episodes):
                self._finish_step(groups[g])
                if not self._done(num_steps, num_episodes):
                    self._start_step(groups[g])
                g = (g + 1) % len(groups)
            for group in groups:  # Steps in flight are recorded: nothing is lost.
                if group.in_flight:
                    self._finish_step(group)
        except BaseException:
            for group in groups:  # Let the simulators finish before anything closes them.
                if group.in_flight:
                    group.in_flight = False
                    try:
                        group.environment.step_wait()
                    except Exception:  # noqa: BLE001  (the first error is the one raised)
                        pass
            raise
        finally:
            self.close()

    def run_episode_each(self, row_fields: Mapping[str, object] | None = None
                         ) -> list[float] | None:
        """Runs one episode in each environment (one group), all in lock-step until every one
        has ended once (one that ended steps on, unrecorded: a short episode is not counted
        twice), and logs one row per episode: `row_fields` (the program's counts when the
        round began), its return and length. Counts nothing. Returns the returns, or None
        when stopped before every episode ended (then nothing is logged)."""
        if len(self._groups) != 1:
            raise ValueError("run_episode_each runs one group of environments")
        group = self._groups[0]
        timestep = group.environment.reset()
        group.actor.observe_first(timestep)  # A recurrent actor starts from its initial state.
        n = group.environment.num_envs
        returns, lengths, done = np.zeros(n), np.zeros(n, np.int64), np.zeros(n, bool)
        while not done.all() and not self._stopped:
            actions = group.actor.select_action(timestep.observation)
            timestep = group.environment.step(actions)
            group.actor.observe(actions, next_timestep=timestep)
            active = ~done
            reward = np.asarray(timestep.reward, np.float64).reshape(n, -1).sum(-1)
            returns[active] += reward[active]
            lengths[active] += 1
            done |= timestep.step_type == dm_env.StepType.LAST
        if not done.all():
            return None
        for episode_return, length in zip(returns, lengths):
            self._logger.write({**(row_fields or {}), "episode_return": float(episode_return),
                                "episode_length": int(length)})
        return returns.tolist()

    def _start_step(self, group: _Group) -> None:
        group.actions = group.actor.select_action(group.timestep.observation)
        group.environment.step_async(group.actions)
        group.in_flight = True

    def _finish_step(self, group: _Group) -> None:
        group.in_flight = False
        self._observe(group, group.actions, group.environment.step_wait())

    def _observe(self, group: _Group, actions, timestep: dm_env.TimeStep) -> None:
        group.timestep = timestep
        group.actor.observe(actions, next_timestep=timestep)
        if self._update_actor:
            group.actor.update()
        stepped = timestep.step_type != dm_env.StepType.FIRST
        # An episode cut short (its environment failed and was reset) starts
        # again from zero.
        returns, lengths = group.returns, group.lengths
        returns[~stepped], lengths[~stepped] = 0.0, 0
        reward = np.asarray(timestep.reward, np.float64).reshape(len(returns), -1).sum(-1)
        returns[stepped] += reward[stepped]
        lengths[stepped] += 1
        finished = np.flatnonzero(timestep.step_type == dm_env.StepType.LAST)
        self._count(int(stepped.sum()), len(finished))
        for i in finished:
            self._log_episode(returns[i], lengths[i])
            returns[i], lengths[i] = 0.0, 0
