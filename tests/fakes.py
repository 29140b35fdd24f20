"""Fake environments for tests: spec-driven, discrete and continuous, and a tiny Atari.

They live here, in one place, and every test that needs an environment
without a simulator uses them.
"""

from __future__ import annotations

import time

import dm_env
import numpy as np
import tree
from dm_env import specs


class FakeEnvironment(dm_env.Environment):
    """Emits observations drawn from its spec and ends episodes after `episode_length` steps.

    `rewards` and `discounts`, if given, script the values of each step
    (reward of step k is rewards[k-1]); the last step terminates (discount 0)
    unless `truncate` is set. `step_delay_s` makes each step take that long
    (sleeping, like a simulator's native code that releases the GIL).
    """

    def __init__(
        self,
        observation_spec,
        action_spec,
        episode_length: int = 10,
        rewards=None,
        truncate: bool = False,
        seed: int = 0,
        step_delay_s: float = 0.0,
    ):
        self._observation_spec = observation_spec
        self._step_delay_s = step_delay_s
        self._action_spec = action_spec
        self._episode_length = episode_length
        self._rewards = rewards
        self._truncate = truncate
        self._rng = np.random.default_rng(seed)
        self._step = 0
        self.actions: list = []
        self.num_resets = 0

    def _observation(self):
        spec = self._observation_spec
        if np.issubdtype(spec.dtype, np.integer):
            return self._rng.integers(0, 255, spec.shape).astype(spec.dtype)
        return self._rng.uniform(-1, 1, spec.shape).astype(spec.dtype)

    def reset(self) -> dm_env.TimeStep:
        self._step = 0
        self.num_resets += 1
        return dm_env.restart(self._observation())

    def step(self, action) -> dm_env.TimeStep:
        if self._step_delay_s:
            time.sleep(self._step_delay_s)
        self.actions.append(action)
        self._step += 1
        reward = np.float32(self._rewards[self._step - 1] if self._rewards is not None else 0.0)
        if self._step >= self._episode_length:
            if self._truncate:
                return dm_env.truncation(reward, self._observation())
            return dm_env.termination(reward, self._observation())
        return dm_env.transition(reward, self._observation())

    def observation_spec(self):
        return self._observation_spec

    def action_spec(self):
        return self._action_spec

    def reward_spec(self):
        return specs.Array((), np.float32, "reward")

    def discount_spec(self):
        return specs.BoundedArray((), np.float32, 0.0, 1.0, "discount")


class NestedFakeEnvironment(FakeEnvironment):
    """A FakeEnvironment with nests: observations drawn leaf by leaf from a nest of specs, and
    rewards a nest of `reward_spec` whose every element is the step's scripted reward."""

    def __init__(self, observation_spec, action_spec, reward_spec, **kwargs):
        super().__init__(observation_spec, action_spec, **kwargs)
        self._reward_spec = reward_spec

    def _draw(self, spec):
        if np.issubdtype(spec.dtype, np.integer):
            return self._rng.integers(0, 255, spec.shape).astype(spec.dtype)
        return self._rng.uniform(-1, 1, spec.shape).astype(spec.dtype)

    def _observation(self):
        return tree.map_structure(self._draw, self._observation_spec)

    def step(self, action) -> dm_env.TimeStep:
        timestep = super().step(action)
        return timestep._replace(reward=tree.map_structure(
            lambda s: np.full(s.shape, timestep.reward, s.dtype), self._reward_spec))

    def reward_spec(self):
        return self._reward_spec


def nested_environment(**kwargs) -> NestedFakeEnvironment:
    """Dict-and-tuple observations {"pixels": uint8[2, 2], "vec": (float32[3], int32[])}, 3
    actions, rewards {"a": float32[2], "b": float32[]}, a scalar discount."""
    return NestedFakeEnvironment(
        {"pixels": specs.BoundedArray((2, 2), np.uint8, 0, 255, "pixels"),
         "vec": (specs.Array((3,), np.float32, "position"), specs.Array((), np.int32, "count"))},
        specs.DiscreteArray(3, dtype=np.int32, name="action"),
        {"a": specs.Array((2,), np.float32, "a"), "b": specs.Array((), np.float32, "b")},
        **kwargs,
    )


