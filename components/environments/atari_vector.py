"""Many Atari games stepped by ale-py's C++ vector environment, as one batched environment.

`ale_py.vector_env.AtariVectorEnv` runs K games in C++ threads with the
standard preprocessing done in C++ (84x84 grey, max-pooled action repeat 4,
frame stack 4, sticky actions, no-op starts). This adapter gives it the
interface of `BatchedEnvironment`: `step(actions)` returns a batched dm_env
TimeStep whose slots are FIRST after an auto-reset, LAST with discount 0 at a
termination and discount 1 at the 27,000-step cap, and frames channels-last
[K, 84, 84, 4] uint8 like `atari:<Game>`. `step_async`/`step_wait` let the
games run while the caller does other work (the inference of another group).

With `life_loss=True` a step that loses a life has discount 0 while the game
goes on (a MID step): learning does not bootstrap across a lost life, as the
references' EpisodicLifeEnv has it (CleanRL, baselines, RL Zoo), but episodes,
their returns and the resets stay the full games'. Games without lives (Pong
reports 0 throughout) are unchanged.
"""

from __future__ import annotations

import dm_env
import numpy as np
from dm_env import specs

from components.environments.atari import (
    ACTION_REPEAT,
    FRAME_STACK,
    MAX_EPISODE_STEPS,
    STICKY_ACTION_PROBABILITY,
    check_sticky_actions,
)
from components.environments.frames import frames_last


class AtariVectorEnvironment:
    """K games of `game` behind the batched environment interface."""

    def __init__(self, game: str, num_envs: int, seed: int = 0, evaluation: bool = False,
                 num_threads: int = 0, max_episode_steps: int = MAX_EPISODE_STEPS,
                 sticky_actions: float = STICKY_ACTION_PROBABILITY, life_loss: bool = False):
        from ale_py.vector_env import AtariVectorEnv

        if num_envs < 1:
            raise ValueError(f"num_envs must be >= 1, got {num_envs}")
        self._env = AtariVectorEnv(
            game=_rom_name(game), num_envs=num_envs, num_threads=num_threads,
            max_num_frames_per_episode=max_episode_steps * ACTION_REPEAT,
            repeat_action_probability=check_sticky_actions(sticky_actions),
            full_action_space=False,
            frameskip=ACTION_REPEAT, stack_num=FRAME_STACK, img_height=84, img_width=84,
            grayscale=True, maxpool=True, noop_max=30, episodic_life=False,
            reward_clipping=not evaluation,  # Evaluation sees the game's score.
            use_fire_reset=False,  # As `atari:<Game>`: the agent learns to press FIRE.
        )
        self._num_envs = int(num_envs)
        self._seed = int(seed)
        self._last = np.zeros(num_envs, dtype=bool)
        self._life_loss = bool(life_loss)
        self._lives = np.zeros(num_envs, dtype=np.int64)
        self._pending = False
        self.failed_episodes = 0  # The C++ games do not fail one by one; kept for the interface.
        self._observation_spec = specs.BoundedArray(
            (84, 84, FRAME_STACK), np.uint8, 0, 255, name="observation")
        self._action_spec = specs.DiscreteArray(
            int(self._env.single_action_space.n), dtype=np.int32, name="action")

    @property
    def num_envs(self) -> int:
        return self._num_envs

    def reset(self) -> dm_env.TimeStep:
        if self._pending:
            self._env.recv()
            self._pending = False
        observation, info = self._env.reset(seed=self._seed)
        self._last[:] = False
        self._lives = np.asarray(info["lives"], np.int64).copy()
        k = self._num_envs
        return dm_env.TimeStep(
            step_type=np.full(k, dm_env.StepType.FIRST, np.int8),
            reward=np.zeros(k, np.float32), discount=np.ones(k, np.float32),
            observation=_channels_last(observation))

    def step_async(self, actions) -> None:
        """Starts a step of every game; `step_wait` returns its timestep."""
        if self._pending:
            raise RuntimeError("step_async called twice without step_wait")
        self._env.send(np.asarray(actions, dtype=np.int64).reshape(self._num_envs))
        self._pending = True

    def step_wait(self) -> dm_env.TimeStep:
        if not self._pending:
            raise RuntimeError("step_wait called without step_async")
        observation, reward, terminated, truncated, info = self._env.recv()
        self._pending = False
        # A game whose last step ended its episode was reset by this step
        # (auto-reset on the next step): its timestep is FIRST, its action ignored.
        first = self._last.copy()
        last = (np.asarray(terminated) | np.asarray(truncated)) & ~first
        step_type = np.where(first, dm_env.StepType.FIRST,
                             np.where(last, dm_env.StepType.LAST, dm_env.StepType.MID))
        self._last = last
        ended = np.asarray(terminated) & ~first
        lives = np.asarray(info["lives"], np.int64)
        if self._life_loss:  # A life lost on a step inside the game (not at a reset).
            ended |= (lives < self._lives) & ~first
        self._lives = lives.copy()
        discount = np.where(ended, 0.0, 1.0).astype(np.float32)
        reward = np.where(first, 0.0, np.asarray(reward, np.float32)).astype(np.float32)
        return dm_env.TimeStep(step_type=step_type.astype(np.int8), reward=reward,
                               discount=discount, observation=_channels_last(observation))

    def step(self, actions) -> dm_env.TimeStep:
        self.step_async(actions)
        return self.step_wait()

    def observation_spec(self):
        return self._observation_spec

    def action_spec(self):
        return self._action_spec

    def reward_spec(self):
        return specs.Array((), np.float32, name="reward")

    def discount_spec(self):
        return specs.BoundedArray((), np.float32, 0.0, 1.0, name="discount")

    def close(self) -> None:
        if self._pending:
            self._env.recv()
            self._pending = False
        self._env.close()


def _channels_last(frames: np.ndarray) -> np.ndarray:
    """[K, 4, 84, 84] -> [K, 84, 84, 4], the layout of `atari:<Game>`."""
    return frames_last(frames)


def _rom_name(game: str) -> str:
    """ale-py's ROM id of a game name: "Pong" -> "pong", "SpaceInvaders" -> "space_invaders"."""
    out = []
    for i, ch in enumerate(game):
        if ch.isupper() and i > 0 and not game[i - 1].isupper():
            out.append("_")
        out.append(ch.lower())
    return "".join(out)
