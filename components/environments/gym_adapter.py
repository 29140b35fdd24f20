"""Adapts a gymnasium environment to the dm_env interface.

gymnasium's `terminated` becomes a termination (discount 0: no bootstrap) and
`truncated` (a time limit) a truncation (discount 1: the value of the last
observation is still bootstrapped), which is the distinction n-step targets
need.
"""

from __future__ import annotations

from typing import Any

import dm_env
import gymnasium as gym
import numpy as np
from dm_env import specs


def space_to_spec(space: gym.Space, name: str) -> Any:
    """Converts a gymnasium space to a dm_env spec."""
    if isinstance(space, gym.spaces.Discrete):
        if int(space.start) != 0:
            raise ValueError(f"{name}: Discrete spaces must start at 0, got start={space.start}")
        return specs.DiscreteArray(num_values=int(space.n), dtype=np.int32, name=name)
    if isinstance(space, gym.spaces.Box):
        return specs.BoundedArray(
            shape=space.shape,
            dtype=space.dtype,
            minimum=space.low,
            maximum=space.high,
            name=name,
        )
    raise ValueError(f"{name}: unsupported gymnasium space {space!r}")


class GymnasiumToDmEnv(dm_env.Environment):
    """A dm_env view of a gymnasium environment."""

    def __init__(self, env: gym.Env, seed: int | None = None):
        self._env = env
        self._seed = seed
        self._observation_spec = space_to_spec(env.observation_space, "observation")
        self._action_spec = space_to_spec(env.action_space, "action")
        self._discrete = isinstance(env.action_space, gym.spaces.Discrete)
        self._needs_reset = True

    def reset(self) -> dm_env.TimeStep:
        observation, _ = self._env.reset(seed=self._seed)
        self._seed = None  # Seed once; later resets continue the same stream.
        self._needs_reset = False
        return dm_env.restart(observation)

    def step(self, action) -> dm_env.TimeStep:
        if self._needs_reset:
            return self.reset()
        if self._discrete:
            action = int(action)
        observation, reward, terminated, truncated, _ = self._env.step(action)
        reward = float(reward)
        if terminated:
            self._needs_reset = True
            return dm_env.termination(reward, observation)
        if truncated:
            self._needs_reset = True
            return dm_env.truncation(reward, observation)
        return dm_env.transition(reward, observation)

    def observation_spec(self):
        return self._observation_spec

    def action_spec(self):
        return self._action_spec

    def close(self) -> None:
        self._env.close()

    @property
    def gym_env(self) -> gym.Env:
        return self._env

    def render(self) -> np.ndarray:
        """The picture now, [H, W, 3] uint8: an Atari game's own screen (always there), or
        the environment's `render()` when it was made with render_mode="rgb_array"."""
        ale = getattr(self._env.unwrapped, "ale", None)
        if ale is not None:
            return ale.getScreenRGB()
        if self._env.render_mode != "rgb_array":
            raise ValueError(f"{self._env.spec.id if self._env.spec else self._env}: made "
                             f"without render_mode='rgb_array', it draws no frames")
        return np.asarray(self._env.render())
