"""launch_programs/preflight.py: the environment factories a run's flags give."""

from __future__ import annotations

import numpy as np
import pytest

from launch_programs import run
from launch_programs.flags import UsageError
from launch_programs.preflight import batched_environment_factory

BREAKOUT = ["--agent=ppo", "--env=atari:Breakout", "--sticky_actions=0"]


def _lost_lives(env, steps: int = 400) -> int:
    """MID steps of discount 0 in uniform random play of the first game."""
    rng = np.random.default_rng(0)
    env.reset()
    lost = 0
    for _ in range(steps):
        timestep = env.step(rng.integers(0, env.action_spec().num_values, env.num_envs))
        lost += int(((timestep.step_type == 1) & (timestep.discount == 0.0)).sum())
    return lost


@pytest.mark.parametrize("flags,training,evaluation", [
    ([], "some", 0),  # PPO's Atari preset has it.
    (["--atari_life_loss=false"], 0, 0), (["--atari_life_loss"], "some", 0)])
def test_atari_life_loss_reaches_the_training_games_only(flags, training, evaluation):
    factory = batched_environment_factory(run.parse(BREAKOUT + flags))
    train, evaluate = factory([0, 1], False), factory([0, 1], True)
    try:
        lost_in_training, lost_in_evaluation = _lost_lives(train), _lost_lives(evaluate)
    finally:
        train.close()
        evaluate.close()
    assert lost_in_evaluation == evaluation
    assert (lost_in_training > 0) if training == "some" else lost_in_training == 0


@pytest.mark.parametrize("flags", [["--atari_life_loss"], []])  # Given, or the preset's.
def test_atari_life_loss_without_the_vector_env_is_refused_in_one_line(flags):
    with pytest.raises(UsageError, match=r"^--atari_life_loss \(given, or in the agent's Atari "
                                         r"preset\): only with --atari_vector_env.*"
                                         r"add --atari_life_loss=false$"):
        batched_environment_factory(run.parse(BREAKOUT + flags + ["--atari_vector_env=false"]))
    batched_environment_factory(run.parse(  # Both off: the Python games, no lives read.
        BREAKOUT + ["--atari_life_loss=false", "--atari_vector_env=false"]))
