"""The adder interfaces: what an actor hands its experience to (builders return these)."""

from __future__ import annotations

import abc
from typing import Any

import dm_env

# Reverb's trajectory writer logs "The number of pending items is alarmingly high, did you
# forget to call Flush?" once 50 items wait unconfirmed (dm-reverb 0.14.0). An adder that
# creates many items at once flushes before it holds more than this; an agent's
# `max_in_flight_items` stays below it with room for an episode's last n-step items.
PENDING_ITEMS_LIMIT = 49
MAX_IN_FLIGHT_ITEMS = 40


class Adder(abc.ABC):
    """Receives an actor's experience and writes replay items.

    `add_first` starts an episode; `add` records the action taken and the
    timestep it led to. An adder writes every item of an episode by the time
    `add` sees its LAST timestep, and `close` writes what is left.
    """

    @abc.abstractmethod
    def add_first(self, timestep: dm_env.TimeStep) -> None:
        """Starts an episode with its FIRST timestep."""

    @abc.abstractmethod
    def add(self, action: Any, next_timestep: dm_env.TimeStep, extras: Any = ()) -> None:
        """Records `action` and the timestep it led to."""

    @abc.abstractmethod
    def reset(self) -> None:
        """Drops any partial episode."""

    def close(self) -> None:
        """Flushes pending items and releases the connection."""


class BatchedAdder(abc.ABC):
    """Receives the batched experience of K environments stepped in lock-step.

    Timesteps and actions carry a leading K axis; a slot whose episode ended
    restarts with a FIRST timestep in `add`. Adders that defer their items
    (`pending()` / `write_pending(priorities)`) let the actor give every
    item of a step its priority in one network call.
    """

    num_envs: int
    items_written: int

    @abc.abstractmethod
    def add_first(self, timestep: dm_env.TimeStep) -> None:
        """Starts an episode in every slot (all FIRST)."""

    @abc.abstractmethod
    def add(self, actions: Any, next_timestep: dm_env.TimeStep, extras: Any = ()) -> None:
        """Records each slot's action and the timestep it led to."""

    def pending(self) -> Any:
        """The items waiting for priorities (stacked), or None."""
        return None

    def write_pending(self, priorities: Any = None) -> None:
        """Writes the pending items."""

    @abc.abstractmethod
    def reset(self) -> None:
        """Ends every slot's episode early (nothing written is dropped)."""

    def close(self) -> None:
        """Flushes pending items and releases the connection."""
