"""Presets by environment family: which kind of task an `--env` name is, and the values an
agent chose for that kind, config and acting layout side by side.

rl-baselines3-zoo keeps tuned settings per task; an agent here keeps one
preset per family, in one place, its config class: a classmethod named after
the family (`DQNConfig.atari()`: config values) and the `program_presets`
class variable (`{"atari": {"num_actors": 1, ...}}`: the acting layout and the
other program flags). The builder's `preset(env)` and `program_preset(env)`
read them through this module. Families:

    classic_control  gym: CartPole, Acrobot, MountainCar, MountainCarContinuous, Pendulum
    atari            atari:<Game>
    minatar          minatar:<game>
    control          control:<domain>:<task>
    other            anything else: the config's own defaults
"""

from __future__ import annotations

from typing import Any

from agentkit.config import field_values

CLASSIC_CONTROL = ("CartPole", "Acrobot", "MountainCar", "MountainCarContinuous", "Pendulum")
FAMILIES = ("classic_control", "atari", "minatar", "control", "other")


def environment_family(env: str) -> str:
    """The family of `env` ("gym:CartPole-v1" -> "classic_control")."""
    kind, _, name = env.partition(":")
    if kind == "gym":
        return "classic_control" if name.split("-")[0] in CLASSIC_CONTROL else "other"
    return kind if kind in ("atari", "minatar", "control") else "other"


def family_preset(config_class: type, env: str) -> dict[str, Any]:
    """The values of `config_class`'s classmethod named after `env`'s family (`atari()`,
    `classic_control()`), or {} when it has none: a builder's `preset`."""
    factory = getattr(config_class, environment_family(env), None)
    return field_values(factory()) if callable(factory) else {}


def family_program_preset(config_class: type, env: str) -> dict[str, Any]:
    """A copy of `config_class.program_presets[family of env]` (program flags by family), or
    {}: a builder's `program_preset`."""
    presets = getattr(config_class, "program_presets", {})
    unknown = sorted(set(presets) - set(FAMILIES))
    if unknown:  # A misspelt family would never be picked.
        raise ValueError(f"program presets for unknown families {unknown}; known: {FAMILIES}")
    return dict(presets.get(environment_family(env), {}))