def discrete_environment(num_actions: int = 3, observation_shape=(4,), **kwargs) -> FakeEnvironment:
    return FakeEnvironment(
        specs.Array(observation_shape, np.float32, "observation"),
        specs.DiscreteArray(num_actions, dtype=np.int32, name="action"),
        **kwargs,
    )


def continuous_environment(action_dim: int = 2, observation_shape=(4,), **kwargs) -> FakeEnvironment:
    return FakeEnvironment(
        specs.Array(observation_shape, np.float32, "observation"),
        specs.BoundedArray((action_dim,), np.float32, -1.0, 1.0, "action"),
        **kwargs,
    )


def fake_atari(episode_length: int = 8, **kwargs) -> FakeEnvironment:
    """84x84x4 uint8 frames and 6 actions, as atari:Pong looks after preprocessing."""
    return FakeEnvironment(
        specs.BoundedArray((84, 84, 4), np.uint8, 0, 255, "observation"),
        specs.DiscreteArray(6, dtype=np.int32, name="action"),
        episode_length=episode_length,
        **kwargs,
    )


class FrameStackAtari(FakeEnvironment):
    """A tiny Atari whose observations stack frames as the real one does: each step draws a
    new 84x84 frame, the observation is the last 4 (oldest first, on the last axis), and an
    episode's first stack repeats its first frame. Episode lengths vary (1 to
    `episode_length` steps), some truncated."""

    def __init__(self, episode_length: int = 8, seed: int = 0):
        super().__init__(specs.BoundedArray((84, 84, 4), np.uint8, 0, 255, "observation"),
                         specs.DiscreteArray(6, dtype=np.int32, name="action"),
                         episode_length=episode_length, seed=seed)
        self._stack = np.zeros((84, 84, 4), np.uint8)
        self._length = episode_length

    def _frame(self) -> np.ndarray:
        return self._rng.integers(0, 255, (84, 84)).astype(np.uint8)

    def reset(self) -> dm_env.TimeStep:
        self._step = 0
        self._length = int(self._rng.integers(1, self._episode_length + 1))
        self._stack = np.repeat(self._frame()[..., None], 4, axis=-1)
        return dm_env.restart(self._stack.copy())

    def step(self, action) -> dm_env.TimeStep:
        self._step += 1
        self._stack = np.concatenate([self._stack[..., 1:], self._frame()[..., None]], axis=-1)
        reward = float(self._step)
        if self._step >= self._length:
            if self._rng.random() < 0.5:
                return dm_env.truncation(reward, self._stack.copy())
            return dm_env.termination(reward, self._stack.copy())
        return dm_env.transition(reward, self._stack.copy())


class MatchTheSign(dm_env.Environment):
    """A small task DQN must learn: reward 1 for the action that names the sign of x.

    Observations are x ~ U(-1, 1)^2; the right action is 0 when x[0] < 0 and
    1 otherwise. Episodes last `episode_length` steps, so random acting
    scores half of it and a learned policy all of it.
    """

    def __init__(self, episode_length: int = 10, seed: int = 0):
        self._length = episode_length
        self._rng = np.random.default_rng(seed)
        self._x = np.zeros(2, np.float32)
        self._t = 0

    def _observe(self):
        self._x = self._rng.uniform(-1, 1, 2).astype(np.float32)
        return self._x.copy()

    def reset(self) -> dm_env.TimeStep:
        self._t = 0
        return dm_env.restart(self._observe())

    def step(self, action) -> dm_env.TimeStep:
        reward = np.float32(1.0 if int(action) == int(self._x[0] >= 0) else 0.0)
        self._t += 1
        if self._t >= self._length:
            return dm_env.truncation(reward, self._observe())
        return dm_env.transition(reward, self._observe())

    def observation_spec(self):
        return specs.Array((2,), np.float32, "observation")

    def action_spec(self):
        return specs.DiscreteArray(2, dtype=np.int32, name="action")

    def reward_spec(self):
        return specs.Array((), np.float32, "reward")

    def discount_spec(self):
        return specs.BoundedArray((), np.float32, 0.0, 1.0, "discount")


