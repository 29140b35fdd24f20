"""A memory task (after bsuite's memory_len): a cue at the first step, the question N steps later.

Observation (3 floats): [cue, query, time left]. The cue (+1 or -1, random
per episode) is visible only at the first step, then 0; `query` is 1 only
at the last step; `time left` goes from 1 to 0. The episode has N + 1
actions: the first N earn nothing, the last earns +1 when it names the cue
(action 1 for +1, action 0 for -1) and -1 otherwise, and terminates. As dm_env
requires, step() before the first reset or after the last step starts a new
episode (a FIRST timestep; the action is ignored).

A memoryless policy cannot beat chance at the question (mean return 0); an
agent that carries the cue for N steps scores 1.
"""

from __future__ import annotations

import dm_env
import numpy as np
from dm_env import specs


class MemoryEnvironment(dm_env.Environment):
    """The cue-then-question task with a memory length of `length` steps."""

    def __init__(self, length: int, seed: int | None = None):
        if length < 1:
            raise ValueError(f"memory length must be >= 1, got {length}")
        self._length = length
        self._rng = np.random.default_rng(seed)
        self._cue = 1.0
        self._t = 0
        self._needs_reset = True

    def _observation(self) -> np.ndarray:
        cue = self._cue if self._t == 0 else 0.0
        query = 1.0 if self._t == self._length else 0.0
        return np.array([cue, query, 1.0 - self._t / self._length], np.float32)

    def reset(self) -> dm_env.TimeStep:
        self._t = 0
        self._cue = float(self._rng.choice([-1.0, 1.0]))
        self._needs_reset = False
        return dm_env.restart(self._observation())

    def step(self, action) -> dm_env.TimeStep:
        if self._needs_reset:
            return self.reset()
        if self._t == self._length:
            self._needs_reset = True
            correct = int(action) == int(self._cue > 0)
            return dm_env.termination(np.float32(1.0 if correct else -1.0), self._observation())
        self._t += 1
        return dm_env.transition(np.float32(0.0), self._observation())

    def observation_spec(self):
        return specs.Array((3,), np.float32, "observation")

    def action_spec(self):
        return specs.DiscreteArray(2, dtype=np.int32, name="action")

    def reward_spec(self):
        return specs.Array((), np.float32, "reward")

    def discount_spec(self):
        return specs.BoundedArray((), np.float32, 0.0, 1.0, "discount")
