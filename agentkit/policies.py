"""What a policy is: the calling conventions the actors and the exporter rely on.

A builder's `make_policy` returns one of these; the builder's own `make_actor` pairs it with
the actor that knows its convention (components.actors: `BatchedFeedForwardActor` for the
first two, `BatchedRecurrentActor` for the third). Every call takes a batch (one row per
environment of an actor's group) and returns a batch:

    FeedForwardPolicy     policy(observations) -> actions
    PolicyWithExtras      policy(observations) -> (actions, extras)
                          extras: a dict of per-row arrays the adder stores with each step
                          (IMPALA's behaviour logits); the actor is made with
                          policy_has_extras=True
    RecurrentPolicy       policy(observations, state) -> (actions, extras, new state)
                          state: the core's, one row per environment; the actor resets a row
                          to the network's initial state when its episode starts

A policy that is also a `ServablePolicy` can be exported as a TensorFlow SavedModel
(`python -m launch_programs.evaluate RUN_DIR --export=DIR`; components/actors/serving.py):
`serve` is the same policy in TensorFlow ops only.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from agentkit.specs import EnvironmentSpec


@runtime_checkable
class FeedForwardPolicy(Protocol):
    def __call__(self, observation: Any) -> Any:
        """Actions for a batch of observations (or (actions, extras), see above)."""


@runtime_checkable
class RecurrentPolicy(Protocol):
    def __call__(self, observation: Any, state: Any) -> tuple[Any, dict[str, Any], Any]:
        """(actions, extras, new state) for a batch of observations and core states."""


@runtime_checkable
class ServablePolicy(Protocol):
    """A policy that `components.actors.serving.export_policy` can save."""

    spec: EnvironmentSpec  # Its environment's: the exported signature's observations.
    core_size: int  # 0: feed-forward; else the LSTM core's size (state = (hidden, cell)).

    def serve(self, observation: Any, *state: Any) -> dict[str, Any]:
        """The policy in TensorFlow ops only: {"actions": ..., and what they come from
        (q_values, logits), and "state" (hidden, cell) when recurrent}."""
