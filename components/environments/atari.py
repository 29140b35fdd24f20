"""Atari through ale-py with the standard DQN preprocessing.

84x84 greyscale frames, max-pooled over the last two of 4 repeated actions,
4 frames stacked on the last axis (HWC, uint8), sticky actions with
probability 0.25 (Machado et al. 2018; `sticky_actions=0` gives the protocol
of most published Pong figures), up to 30 no-op actions at reset, episodes capped at 27,000
agent steps (108,000 frames). Rewards are clipped to [-1, 1] for training
only; evaluation sees the game's score.
"""

from __future__ import annotations

import dm_env
import gymnasium as gym
import numpy as np

from components.environments.frames import frames_last
from components.environments.gym_adapter import GymnasiumToDmEnv
from components.environments.wrappers import RewardClippingWrapper

MAX_EPISODE_STEPS = 27_000
FRAME_STACK = 4
ACTION_REPEAT = 4
STICKY_ACTION_PROBABILITY = 0.25


class _ChannelsLast(gym.ObservationWrapper):
    """Turns the stacked frames [4, 84, 84] into [84, 84, 4] for conv nets."""

    def __init__(self, env: gym.Env):
        super().__init__(env)
        shape = env.observation_space.shape
        self.observation_space = gym.spaces.Box(
            0, 255, shape=(shape[1], shape[2], shape[0]), dtype=np.uint8
        )

    def observation(self, observation):
        return frames_last(observation)


def check_sticky_actions(probability: float) -> float:
    """`probability` if it is one a game can repeat actions with, in [0, 1); else ValueError."""
    if not 0.0 <= probability < 1.0:  # nan fails too.
        raise ValueError(f"--sticky_actions: must be in [0, 1), got {probability!r}")
    return float(probability)


def make_atari_gym(game: str, max_episode_steps: int = MAX_EPISODE_STEPS,
                   sticky_actions: float = STICKY_ACTION_PROBABILITY) -> gym.Env:
    """Returns the preprocessed gymnasium environment for `game` (e.g. "Pong")."""
    import ale_py

    gym.register_envs(ale_py)
    env = gym.make(
        f"ALE/{game}-v5",
        frameskip=1,  # Action repeat is done by AtariPreprocessing (with max-pooling).
        repeat_action_probability=check_sticky_actions(sticky_actions),
        full_action_space=False,
        max_episode_steps=None,
    )
    env = gym.wrappers.AtariPreprocessing(
        env, noop_max=30, frame_skip=ACTION_REPEAT, screen_size=84,
        terminal_on_life_loss=False, grayscale_obs=True,
    )
    env = gym.wrappers.TimeLimit(env, max_episode_steps=max_episode_steps)
    env = gym.wrappers.FrameStackObservation(env, FRAME_STACK)
    return _ChannelsLast(env)


def make_atari(game: str, seed: int | None = None, evaluation: bool = False,
               sticky_actions: float = STICKY_ACTION_PROBABILITY) -> dm_env.Environment:
    """Returns the dm_env Atari environment; rewards clipped unless `evaluation`. Evaluation
    plays with the same sticky actions as training (the protocol is the run's)."""
    env: dm_env.Environment = GymnasiumToDmEnv(
        make_atari_gym(game, sticky_actions=sticky_actions), seed=seed)
    if not evaluation:
        env = RewardClippingWrapper(env)
    return env
