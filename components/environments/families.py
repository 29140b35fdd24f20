"""Environment families: which kind of task an `--env` name is, to choose an agent's preset.

rl-baselines3-zoo keeps tuned settings per task; an agent here keeps one
preset per family (its builder's `preset` and `program_preset`):

    classic_control  gym: CartPole, Acrobot, MountainCar, MountainCarContinuous, Pendulum
    atari            atari:<Game>
    minatar          minatar:<game>
    control          control:<domain>:<task>
    other            anything else: the config's own defaults
"""

from __future__ import annotations

CLASSIC_CONTROL = ("CartPole", "Acrobot", "MountainCar", "MountainCarContinuous", "Pendulum")
FAMILIES = ("classic_control", "atari", "minatar", "control", "other")


def environment_family(env: str) -> str:
    """The family of `env` ("gym:CartPole-v1" -> "classic_control")."""
    kind, _, name = env.partition(":")
    if kind == "gym":
        return "classic_control" if name.split("-")[0] in CLASSIC_CONTROL else "other"
    return kind if kind in ("atari", "minatar", "control") else "other"
