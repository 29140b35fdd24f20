"""K environments stepped in lock-step behind one batched dm_env-style API.

`step(actions)` steps every environment with its action, except those whose
previous timestep was LAST: those are reset instead (their action is
ignored) and return a FIRST timestep. Every field of the returned timestep
has a leading K axis, so one policy call serves all K environments.

A simulator that raises during a step is reset and its episode counted as
failed (it returns FIRST, so adders write the cut-short episode as
truncated); past `max_failures` failures the error is raised, named.

`step_async(actions)` / `step_wait()` run the same step in a worker thread,
so that the caller can compute another group's actions meanwhile (the
simulators' native code and TensorFlow both release the GIL).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent import futures

import dm_env
import numpy as np
import tree


def stack_timesteps(timesteps: Sequence[dm_env.TimeStep]) -> dm_env.TimeStep:
    """One timestep with a leading K axis from K environments' timesteps (a FIRST's
    missing reward reads 0, its missing discount 1)."""
    return dm_env.TimeStep(
        step_type=np.array([t.step_type for t in timesteps], dtype=np.int8),
        reward=np.array([0.0 if t.reward is None else t.reward for t in timesteps], np.float32),
        discount=np.array(
            [1.0 if t.discount is None else t.discount for t in timesteps], np.float32
        ),
        observation=tree.map_structure(lambda *x: np.stack(x), *[t.observation for t in timesteps]),
    )


class EnvironmentFailure(RuntimeError):
    """An environment raised more often than the configured limit allows."""


class BatchedEnvironment:
    """Steps a list of dm_env environments sequentially, with auto-reset."""

    def __init__(self, environments: Sequence[dm_env.Environment], max_failures: int = 0,
                 on_failure: Callable[[int, BaseException], None] | None = None):
        if not environments:
            raise ValueError("BatchedEnvironment needs at least one environment")
        if max_failures < 0:
            raise ValueError(f"max_failures must be >= 0, got {max_failures}")
        self._envs = list(environments)
        self._last = np.zeros(len(self._envs), dtype=bool)
        self._max_failures = max_failures
        self._on_failure = on_failure
        self._worker: futures.ThreadPoolExecutor | None = None
        self._pending: futures.Future | None = None
        self.failed_episodes = 0

    @classmethod
    def from_factory(
        cls, factory: Callable[[int], dm_env.Environment], num_envs: int, **kwargs
    ) -> BatchedEnvironment:
        """Builds `num_envs` environments with `factory(i)`."""
        return cls([factory(i) for i in range(num_envs)], **kwargs)

    @property
    def num_envs(self) -> int:
        return len(self._envs)

    def reset(self) -> dm_env.TimeStep:
        timesteps = [env.reset() for env in self._envs]
        self._last[:] = False
        return stack_timesteps(timesteps)

    def step(self, actions) -> dm_env.TimeStep:
        timesteps = []
        for i, env in enumerate(self._envs):
            try:
                timestep = env.reset() if self._last[i] else env.step(actions[i])
            except Exception as error:  # noqa: BLE001  (any simulator error)
                timestep = self._recover(i, error)
            self._last[i] = timestep.last()
            timesteps.append(timestep)
        return stack_timesteps(timesteps)

    def step_async(self, actions) -> None:
        """Starts `step(actions)` in a worker thread; `step_wait` returns its timestep."""
        if self._pending is not None:
            raise RuntimeError("step_async called twice without step_wait")
        if self._worker is None:
            self._worker = futures.ThreadPoolExecutor(1, thread_name_prefix="environments")
        self._pending = self._worker.submit(self.step, actions)

    def step_wait(self) -> dm_env.TimeStep:
        if self._pending is None:
            raise RuntimeError("step_wait called without step_async")
        pending, self._pending = self._pending, None
        return pending.result()  # Re-raises what the step raised (EnvironmentFailure).

    def _recover(self, i: int, error: Exception) -> dm_env.TimeStep:
        """Counts the failure and resets environment i, or raises past the limit."""
        while True:
            self.failed_episodes += 1
            if self._on_failure is not None:
                self._on_failure(i, error)
            if self.failed_episodes > self._max_failures:
                raise EnvironmentFailure(
                    f"environment {i} raised {type(error).__name__}: {error} "
                    f"({self.failed_episodes} failed episodes, limit {self._max_failures})"
                ) from error
            try:
                return self._envs[i].reset()
            except Exception as reset_error:  # noqa: BLE001
                error = reset_error

    def observation_spec(self):
        return self._envs[0].observation_spec()

    def action_spec(self):
        return self._envs[0].action_spec()

    def reward_spec(self):
        return self._envs[0].reward_spec()

    def discount_spec(self):
        return self._envs[0].discount_spec()

    def close(self) -> None:
        if self._pending is not None:
            self._pending.exception()  # Let the step in flight finish first.
            self._pending = None
        if self._worker is not None:
            self._worker.shutdown()
        for env in self._envs:
            env.close()
