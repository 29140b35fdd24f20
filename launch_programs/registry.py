"""The agents the command line knows by name: name -> "module:BuilderClass".

An agent is its builder class (`agentkit.builders.ActorLearnerBuilder`):
it names its config class and its presets, so adding one here is one line,
and the agent itself never imports anything from launch_programs.
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Callable
from typing import Any

from agentkit.builders import ActorLearnerBuilder

AGENTS: dict[str, str] = {
    "dqn": "agents.dqn:DQNBuilder",
    "impala": "agents.impala:IMPALABuilder",
    "r2d2": "agents.r2d2:R2D2Builder",
    "d4pg": "agents.d4pg:D4PGBuilder",
}


@dataclasses.dataclass(frozen=True)
class AgentEntry:
    config_class: type
    builder_class: type[ActorLearnerBuilder]
    # Picks config values for an environment name (e.g. Atari settings).
    preset: Callable[[str], dict[str, Any]]

    @classmethod
    def from_builder(cls, builder_class: type[ActorLearnerBuilder]) -> AgentEntry:
        return cls(builder_class.config_class, builder_class, builder_class.preset)


def _load(target: str) -> Any:
    module_name, _, attribute = target.partition(":")
    return getattr(importlib.import_module(module_name), attribute)


def get_agent(name: str) -> AgentEntry:
    if name not in AGENTS:
        raise ValueError(f"--agent: unknown agent '{name}'; allowed: {', '.join(sorted(AGENTS))}")
    return AgentEntry.from_builder(_load(AGENTS[name]))
