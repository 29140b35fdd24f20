"""Environment specs: what an agent needs to know to build its networks and tables."""

from __future__ import annotations

import dataclasses
from typing import Any

import dm_env
import numpy as np
from dm_env import specs


@dataclasses.dataclass(frozen=True)
class EnvironmentSpec:
    """The nested specs of observations, actions, rewards and discounts."""

    observations: Any
    actions: Any
    rewards: Any
    discounts: Any


def make_environment_spec(environment: dm_env.Environment) -> EnvironmentSpec:
    """Reads the spec of a dm_env environment."""
    return EnvironmentSpec(
        observations=environment.observation_spec(),
        actions=environment.action_spec(),
        rewards=environment.reward_spec(),
        discounts=environment.discount_spec(),
    )


def num_discrete_actions(spec: EnvironmentSpec) -> int:
    """Number of actions of a discrete action spec; a clear error otherwise."""
    actions = spec.actions
    if not isinstance(actions, specs.DiscreteArray):
        raise ValueError(
            f"this agent needs a discrete action space, got {type(actions).__name__} "
            f"with shape {getattr(actions, 'shape', None)}"
        )
    return int(actions.num_values)


def bounded_continuous_actions(spec: EnvironmentSpec) -> specs.BoundedArray:
    """The action spec of a bounded continuous action space; a clear error otherwise."""
    actions = spec.actions
    if (isinstance(actions, specs.DiscreteArray) or not isinstance(actions, specs.BoundedArray)
            or not np.issubdtype(actions.dtype, np.floating)):
        raise ValueError(
            f"this agent needs bounded continuous actions, got {type(actions).__name__} "
            f"with dtype {getattr(actions, 'dtype', None)}"
        )
    return actions
