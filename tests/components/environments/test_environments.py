"""Environment adapters: gymnasium -> dm_env, Atari preprocessing, float32, the registry."""

from __future__ import annotations

import dm_env
import numpy as np
import pytest

from components.environments import UnknownEnvironmentError, make_environment


def test_cartpole_through_the_adapter_is_float32_with_termination():
    env = make_environment("gym:CartPole-v1", seed=0)
    assert env.observation_spec().dtype == np.float32
    assert env.action_spec().num_values == 2
    timestep = env.reset()
    assert timestep.first() and timestep.observation.dtype == np.float32
    steps = 0
    while not timestep.last():
        timestep = env.step(0)
        steps += 1
    assert timestep.discount == 0.0  # Falling over terminates: no bootstrap.
    assert isinstance(timestep.reward, np.float32)
    assert steps < 100


def test_time_limit_is_a_truncation():
    env = make_environment("gym:MountainCar-v0", seed=0)  # 200-step limit, never solved by 0s.
    timestep = env.reset()
    steps = 0
    while not timestep.last():
        timestep = env.step(1)
        steps += 1
    assert steps == 200 and timestep.discount == 1.0


def test_same_seed_same_episode():
    a, b = (make_environment("gym:CartPole-v1", seed=3) for _ in range(2))
    np.testing.assert_array_equal(a.reset().observation, b.reset().observation)


def test_atari_pong_preprocessing():
    env = make_environment("atari:Pong", seed=0)
    assert env.observation_spec().shape == (84, 84, 4)
    assert env.observation_spec().dtype == np.uint8
    assert env.action_spec().num_values == 6
    timestep = env.reset()
    assert timestep.observation.shape == (84, 84, 4)
    for _ in range(20):
        timestep = env.step(np.int32(2))
        assert -1.0 <= timestep.reward <= 1.0
    assert timestep.step_type == dm_env.StepType.MID


@pytest.mark.parametrize("name", ["CartPole-v1", "nope:x", "gym:", "gym:NoSuchEnv-v0",
                                  "atari:NoSuchGame"])
def test_unknown_names_fail_clearly(name):
    with pytest.raises(UnknownEnvironmentError, match="--env"):
        make_environment(name)
