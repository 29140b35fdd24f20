"""minatar:<game>: the five games as batched-ready dm_env environments, with their torso."""

from __future__ import annotations

import numpy as np
import pytest

from agentkit.specs import make_environment_spec
from components.environments import make_environment
from components.environments.minatar import GAMES
from components.environments.registry import UnknownEnvironmentError

CHANNELS = {"asterix": 4, "breakout": 4, "freeway": 7, "seaquest": 10, "space_invaders": 6}


def test_an_unknown_game_fails_in_one_line_naming_the_five():
    with pytest.raises(UnknownEnvironmentError) as error:
        make_environment("minatar:pong")
    message = str(error.value)
    assert "\n" not in message and "'pong'" in message
    assert all(f"minatar:{game}" in message for game in GAMES)


@pytest.mark.parametrize("game", GAMES)
def test_each_game_gives_channels_last_grids_of_0_1_and_six_actions(game):
    env = make_environment(f"minatar:{game}", seed=3)
    spec = make_environment_spec(env)
    assert spec.observations.shape == (10, 10, CHANNELS[game])
    assert spec.observations.dtype == np.uint8
    assert spec.actions.num_values == 6
    timestep = env.reset()
    assert timestep.first() and timestep.observation.shape == (10, 10, CHANNELS[game])
    rng = np.random.default_rng(0)
    seen = set()
    for _ in range(200):
        timestep = env.step(rng.integers(0, 6))
        seen.update(np.unique(timestep.observation).tolist())
        assert timestep.reward.dtype == np.float32
        if timestep.last():
            assert timestep.discount == 0.0  # The games end by termination only.
            assert env.step(0).first()  # The next step starts a new episode.
    assert seen == {0, 1}


def _play(seed, steps=300):
    env = make_environment("minatar:breakout", seed=seed)
    env.reset()
    rng = np.random.default_rng(1)
    out = []
    for _ in range(steps):
        timestep = env.step(rng.integers(0, 6))
        out.append((timestep.observation.copy(), float(timestep.reward or 0.0)))
    return out


def test_a_seed_fixes_the_game_and_its_sticky_actions():
    first, again, other = _play(5), _play(5), _play(6)
    assert all(np.array_equal(a[0], b[0]) and a[1] == b[1] for a, b in zip(first, again))
    assert any(not np.array_equal(a[0], b[0]) for a, b in zip(first, other))
    assert sum(r for _, r in first) > 0  # Random play breaks some bricks (about 0.5 an episode).


def test_the_auto_torso_of_a_minatar_grid_is_the_papers_convolution():
    from components.networks import MinAtarTorso, make_torso

    spec = make_environment_spec(make_environment("minatar:breakout", seed=0))
    torso = make_torso(spec, "auto", (64,))
    assert isinstance(torso, MinAtarTorso)
    features = torso(np.ones((2, 10, 10, 4), np.uint8))
    assert features.shape == (2, 8 * 8 * 16)  # 16 filters, 3x3, valid: 8x8.
    kernel = next(v for v in torso.variables if v.shape.rank == 4)
    assert tuple(kernel.shape) == (3, 3, 4, 16)
