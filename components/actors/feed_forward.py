"""The batched feed-forward actor around a batched policy function.

The policy maps a batch of observations to a batch of actions in one call
(a compiled tf.function that embeds exploration, e.g. epsilon-greedy). The
batched actor serves K environments with one call per step and gives the
batched steps whole to one batched adder (`agentkit.adders.BatchedAdder`; an
agent with one adder per environment wraps them in
`components.adders.PerEnvironmentAdders`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import dm_env
import numpy as np
import tree

from agentkit import core
from components.adders.base import BatchedAdder
from components.adders.nstep import PriorityFn
from components.variable_client import VariableClient, make_variable_client

Policy = Callable[[Any], Any]


# (transitions, observation) -> (their priorities, the policy's actions for observation).
PriorityAndPolicyFn = Callable[[Any, Any], tuple[np.ndarray, np.ndarray]]


class BatchedActorBase(core.Actor):
    """What batched actors share: weight updates through a client, one batched adder."""

    _client: VariableClient | None
    _adder: BatchedAdder | None

    @staticmethod
    def _checked(adder: Any) -> BatchedAdder | None:
        """`adder`, once it is a BatchedAdder (or None); a clear TypeError otherwise."""
        if adder is not None and not isinstance(adder, BatchedAdder):
            raise TypeError(f"adder: an agentkit.adders.BatchedAdder (one adder per environment "
                            f"goes in components.adders.PerEnvironmentAdders), got "
                            f"{type(adder).__name__}")
        return adder

    def update(self, wait: bool = False) -> None:
        if self._client is not None:
            self._client.update(wait)

    def interrupt(self) -> None:
        if self._client is not None:
            self._client.interrupt()

    def close(self) -> None:
        if self._adder is not None:
            self._adder.close()


class BatchedFeedForwardActor(BatchedActorBase):
    """Acts in K environments (see BatchedEnvironment) with one policy call per step."""

    def __init__(
        self,
        policy: Policy,
        adder: BatchedAdder | None = None,
        variable_client: VariableClient | None = None,
        priority_fn: PriorityFn | None = None,
        policy_has_extras: bool = False,
        fused_priority_policy: PriorityAndPolicyFn | None = None,
    ):
        """With `priority_fn`, the adder must defer its items (`defer_items=True`).

        `adder` takes the batched timesteps whole (None: nothing is written, as for the
        evaluator). With `policy_has_extras`, the policy returns `(actions, extras)` (e.g.
        IMPALA's behaviour logits), which the adder gets whole too.
        With `fused_priority_policy` (same network and exploration as `policy`
        and `priority_fn`), `observe` computes the priorities and the actions
        for the observation it was given in one call, and `select_action` on
        that same observation object returns them: one compiled call per step
        instead of two.
        """
        self._policy = policy
        self._adder = self._checked(adder)
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
        if self._adder is not None:
            self._adder.add_first(timestep)

    def observe(self, action: Any, next_timestep: dm_env.TimeStep) -> None:
        """One add for all environments; with priorities, one call for all items (and, fused,
        the next actions)."""
        adder = self._adder
        if adder is None:
            return
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


def network_actor(policy: Policy, networks: dict[str, Any], adder: BatchedAdder | None,
                  variable_source: core.VariableSource | None, update_period: int,
                  name: str = "policy") -> BatchedFeedForwardActor:
    """The batched actor of a policy over one network, `networks[name]`, whose weights it
    fetches from `variable_source` (served as `name`) every `update_period` steps (D4PG's and
    SAC's actors)."""
    client = make_variable_client(variable_source, {name: networks[name].variables},
                                  update_period)
    return BatchedFeedForwardActor(policy, adder, client)
