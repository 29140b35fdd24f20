"""K environments stepped in lock-step behind one batched dm_env-style API.

`step(actions)` steps every environment with its action, except those whose
previous timestep was LAST: those are reset instead (their action is
ignored) and return a FIRST timestep. Every field of the returned timestep
has a leading K axis, so one policy call serves all K environments.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import dm_env
import numpy as np
import tree


def _stack(timesteps: Sequence[dm_env.TimeStep]) -> dm_env.TimeStep:
    return dm_env.TimeStep(
        step_type=np.array([t.step_type for t in timesteps], dtype=np.int8),
        reward=np.array([0.0 if t.reward is None else t.reward for t in timesteps], np.float32),
        discount=np.array(
            [1.0 if t.discount is None else t.discount for t in timesteps], np.float32
        ),
        observation=tree.map_structure(lambda *x: np.stack(x), *[t.observation for t in timesteps]),
    )


class BatchedEnvironment:
    """Steps a list of dm_env environments sequentially, with auto-reset."""

    def __init__(self, environments: Sequence[dm_env.Environment]):
        if not environments:
            raise ValueError("BatchedEnvironment needs at least one environment")
        self._envs = list(environments)
        self._last = np.zeros(len(self._envs), dtype=bool)

    @classmethod
    def from_factory(
        cls, factory: Callable[[int], dm_env.Environment], num_envs: int
    ) -> BatchedEnvironment:
        """Builds `num_envs` environments with `factory(i)`."""
        return cls([factory(i) for i in range(num_envs)])

    @property
    def num_envs(self) -> int:
        return len(self._envs)

    def reset(self) -> dm_env.TimeStep:
        timesteps = [env.reset() for env in self._envs]
        self._last[:] = False
        return _stack(timesteps)

    def step(self, actions) -> dm_env.TimeStep:
        timesteps = []
        for i, env in enumerate(self._envs):
            timestep = env.reset() if self._last[i] else env.step(actions[i])
            self._last[i] = timestep.last()
            timesteps.append(timestep)
        return _stack(timesteps)

    def observation_spec(self):
        return self._envs[0].observation_spec()

    def action_spec(self):
        return self._envs[0].action_spec()

    def reward_spec(self):
        return self._envs[0].reward_spec()

    def discount_spec(self):
        return self._envs[0].discount_spec()

    def close(self) -> None:
        for env in self._envs:
            env.close()
