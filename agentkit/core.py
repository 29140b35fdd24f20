"""The five interfaces every component and agent is written against.

Kept deliberately small: actors act, learners learn, variable sources serve
weights, workers run, saveables can be checkpointed. Everything else in the
toolkit depends on these, and these depend on nothing.
"""

from __future__ import annotations

import abc
import os
from collections.abc import Mapping, Sequence
from typing import Any

import dm_env
import numpy as np

# A flat mapping of names to arrays: what a Saveable hands to a checkpointer.
State = Mapping[str, np.ndarray]


# A process that serves others (the replay server) names this host in the
# addresses it hands out; a launcher sets it to the machine's IP on clusters.
ADVERTISE_HOST_ENV = "AGENTKIT_ADVERTISE_HOST"


def advertised_host() -> str:
    """The host name other processes should use to reach this one."""
    return os.environ.get(ADVERTISE_HOST_ENV) or "localhost"


class Actor(abc.ABC):
    """Interacts with an environment: picks actions and observes the results.

    `observe_first` is called with the FIRST timestep of every episode and
    `observe` with each subsequent (action, timestep) pair; the actor forwards
    both to its adder. `update` lets it refresh its weights from a variable
    source; with `wait=False` it must never block acting.
    """

    @abc.abstractmethod
    def select_action(self, observation: Any) -> Any:
        """Returns the action to take given an observation."""

    @abc.abstractmethod
    def observe_first(self, timestep: dm_env.TimeStep) -> None:
        """Records the first timestep of an episode."""

    @abc.abstractmethod
    def observe(self, action: Any, next_timestep: dm_env.TimeStep) -> None:
        """Records the action taken and the timestep it led to."""

    @abc.abstractmethod
    def update(self, wait: bool = False) -> None:
        """Refreshes the actor's parameters from its variable source."""

    def interrupt(self) -> None:
        """Ends any wait inside `update` at once (thread-safe): an actor that waits for its
        learner every round (PPO) must not outlive a stopped program. Default: no waits."""

    def close(self) -> None:
        """Flushes what the actor still holds (its adder's last items reach replay); called
        once, when its node ends, whatever the reason. Default: nothing to flush."""


class VariableSource(abc.ABC):
    """Something that serves named lists of variables (as numpy arrays)."""

    @abc.abstractmethod
    def get_variables(self, names: Sequence[str]) -> list[list[np.ndarray]]:
        """Returns one list of arrays per requested collection name."""


class Worker(abc.ABC):
    """A node that runs until it is told to stop or its own work is done."""

    @abc.abstractmethod
    def run(self) -> None:
        """Runs the main loop of the worker."""


class Saveable(abc.ABC):
    """An object whose state can be written to and read back from disk."""

    @abc.abstractmethod
    def save(self) -> State:
        """Returns the state as a flat mapping of names to arrays."""

    @abc.abstractmethod
    def restore(self, state: State) -> None:
        """Restores the state returned by an earlier `save`."""


class Learner(VariableSource, Worker, Saveable):
    """Updates parameters from data; serves them; can be checkpointed.

    `run` steps until the worker is stopped; `step` does one update.
    """

    @abc.abstractmethod
    def step(self) -> None:
        """Performs one update step."""

    def stats(self) -> dict[str, Any]:
        """Counts about the learner's data for the run's summary (IMPALA: unrolls learned)."""
        return {}

    def run(self, num_steps: int | None = None) -> None:
        """Steps `num_steps` times, or forever when it is None."""
        i = 0
        while num_steps is None or i < num_steps:
            self.step()
            i += 1
