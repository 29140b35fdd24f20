"""The batched feed-forward actor around a batched policy function.

The policy maps a batch of observations to a batch of actions in one call
(a compiled tf.function that embeds exploration, e.g. epsilon-greedy). The
batched actor serves K environments with one call per step and routes each
environment's stream to its own adder (or all of them to one batched adder).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import dm_env
import numpy as np
import tree

from agentkit import core
from components.adders.base import Adder, BatchedAdder
from components.adders.nstep import PriorityFn, stack_transitions
from components.variable_client import VariableClient

Policy = Callable[[Any], Any]


# (transitions, observation) -> (their priorities, the policy's actions for observation).
PriorityAndPolicyFn = Callable[[Any, Any], tuple[np.ndarray, np.ndarray]]


def write_with_priorities(adders: Sequence[Adder], priority_fn: PriorityFn,
                          observation: Any = None,
                          fused: PriorityAndPolicyFn | None = None) -> np.ndarray | None:
    """Gives the items waiting in deferring adders their priorities, in one call.

    Ape-X: the actor computes the initial priority of what it writes, batched
    over every environment it steps. With `fused` and `observation`, the same
    call also returns the policy's actions for `observation` (else None).
    """
    pending = [adder.pending() for adder in adders]
    flat = [t for items in pending for t in items]
    if not flat:
        return None
    actions = None
    if fused is not None:
        priorities, actions = fused(stack_transitions(flat), observation)
    else:
        priorities = priority_fn(stack_transitions(flat))
    priorities = np.asarray(priorities).reshape(-1)
    start = 0
    for adder, items in zip(adders, pending):
        if items:
            adder.write_pending(priorities[start:start + len(items)])
            start += len(items)
    return actions


def slot_timestep(timestep: dm_env.TimeStep, i: int) -> dm_env.TimeStep:
    """Environment i's timestep out of a batched one."""
    step_type = dm_env.StepType(int(timestep.step_type[i]))
    first = step_type == dm_env.StepType.FIRST
    return dm_env.TimeStep(
        step_type=step_type,
        reward=None if first else timestep.reward[i],
        discount=None if first else timestep.discount[i],
        observation=tree.map_structure(lambda x: x[i], timestep.observation),
    )


class BatchedActorBase(core.Actor):
    """What batched actors share: weight updates through a client, one adder per environment."""

    _client: VariableClient | None
    _adders: list

    def update(self, wait: bool = False) -> None:
        if self._client is not None:
            self._client.update(wait)

    def interrupt(self) -> None:
        if self._client is not None:
            self._client.interrupt()

    def close(self) -> None:
        for adder in self._adders:
            adder.close()


class BatchedFeedForwardActor(BatchedActorBase):
    """Acts in K environments (see BatchedEnvironment) with one policy call per step."""

    def __init__(
        self,
        policy: Policy,
        adders: Sequence[Adder] | BatchedAdder | None = None,
        variable_client: VariableClient | None = None,
        priority_fn: PriorityFn | None = None,
        policy_has_extras: bool = False,
        fused_priority_policy: PriorityAndPolicyFn | None = None,
    ):
        """With `priority_fn`, the adders must defer their items (`defer_items=True`).

        `adders`: one adder per environment, or one `BatchedAdder` that takes
        the batched timesteps whole (no per-slot timesteps are made).

        With `policy_has_extras`, the policy returns `(actions, extras)` (e.g.
        IMPALA's behaviour logits) and each environment's adder gets its row
        (a batched adder gets them whole).
        With `fused_priority_policy` (same network and exploration as `policy`
        and `priority_fn`), `observe` computes the priorities and the actions
        for the observation it was given in one call, and `select_action` on
        that same observation object returns them: one compiled call per step
        instead of two.
        """
        self._policy = policy
        self._batched_adder = adders if isinstance(adders, BatchedAdder) else None
        self._adders = [adders] if self._batched_adder is not None else list(adders or [])
        self._client = variable_client
        self._priority_fn = priority_fn
        self._has_extras = policy_has_extras
        self._extras = None
        if fused_priority_policy is not None and (priority_fn is None or policy_has_extras):
            raise ValueError("fused_priority_policy needs a priority_fn and a policy without extras")
        self._fused = fused_priority_policy
        self._next = None  # (observation, actions) computed by the fused call.

    def select_action(self, observation: Any) -> np.ndarray:
        if self._next is not None:
            cached_observation, actions = self._next
            self._next = None
            if cached_observation is observation:
                return actions
        if self._has_extras:
            actions, extras = self._policy(observation)
            self._extras = tree.map_structure(np.asarray, extras)
            return np.asarray(actions)
        return np.asarray(self._policy(observation))

    def observe_first(self, timestep: dm_env.TimeStep) -> None:
        if self._batched_adder is not None:
            self._batched_adder.add_first(timestep)
            return
        for i, adder in enumerate(self._adders):
            adder.add_first(slot_timestep(timestep, i))

    def observe(self, action: Any, next_timestep: dm_env.TimeStep) -> None:
        if self._batched_adder is not None:
            self._observe_batched(action, next_timestep)
            return
        for i, adder in enumerate(self._adders):
            timestep = slot_timestep(next_timestep, i)
            if timestep.first():
                adder.add_first(timestep)
            elif self._extras is not None:
                adder.add(action[i], timestep, tree.map_structure(lambda x, i=i: x[i], self._extras))
            else:
                adder.add(action[i], timestep)
        if self._priority_fn is not None:
            observation = next_timestep.observation
            actions = write_with_priorities(self._adders, self._priority_fn, observation,
                                            self._fused)
            self._next = None if actions is None else (observation, actions)

    def _observe_batched(self, action: Any, next_timestep: dm_env.TimeStep) -> None:
        """One add for all environments; with priorities, one call for all items (and actions)."""
        adder = self._batched_adder
        if self._extras is not None:  # Batched already: the adder takes them whole.
            adder.add(action, next_timestep, self._extras)
        else:
            adder.add(action, next_timestep)
        if self._priority_fn is None:
            return
        pending = adder.pending()
        if pending is None:
            adder.write_pending()  # Flushes.
            return
        observation = next_timestep.observation
        if self._fused is not None:
            priorities, actions = self._fused(pending, observation)
            self._next = (observation, actions)
        else:
            priorities = self._priority_fn(pending)
        adder.write_pending(priorities)