def match_the_sign(seed: int = 0, evaluation: bool = False) -> MatchTheSign:
    """An environment factory (module level, so node processes can import it)."""
    del evaluation
    return MatchTheSign(episode_length=10, seed=seed)


class MatchTheValue(MatchTheSign):
    """A small continuous task: reward -(a - x[0])^2 for an action a in [-1, 1].

    Observations are x ~ U(-1, 1)^2; a policy that outputs x[0] scores 0 per
    step, uniform random actions about -2/3.
    """

    def step(self, action) -> dm_env.TimeStep:
        reward = np.float32(-(float(np.asarray(action).reshape(-1)[0]) - float(self._x[0])) ** 2)
        self._t += 1
        if self._t >= self._length:
            return dm_env.truncation(reward, self._observe())
        return dm_env.transition(reward, self._observe())

    def action_spec(self):
        return specs.BoundedArray((1,), np.float32, -1.0, 1.0, "action")


def match_the_value(seed: int = 0, evaluation: bool = False) -> MatchTheValue:
    """An environment factory (module level, so node processes can import it)."""
    del evaluation
    return MatchTheValue(episode_length=10, seed=seed)


class FlakyEnvironment(dm_env.Environment):
    """Wraps an environment and raises on the listed (global) step numbers: a crashing simulator."""

    def __init__(self, environment: dm_env.Environment, fail_at_steps=(), fail_resets: int = 0):
        self._env = environment
        self._fail_at = set(fail_at_steps)
        self._fail_resets = fail_resets
        self.steps = 0

    def reset(self) -> dm_env.TimeStep:
        if self._fail_resets > 0:
            self._fail_resets -= 1
            raise RuntimeError("simulator crashed during reset")
        return self._env.reset()

    def step(self, action) -> dm_env.TimeStep:
        self.steps += 1
        if self.steps in self._fail_at:
            raise RuntimeError(f"simulator crashed at step {self.steps}")
        return self._env.step(action)

    def observation_spec(self):
        return self._env.observation_spec()

    def action_spec(self):
        return self._env.action_spec()


def flaky_match_the_sign(seed: int = 0, evaluation: bool = False) -> dm_env.Environment:
    """MatchTheSign whose simulator raises at steps 15 and 40 (training environments only)."""
    env = match_the_sign(seed, evaluation)
    return env if evaluation else FlakyEnvironment(env, fail_at_steps=(15, 40))


def sample_iterator(samples: list):
    """A tf.data iterator over the given replay samples, in order: what a learner's
    compiled loop reads in place of a Reverb dataset."""
    import tensorflow as tf

    dataset = tf.data.Dataset.from_tensors(samples[0])
    for sample in samples[1:]:
        dataset = dataset.concatenate(tf.data.Dataset.from_tensors(sample))
    return iter(dataset)


def as_rollouts(batch: dict) -> dict:
    """A batch of unrolls [B, T+1] in the rollout layout a feed-forward IMPALA or APPO
    learner takes (`components.adders.BatchedRolloutAdder`'s): observations [T+1, B], the
    rest [T, B] (no action follows the last observation)."""
    def time_major(x, keep_last):
        x = np.swapaxes(np.asarray(x), 0, 1)
        return x if keep_last else x[:-1]

    return {key: ({e: time_major(x, False) for e, x in value.items()} if key == "extras"
                  else time_major(value, key == "observation"))
            for key, value in batch.items()}
