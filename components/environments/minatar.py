"""MinAtar (Young and Tian, 2019): five Atari games on a 10x10 grid, one channel per object kind.

The `minatar` package's games step in pure Python (tens of microseconds a
step), so a pixel agent's whole pipeline (convolutions, frame replay,
exploration schedules) runs at a scale a CPU can learn in minutes. As in
the paper: sticky actions with probability 0.1, difficulty ramping, the
full set of 6 actions, no frame skip or stack, and no episode cap beyond
the games' own. Observations are uint8 [10, 10, C] of 0/1 (channels last),
1 KB a frame in replay.
"""

from __future__ import annotations

import dm_env
import numpy as np
from dm_env import specs

GAMES = ("asterix", "breakout", "freeway", "seaquest", "space_invaders")
STICKY_ACTION_PROB = 0.1  # The paper's.


class MinAtarEnvironment(dm_env.Environment):
    """One MinAtar game as a dm_env environment."""

    def __init__(self, game: str, seed: int | None = None,
                 sticky_action_prob: float = STICKY_ACTION_PROB):
        if game not in GAMES:
            raise ValueError(f"MinAtar has no game '{game}'; allowed: {', '.join(GAMES)}")
        from minatar import Environment

        self._env = Environment(game, sticky_action_prob=sticky_action_prob)
        self._env.seed(seed if seed is not None else int(np.random.SeedSequence().entropy % 2**31))
        self._game = game
        self._shape = tuple(self._env.state_shape())
        self._num_actions = int(self._env.num_actions())
        self._needs_reset = True

    def _observation(self) -> np.ndarray:
        return self._env.state().astype(np.uint8)

    def reset(self) -> dm_env.TimeStep:
        self._env.reset()
        self._needs_reset = False
        return dm_env.restart(self._observation())

    def step(self, action) -> dm_env.TimeStep:
        if self._needs_reset:
            return self.reset()
        reward, terminal = self._env.act(int(action))
        if terminal:
            self._needs_reset = True
            return dm_env.termination(np.float32(reward), self._observation())
        return dm_env.transition(np.float32(reward), self._observation())

    def observation_spec(self):
        return specs.BoundedArray(self._shape, np.uint8, 0, 1, "observation")

    def action_spec(self):
        return specs.DiscreteArray(self._num_actions, dtype=np.int32, name="action")

    def reward_spec(self):
        return specs.Array((), np.float32, "reward")

    def discount_spec(self):
        return specs.BoundedArray((), np.float32, 0.0, 1.0, "discount")
