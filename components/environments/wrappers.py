"""dm_env wrappers."""

from __future__ import annotations

import dm_env
import numpy as np
import tree
from dm_env import specs


def _cast_spec(spec):
    if not np.issubdtype(spec.dtype, np.floating) or spec.dtype == np.float32:
        return spec
    if isinstance(spec, specs.BoundedArray):
        return specs.BoundedArray(
            spec.shape, np.float32, spec.minimum.astype(np.float32),
            spec.maximum.astype(np.float32), spec.name,
        )
    return specs.Array(spec.shape, np.float32, spec.name)


_WIDE_FLOATS = (np.dtype(np.float64), np.dtype(np.float16), np.dtype(np.longdouble))


def _cast(value):
    value = np.asarray(value)
    if value.dtype in _WIDE_FLOATS:  # Every float dtype but float32 (a set lookup per step).
        return value.astype(np.float32)
    return value


class EnvironmentWrapper(dm_env.Environment):
    """Forwards everything to the wrapped environment."""

    def __init__(self, environment: dm_env.Environment):
        self._environment = environment

    def reset(self) -> dm_env.TimeStep:
        return self._environment.reset()

    def step(self, action) -> dm_env.TimeStep:
        return self._environment.step(action)

    def observation_spec(self):
        return self._environment.observation_spec()

    def action_spec(self):
        return self._environment.action_spec()

    def reward_spec(self):
        return self._environment.reward_spec()

    def discount_spec(self):
        return self._environment.discount_spec()

    def close(self) -> None:
        self._environment.close()

    def __getattr__(self, name):
        return getattr(self._environment, name)


class SinglePrecisionWrapper(EnvironmentWrapper):
    """Casts float64 observations, rewards and discounts to float32.

    Networks run in float32; casting once here avoids a cast per step in every
    actor and keeps replay items half the size.
    """

    def _convert(self, timestep: dm_env.TimeStep) -> dm_env.TimeStep:
        observation = timestep.observation
        # An array (the usual case) skips the structure walk: a third of this wrapper's cost.
        observation = _cast(observation) if isinstance(observation, np.ndarray) \
            else tree.map_structure(_cast, observation)
        return timestep._replace(
            observation=observation,
            reward=None if timestep.reward is None else np.float32(timestep.reward),
            discount=None if timestep.discount is None else np.float32(timestep.discount),
        )

    def reset(self) -> dm_env.TimeStep:
        return self._convert(self._environment.reset())

    def step(self, action) -> dm_env.TimeStep:
        return self._convert(self._environment.step(action))

    def observation_spec(self):
        return tree.map_structure(_cast_spec, self._environment.observation_spec())

    def reward_spec(self):
        return specs.Array((), np.float32, "reward")

    def discount_spec(self):
        return specs.BoundedArray((), np.float32, 0.0, 1.0, "discount")


class RewardClippingWrapper(EnvironmentWrapper):
    """Clips rewards to [-1, 1] (DQN's Atari training; never for evaluation)."""

    def step(self, action) -> dm_env.TimeStep:
        timestep = self._environment.step(action)
        if timestep.reward is None:
            return timestep
        return timestep._replace(reward=np.clip(timestep.reward, -1.0, 1.0).astype(np.float32))


class ObservationIndicesWrapper(EnvironmentWrapper):
    """Keeps only `indices` of a vector observation: a partially observed task.

    CartPole's observation is (x, x_dot, theta, theta_dot); indices (0, 2)
    hide the velocities, so an agent must infer them from its memory.
    """

    def __init__(self, environment: dm_env.Environment, indices):
        super().__init__(environment)
        spec = environment.observation_spec()
        if len(spec.shape) != 1:
            raise ValueError(f"observation indices need a vector observation, got shape "
                             f"{spec.shape}")
        self._indices = np.asarray(indices, np.int64)
        if self._indices.size == 0 or self._indices.min() < 0 or self._indices.max() >= spec.shape[0]:
            raise ValueError(f"observation indices must lie in [0, {spec.shape[0]}), got "
                             f"{tuple(int(i) for i in indices)}")
        self._spec = specs.Array((len(self._indices),), spec.dtype, spec.name)

    def _select(self, timestep: dm_env.TimeStep) -> dm_env.TimeStep:
        return timestep._replace(observation=np.asarray(timestep.observation)[self._indices])

    def reset(self) -> dm_env.TimeStep:
        return self._select(self._environment.reset())

    def step(self, action) -> dm_env.TimeStep:
        return self._select(self._environment.step(action))

    def observation_spec(self):
        return self._spec


class FlattenObservationWrapper(EnvironmentWrapper):
    """Concatenates a dict of observation arrays (dm-control's state) into one float32 vector."""

    def __init__(self, environment: dm_env.Environment):
        super().__init__(environment)
        spec = environment.observation_spec()
        self._keys = list(spec.keys())
        size = sum(int(np.prod(spec[k].shape)) for k in self._keys)
        self._spec = specs.Array((size,), np.float32, "observation")

    def _flatten(self, timestep: dm_env.TimeStep) -> dm_env.TimeStep:
        parts = [np.asarray(timestep.observation[k], np.float32).reshape(-1) for k in self._keys]
        return timestep._replace(observation=np.concatenate(parts))

    def reset(self) -> dm_env.TimeStep:
        return self._flatten(self._environment.reset())

    def step(self, action) -> dm_env.TimeStep:
        return self._flatten(self._environment.step(action))

    def observation_spec(self):
        return self._spec
