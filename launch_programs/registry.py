"""The agents the command line knows: name -> config class, builder, presets.

Adding an agent to the command line is one entry here; the agent itself
never imports anything from launch_programs.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any


@dataclasses.dataclass(frozen=True)
class AgentEntry:
    config_class: type
    builder_class: type
    # Picks a config preset for an environment name (e.g. Atari settings).
    preset: Callable[[str], dict[str, Any]] = lambda env: {}


def _dqn() -> AgentEntry:
    from agents.dqn import DQNBuilder, DQNConfig

    def preset(env: str) -> dict[str, Any]:
        if env.startswith("atari:"):
            return {f.name: getattr(DQNConfig.atari(), f.name) for f in dataclasses.fields(DQNConfig)}
        return {}

    return AgentEntry(DQNConfig, DQNBuilder, preset)


def _impala() -> AgentEntry:
    from agents.impala import IMPALABuilder, IMPALAConfig

    def preset(env: str) -> dict[str, Any]:
        if env.startswith("atari:"):
            atari = IMPALAConfig.atari()
            return {f.name: getattr(atari, f.name) for f in dataclasses.fields(IMPALAConfig)}
        return {}

    return AgentEntry(IMPALAConfig, IMPALABuilder, preset)


def _r2d2() -> AgentEntry:
    from agents.r2d2 import R2D2Builder, R2D2Config

    def preset(env: str) -> dict[str, Any]:
        if env.startswith("atari:"):
            atari = R2D2Config.atari()
            return {f.name: getattr(atari, f.name) for f in dataclasses.fields(R2D2Config)}
        return {}

    return AgentEntry(R2D2Config, R2D2Builder, preset)


def _d4pg() -> AgentEntry:
    from agents.d4pg import D4PGBuilder, D4PGConfig

    def preset(env: str) -> dict[str, Any]:
        if env.startswith("control:"):
            return {"v_min": -150.0, "v_max": 150.0}  # Rewards in [0, 1]: values up to 100.
        return {}

    return AgentEntry(D4PGConfig, D4PGBuilder, preset)


AGENTS: dict[str, Callable[[], AgentEntry]] = {
    "dqn": _dqn, "impala": _impala, "r2d2": _r2d2, "d4pg": _d4pg,
}


def get_agent(name: str) -> AgentEntry:
    if name not in AGENTS:
        raise ValueError(f"--agent: unknown agent '{name}'; allowed: {', '.join(sorted(AGENTS))}")
    return AGENTS[name]()
