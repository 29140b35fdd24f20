"""Maps `--env` names (`gym:<id>`, `atari:<Game>`) to dm_env environments."""

from __future__ import annotations

from collections.abc import Callable

import dm_env

from components.environments.wrappers import SinglePrecisionWrapper

ENVIRONMENT_KINDS = {
    "gym": "gym:<gymnasium id>, e.g. gym:CartPole-v1",
    "atari": "atari:<Game>, e.g. atari:Pong",
}


class UnknownEnvironmentError(ValueError):
    """The `--env` name does not name an environment this toolkit can make."""


def _make_gym(name: str, seed: int | None, evaluation: bool) -> dm_env.Environment:
    import gymnasium as gym

    from components.environments.gym_adapter import GymnasiumToDmEnv

    del evaluation
    try:
        env = gym.make(name)
    except gym.error.Error as e:
        raise UnknownEnvironmentError(f"--env: gymnasium has no environment '{name}' ({e})") from e
    return GymnasiumToDmEnv(env, seed=seed)


def _make_atari(name: str, seed: int | None, evaluation: bool) -> dm_env.Environment:
    import gymnasium as gym

    from components.environments.atari import make_atari

    try:
        return make_atari(name, seed=seed, evaluation=evaluation)
    except gym.error.Error as e:
        raise UnknownEnvironmentError(f"--env: ale-py has no game '{name}' ({e})") from e


_FACTORIES: dict[str, Callable[[str, int | None, bool], dm_env.Environment]] = {
    "gym": _make_gym,
    "atari": _make_atari,
}


def make_environment(
    name: str, seed: int | None = None, evaluation: bool = False
) -> dm_env.Environment:
    """Makes the environment named `kind:id`, with float32 observations and rewards."""
    kind, sep, env_id = name.partition(":")
    if not sep or not env_id or kind not in _FACTORIES:
        allowed = "; ".join(ENVIRONMENT_KINDS.values())
        raise UnknownEnvironmentError(f"--env: unknown environment '{name}'; allowed: {allowed}")
    return SinglePrecisionWrapper(_FACTORIES[kind](env_id, seed, evaluation))
