"""A thread-safe counter that child counters share through prefixes.

Every node of a program gets a child of one root counter: the actor's
`increment(steps=1)` adds to the root's `actor_steps`, the learner's to
`learner_steps`. `get_counts()` returns the root's whole table, so every
logged row carries every node's progress.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Protocol

import numpy as np


class CounterLike(Protocol):
    def increment(self, **counts: float) -> dict[str, float]: ...

    def get_counts(self) -> dict[str, float]: ...


class Counter:
    """Counts named quantities, optionally forwarding them to a parent."""

    def __init__(
        self,
        parent: CounterLike | None = None,
        prefix: str = "",
        initial: Mapping[str, float] | None = None,
    ):
        self._parent = parent
        self._prefix = prefix
        self._lock = threading.Lock()
        self._counts: dict[str, float] = dict(initial or {})

    def _key(self, name: str) -> str:
        return f"{self._prefix}_{name}" if self._prefix else name

    def increment(self, **counts: float) -> dict[str, float]:
        """Adds `counts` (with this counter's prefix) and returns all counts."""
        prefixed = {self._key(k): v for k, v in counts.items()}
        if self._parent is not None:
            return self._parent.increment(**prefixed)
        with self._lock:
            for key, value in prefixed.items():
                self._counts[key] = self._counts.get(key, 0) + value
            return dict(self._counts)

    def get_counts(self) -> dict[str, float]:
        """Returns the root counter's counts."""
        if self._parent is not None:
            return self._parent.get_counts()
        with self._lock:
            return dict(self._counts)

    def get(self, name: str, default: float = 0) -> float:
        """Returns one count of this counter (prefix applied)."""
        return self.get_counts().get(self._key(name), default)

    # Checkpointing of the root's totals (agentkit.core.Saveable shape).
    def save(self) -> dict:
        with self._lock:
            return {k: np.asarray(v) for k, v in self._counts.items()}

    def restore(self, state: Mapping) -> None:
        with self._lock:
            self._counts = {k: float(v) for k, v in state.items()}
