"""ale-py's C++ vector environment behind the batched interface: specs, step types, auto-reset."""

from __future__ import annotations

import dm_env
import numpy as np
import pytest

from agentkit.specs import make_environment_spec
from components.environments import UnknownEnvironmentError, make_environment, make_vector_environment
from components.environments.atari_vector import AtariVectorEnvironment, _rom_name

FIRST, MID, LAST = dm_env.StepType.FIRST, dm_env.StepType.MID, dm_env.StepType.LAST


def test_specs_and_frames_match_the_python_atari_environment():
    vector = make_vector_environment("atari:Pong", seeds=[3, 4, 5])
    single = make_environment("atari:Pong", seed=3)
    try:
        spec = make_environment_spec(single)
        assert vector.observation_spec().shape == spec.observations.shape == (84, 84, 4)
        assert vector.observation_spec().dtype == spec.observations.dtype == np.uint8
        assert vector.action_spec().num_values == spec.actions.num_values == 6
        timestep = vector.reset()
        assert vector.num_envs == 3
        assert list(timestep.step_type) == [FIRST] * 3
        assert timestep.observation.shape == (3, 84, 84, 4)
        assert timestep.observation.dtype == np.uint8
        assert timestep.observation.flags["C_CONTIGUOUS"]
        # The stack is channels-last: after a step, frame 3 is the newest, and
        # the older ones moved down by one.
        after = vector.step(np.zeros(3, np.int32)).observation
        np.testing.assert_array_equal(after[..., :3], timestep.observation[..., 1:])
    finally:
        vector.close()
        single.close()


def test_a_truncated_episode_is_last_with_discount_one_then_first():
    env = AtariVectorEnvironment("Pong", num_envs=2, seed=0, max_episode_steps=12)
    try:
        env.reset()
        step_types, discounts, rewards = [], [], []
        for _ in range(26):
            timestep = env.step(np.array([1, 2]))
            step_types.append(timestep.step_type.tolist())
            discounts.append(timestep.discount.tolist())
            rewards.append(timestep.reward.tolist())
        # Steps 1..11 MID, step 12 LAST (the cap), step 13 FIRST (the auto-reset), ...
        expected = [MID] * 11 + [LAST] + [FIRST] + [MID] * 11 + [LAST] + [FIRST]
        assert [s[0] for s in step_types] == [int(t) for t in expected]
        assert [s[1] for s in step_types] == [int(t) for t in expected]
        assert discounts[11] == [1.0, 1.0]  # A truncation bootstraps.
        assert rewards[12] == [0.0, 0.0]  # A reset step carries no reward.
    finally:
        env.close()


def test_step_async_then_wait_equals_step_and_misuse_is_refused():
    a = AtariVectorEnvironment("Pong", num_envs=2, seed=7)
    b = AtariVectorEnvironment("Pong", num_envs=2, seed=7)
    try:
        a.reset()
        b.reset()
        for action in [0, 1, 2, 3, 4, 5] * 3:
            a.step_async(np.full(2, action))
            got = a.step_wait()
            want = b.step(np.full(2, action))
            np.testing.assert_array_equal(got.observation, want.observation)
            np.testing.assert_array_equal(got.step_type, want.step_type)
        a.step_async(np.zeros(2))
        with pytest.raises(RuntimeError, match="twice"):
            a.step_async(np.zeros(2))
        a.step_wait()
        with pytest.raises(RuntimeError, match="without step_async"):
            a.step_wait()
    finally:
        a.close()
        b.close()


def test_rom_names_and_bad_names():
    assert _rom_name("Pong") == "pong"
    assert _rom_name("SpaceInvaders") == "space_invaders"
    assert _rom_name("MsPacman") == "ms_pacman"
    with pytest.raises(UnknownEnvironmentError, match="only for atari"):
        make_vector_environment("gym:CartPole-v1", seeds=[0])
    with pytest.raises(UnknownEnvironmentError, match="no game"):
        make_vector_environment("atari:NoSuchGame", seeds=[0])


@pytest.mark.parametrize("given,expected", [(None, 0.25), (0.0, 0.0)])
def test_the_vector_env_plays_with_the_runs_sticky_actions(monkeypatch, given, expected):
    import ale_py.vector_env

    seen = {}
    real = ale_py.vector_env.AtariVectorEnv

    def recording(**kwargs):
        seen.update(kwargs)
        return real(**kwargs)

    monkeypatch.setattr(ale_py.vector_env, "AtariVectorEnv", recording)
    env = make_vector_environment("atari:Pong", seeds=[0, 1], evaluation=True,
                                  sticky_actions=given)
    env.close()
    assert seen["repeat_action_probability"] == expected
    with pytest.raises(UnknownEnvironmentError, match=r"--sticky_actions: must be in \[0, 1\)"):
        make_vector_environment("atari:Pong", seeds=[0], sticky_actions=1.5)


def _play(env: AtariVectorEnvironment, steps: int, seed: int = 0):
    """Step types, discounts and rewards [steps, K] of uniform random play."""
    rng = np.random.default_rng(seed)
    n = env.action_spec().num_values
    env.reset()
    played = [env.step(rng.integers(0, n, env.num_envs)) for _ in range(steps)]
    return (np.stack([t.step_type for t in played]), np.stack([t.discount for t in played]),
            np.stack([t.reward for t in played]))


@pytest.mark.parametrize("game,lives", [("Breakout", 5), ("Pong", 0)])
def test_a_lost_life_cuts_the_bootstrap_while_the_game_goes_on(game, lives):
    """life_loss: a Breakout game of 5 lives has exactly 4 MID steps of discount 0 (the 5th
    life's loss ends it), and the games themselves are the same; Pong has no lives."""
    plain = AtariVectorEnvironment(game, num_envs=2, seed=3, sticky_actions=0.0)
    cut = AtariVectorEnvironment(game, num_envs=2, seed=3, sticky_actions=0.0, life_loss=True)
    try:
        types, discounts, rewards = _play(plain, 700)
        cut_types, cut_discounts, cut_rewards = _play(cut, 700)
    finally:
        plain.close()
        cut.close()
    np.testing.assert_array_equal(cut_types, types)  # The same games, ends and resets.
    np.testing.assert_array_equal(cut_rewards, rewards)
    np.testing.assert_array_equal(cut_discounts[types == LAST], discounts[types == LAST])
    assert (discounts[types == MID] == 1.0).all()
    for k in range(2):
        ends = np.flatnonzero(types[:, k] == LAST)
        if lives:
            assert len(ends) >= 1, "random Breakout loses a game in 700 steps"
            played = slice(0, ends[-1] + 1)  # Whole games only.
            lost = (types[played, k] == MID) & (cut_discounts[played, k] == 0.0)
            assert lost.sum() == (lives - 1) * len(ends)
        else:
            np.testing.assert_array_equal(cut_discounts[:, k], discounts[:, k])
