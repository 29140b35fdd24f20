"""A batched recurrent actor: K environments, one policy call per step, one core state each.

The policy maps (observations, states) to (actions, extras dict, new states). The
actor keeps each environment's core state, resets it to the initial state
when that environment starts an episode, and hands the adder the states the
step began with (`extras["core_state"]`, one row per environment), so a
learner can replay an unroll from exactly where the actor was.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import dm_env
import numpy as np
import tree

from components.actors.feed_forward import BatchedActorBase
from components.adders.base import BatchedAdder
from components.variable_client import VariableClient

RecurrentPolicy = Callable[[Any, Any], tuple]  # (obs, state) -> (actions, extras, state)


class BatchedRecurrentActor(BatchedActorBase):
    """Acts in K environments with a recurrent policy; the extras go to the adder, batched."""

    def __init__(
        self,
        policy: RecurrentPolicy,
        initial_state: Callable[[int], Any],
        adder: BatchedAdder | None = None,
        variable_client: VariableClient | None = None,
    ):
        self._policy = policy
        self._initial_state = initial_state
        self._adder = self._checked(adder)
        self._client = variable_client
        self._state = None  # Made at the first step, for that many environments.
        self._step_state = None  # The state the last selected actions started from.
        self._extras = None

    def _zeros(self, batch_size: int):
        return tree.map_structure(np.asarray, self._initial_state(batch_size))

    def _reset_rows(self, first: np.ndarray) -> None:
        if first.any() and self._state is not None:
            initial = self._zeros(len(first))
            self._state = tree.map_structure(
                lambda s, z: np.where(first.reshape((-1,) + (1,) * (s.ndim - 1)), z, s),
                self._state, initial)

    def select_action(self, observation: Any) -> np.ndarray:
        if self._state is None:
            self._state = self._zeros(len(tree.flatten(observation)[0]))
        self._step_state = self._state
        actions, extras, new_state = self._policy(observation, self._state)
        self._state = tree.map_structure(np.asarray, new_state)
        self._extras = tree.map_structure(np.asarray, extras)
        return np.asarray(actions)

    def observe_first(self, timestep: dm_env.TimeStep) -> None:
        self._state = None  # Every environment starts from the initial state.
        if self._adder is not None:
            self._adder.add_first(timestep)

    def observe(self, action: Any, next_timestep: dm_env.TimeStep) -> None:
        first = np.asarray(next_timestep.step_type) == dm_env.StepType.FIRST
        if self._adder is not None:
            extras = dict(self._extras)
            extras["core_state"] = self._step_state
            self._adder.add(action, next_timestep, extras)
        self._reset_rows(first)
