"""The acting layout: how many actors, how many environments each steps, in how many groups.

It is one frozen value, made once from the command line's flags
(`launch_programs.ProgramConfig.layout`) and given to the builder when it is
made, so that a builder's parts (a queue's item shape, a round's size) follow
from its constructor's arguments alone and cannot change after.
"""

from __future__ import annotations

import dataclasses
import numbers

from agentkit.config import require


@dataclasses.dataclass(frozen=True)
class ActingLayout:
    """`num_actors` actor nodes, each stepping `num_envs_per_actor` environments with one policy
    call a step, in `env_groups` alternating groups (one simulating while the other infers)."""

    num_actors: int = 1
    num_envs_per_actor: int = 1
    env_groups: int = 1

    def __post_init__(self):
        require(isinstance(self.num_actors, numbers.Integral) and self.num_actors >= 1, "num_actors",
                "a whole number >= 1", self.num_actors)
        require(isinstance(self.num_envs_per_actor, numbers.Integral) and self.num_envs_per_actor >= 1,
                "num_envs_per_actor", "a whole number >= 1", self.num_envs_per_actor)
        require(isinstance(self.env_groups, numbers.Integral) and self.env_groups >= 1
                and self.num_envs_per_actor % self.env_groups == 0, "env_groups",
                f"a divisor of num_envs_per_actor ({self.num_envs_per_actor})", self.env_groups)

    @property
    def envs_per_group(self) -> int:
        """Environments one group steps together: what one adder and one policy call serve."""
        return self.num_envs_per_actor // self.env_groups

    @property
    def num_envs(self) -> int:
        """Environments of all actors together."""
        return self.num_actors * self.num_envs_per_actor
