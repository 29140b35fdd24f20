"""Maps `--env` names (gym:, atari:, minatar:, memory:, control:) to dm_env environments."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import dm_env

from components.environments.wrappers import (
    FlattenObservationWrapper,
    ObservationIndicesWrapper,
    SinglePrecisionWrapper,
)

ENVIRONMENT_KINDS = {
    "gym": "gym:<gymnasium id>, e.g. gym:CartPole-v1",
    "atari": "atari:<Game>, e.g. atari:Pong",
    "minatar": "minatar:<game>, e.g. minatar:breakout",
    "memory": "memory:<N>, e.g. memory:10 (a cue at the first step, its question N steps later)",
    "control": "control:<domain>:<task>, e.g. control:cartpole:swingup (pip install -e .[control])",
}


class UnknownEnvironmentError(ValueError):
    """The `--env` name does not name an environment this toolkit can make."""


def _make_gym(name: str, seed: int | None, evaluation: bool,
              render: bool = False) -> dm_env.Environment:
    import os

    import gymnasium as gym

    from components.environments.gym_adapter import GymnasiumToDmEnv

    del evaluation
    if render:  # pygame draws classic control: no greeting, no sound card sought.
        os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")
        os.environ.setdefault("SDL_AUDIODRIVER", "dummy")
        os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
    try:
        env = gym.make(name, render_mode="rgb_array") if render else gym.make(name)
    except gym.error.Error as e:
        raise UnknownEnvironmentError(f"--env: gymnasium has no environment '{name}' ({e})") from e
    return GymnasiumToDmEnv(env, seed=seed)


def _make_atari(name: str, seed: int | None, evaluation: bool,
                sticky_actions: float | None = None) -> dm_env.Environment:
    import gymnasium as gym

    from components.environments.atari import STICKY_ACTION_PROBABILITY, make_atari

    sticky = STICKY_ACTION_PROBABILITY if sticky_actions is None else sticky_actions
    try:
        return make_atari(name, seed=seed, evaluation=evaluation, sticky_actions=sticky)
    except gym.error.Error as e:
        raise UnknownEnvironmentError(f"--env: ale-py has no game '{name}' ({e})") from e


def _make_minatar(name: str, seed: int | None, evaluation: bool) -> dm_env.Environment:
    from components.environments.minatar import GAMES, MinAtarEnvironment

    del evaluation  # As in the paper, evaluation plays with sticky actions too.
    if name not in GAMES:
        raise UnknownEnvironmentError(f"--env: MinAtar has no game '{name}'; allowed: "
                                      f"{', '.join('minatar:' + g for g in GAMES)}")
    return MinAtarEnvironment(name, seed=seed)


def _make_memory(name: str, seed: int | None, evaluation: bool) -> dm_env.Environment:
    from components.environments.memory import MemoryEnvironment

    del evaluation
    if not name.isdigit() or int(name) < 1:
        raise UnknownEnvironmentError(f"--env: memory:<N> needs a length N >= 1, got '{name}'")
    return MemoryEnvironment(int(name), seed=seed)


def _make_control(name: str, seed: int | None, evaluation: bool) -> dm_env.Environment:
    """The DeepMind Control Suite with state observations, flattened to one vector."""
    import os

    del evaluation
    # State observations: no rendering unless asked (evaluate --video sets MUJOCO_GL=egl).
    os.environ.setdefault("MUJOCO_GL", "disable")
    try:
        from dm_control import suite
    except ImportError:
        raise UnknownEnvironmentError(
            "--env: control:<domain>:<task> needs dm-control: pip install -e .[control]") from None
    domain, _, task = name.partition(":")
    if (domain, task) not in suite.ALL_TASKS:
        raise UnknownEnvironmentError(f"--env: the control suite has no task '{name}'")
    return FlattenObservationWrapper(suite.load(domain, task, task_kwargs={"random": seed}))


_FACTORIES: dict[str, Callable[[str, int | None, bool], dm_env.Environment]] = {
    "gym": _make_gym,
    "atari": _make_atari,
    "minatar": _make_minatar,
    "memory": _make_memory,
    "control": _make_control,
}


def make_environment(
    name: str,
    seed: int | None = None,
    evaluation: bool = False,
    observation_indices: Sequence[int] = (),
    sticky_actions: float | None = None,
    render: bool = False,
) -> dm_env.Environment:
    """Makes the environment named `kind:id`, with float32 observations and rewards.

    `observation_indices` keeps only those entries of a vector observation
    (e.g. (0, 2) hides CartPole's velocities); empty keeps everything.
    `sticky_actions` (atari: only) is the probability that a game repeats the
    previous action; None: the family's default (0.25). `render`: it draws frames
    (components.environments.video): a gymnasium one is made to render (Atari games and
    control tasks always can).
    """
    kind, sep, env_id = name.partition(":")
    if not sep or not env_id or kind not in _FACTORIES:
        allowed = "; ".join(ENVIRONMENT_KINDS.values())
        raise UnknownEnvironmentError(f"--env: unknown environment '{name}'; allowed: {allowed}")
    if sticky_actions is not None:
        check_sticky_actions_for(name, sticky_actions)
        environment = SinglePrecisionWrapper(_make_atari(env_id, seed, evaluation, sticky_actions))
    elif kind == "gym":
        environment = SinglePrecisionWrapper(_make_gym(env_id, seed, evaluation, render))
    else:
        environment = SinglePrecisionWrapper(_FACTORIES[kind](env_id, seed, evaluation))
    if observation_indices:
        try:
            environment = ObservationIndicesWrapper(environment, observation_indices)
        except ValueError as e:
            raise UnknownEnvironmentError(f"--observation_indices: {e}") from None
    return environment


def check_sticky_actions_for(name: str, sticky_actions: float) -> float:
    """`sticky_actions` if `name` is an atari: environment and it is in [0, 1);
    UnknownEnvironmentError (one line naming the flag) otherwise."""
    from components.environments.atari import check_sticky_actions

    if not name.startswith("atari:"):
        raise UnknownEnvironmentError(
            f"--sticky_actions: only for atari:<Game> environments, got --env={name}")
    try:
        return check_sticky_actions(sticky_actions)
    except ValueError as e:
        raise UnknownEnvironmentError(str(e)) from None


def make_vector_environment(name: str, seeds: Sequence[int], evaluation: bool = False,
                            sticky_actions: float | None = None, life_loss: bool = False):
    """len(seeds) games stepped in native threads (`atari:<Game>` only), one batched environment;
    `life_loss`: a lost life has discount 0 while the game goes on (`AtariVectorEnvironment`).

    The games are seeded seeds[0], seeds[0] + 1, ...: ale-py seeds its games
    from one number.
    """
    kind, _, game = name.partition(":")
    if kind != "atari" or not game:
        raise UnknownEnvironmentError(
            f"--atari_vector_env: only for atari:<Game> environments, got '{name}'")
    from components.environments.atari import STICKY_ACTION_PROBABILITY
    from components.environments.atari_vector import AtariVectorEnvironment

    sticky = STICKY_ACTION_PROBABILITY if sticky_actions is None else \
        check_sticky_actions_for(name, sticky_actions)
    try:
        return AtariVectorEnvironment(game, len(seeds), seed=int(seeds[0]), evaluation=evaluation,
                                      sticky_actions=sticky, life_loss=life_loss)
    except Exception as e:  # noqa: BLE001  (ale-py raises a bare error for an unknown ROM)
        raise UnknownEnvironmentError(f"--env: ale-py has no game '{game}' ({e})") from e
