"""Environment adapters: gymnasium -> dm_env, Atari preprocessing, float32, the registry."""

from __future__ import annotations

import re

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


def test_memory_task_shows_the_cue_once_and_rewards_naming_it():
    env = make_environment("memory:3", seed=0)
    timestep = env.reset()
    cue = float(timestep.observation[0])
    assert cue in (-1.0, 1.0) and timestep.observation[1] == 0.0
    observations = []
    for _ in range(3):
        timestep = env.step(0)
        observations.append(timestep.observation)
        assert timestep.reward == 0.0 and not timestep.last()
    assert all(o[0] == 0.0 for o in observations)  # The cue is gone after step 0...
    assert observations[-1][1] == 1.0  # ...and the question comes at the last step.
    timestep = env.step(int(cue > 0))
    assert timestep.last() and timestep.reward == 1.0 and timestep.discount == 0.0


def test_observation_indices_hide_cartpole_velocities():
    env = make_environment("gym:CartPole-v1", seed=0, observation_indices=(0, 2))
    full = make_environment("gym:CartPole-v1", seed=0)
    assert env.observation_spec().shape == (2,)
    np.testing.assert_array_equal(env.reset().observation, full.reset().observation[[0, 2]])
    with pytest.raises(UnknownEnvironmentError, match="--observation_indices"):
        make_environment("gym:CartPole-v1", observation_indices=(0, 4))


def test_control_suite_state_observations_are_one_float32_vector():
    pytest.importorskip("dm_control")
    env = make_environment("control:cartpole:swingup", seed=0)
    spec = env.observation_spec()
    assert spec.shape == (5,) and spec.dtype == np.float32  # position 3 + velocity 2.
    assert env.action_spec().shape == (1,)
    timestep = env.reset()
    assert timestep.observation.shape == (5,) and timestep.observation.dtype == np.float32
    timestep = env.step(np.array([0.5], np.float32))
    assert 0.0 <= float(timestep.reward) <= 1.0
    with pytest.raises(UnknownEnvironmentError, match="no task"):
        make_environment("control:cartpole:fly", seed=0)


def _ale(environment):
    """The ALE interface under the dm_env wrappers of a Python atari: environment."""
    inner = environment
    while hasattr(inner, "_environment") or hasattr(inner, "_env"):
        inner = getattr(inner, "_environment", None) or inner._env
    return inner.unwrapped.ale


@pytest.mark.parametrize("given,expected", [(None, 0.25), (0.0, 0.0), (0.1, 0.1)])
@pytest.mark.parametrize("evaluation", [False, True])
def test_atari_sticky_actions_are_the_runs_protocol_in_training_and_evaluation(
        given, expected, evaluation):
    env = make_environment("atari:Pong", seed=0, evaluation=evaluation, sticky_actions=given)
    try:
        assert _ale(env).getFloat("repeat_action_probability") == pytest.approx(expected)
    finally:
        env.close()


@pytest.mark.parametrize("name,value,needle", [
    ("gym:CartPole-v1", 0.1, "only for atari:<Game> environments"),
    ("minatar:breakout", 0.0, "only for atari:<Game> environments"),
    ("atari:Pong", 1.0, "must be in [0, 1), got 1.0"),
    ("atari:Pong", -0.1, "must be in [0, 1)"),
    ("atari:Pong", float("nan"), "must be in [0, 1)"),
])
def test_sticky_actions_outside_atari_or_range_are_refused(name, value, needle):
    with pytest.raises(UnknownEnvironmentError, match=re.escape("--sticky_actions: ")) as info:
        make_environment(name, sticky_actions=value)
    assert needle in str(info.value)
