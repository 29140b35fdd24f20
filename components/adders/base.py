"""The adder interface."""

from __future__ import annotations

import abc
from typing import Any

import dm_env


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
