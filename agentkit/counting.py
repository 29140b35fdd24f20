"""A thread-safe counter that child counters share through prefixes.

Every node of a program gets a child of one root counter: the actor's
`increment(steps=1)` adds to the root's `actor_steps`, the learner's to
`learner_steps`. `get_counts()` returns the root's whole table, so every
logged row carries every node's progress.
"""

from __future__ import annotations

import threading
import time
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
        sync_every_s: float = 0.0,
    ):
        """With `sync_every_s > 0`, a child sends its increments to the parent
        at most that often (the parent may be in another process: one call per
        step would cost more than the step); `flush()` sends what is pending."""
        self._parent = parent
        self._prefix = prefix
        self._lock = threading.Lock()
        self._counts: dict[str, float] = dict(initial or {})
        self._sync_every_s = sync_every_s
        self._pending: dict[str, float] = {}
        self._last_sync = 0.0
        self._parent_counts: dict[str, float] = {}

    def _key(self, name: str) -> str:
        return f"{self._prefix}_{name}" if self._prefix else name

    def increment(self, **counts: float) -> dict[str, float]:
        """Adds `counts` (with this counter's prefix) and returns all counts."""
        prefixed = {self._key(k): v for k, v in counts.items()}
        if self._parent is not None:
            if self._sync_every_s <= 0:
                return self._parent.increment(**prefixed)
            with self._lock:
                for key, value in prefixed.items():
                    self._pending[key] = self._pending.get(key, 0) + value
                if time.monotonic() - self._last_sync < self._sync_every_s:
                    merged = dict(self._parent_counts)
                    for key, value in self._pending.items():
                        merged[key] = merged.get(key, 0) + value
                    return merged
            return self.flush()
        with self._lock:
            for key, value in prefixed.items():
                self._counts[key] = self._counts.get(key, 0) + value
            return dict(self._counts)

    def flush(self) -> dict[str, float]:
        """Sends pending increments to the parent; returns the parent's counts."""
        if self._parent is None:
            return self.get_counts()
        with self._lock:
            pending, self._pending = self._pending, {}
            self._last_sync = time.monotonic()
        counts = self._parent.increment(**pending)
        with self._lock:
            self._parent_counts = dict(counts)
        return counts

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
