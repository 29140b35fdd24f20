"""Keeps an actor's copy of the learner's weights fresh without blocking acting.

Every `update_period` calls of `update()`, a background thread fetches the
named variables from the source; a later `update()` copies the arrived values
into the local variables. Acting never waits on the fetch.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np
import tensorflow as tf

from agentkit import core


class VariableClient:
    """Pulls `names` from `source` into the local `variables`."""

    def __init__(
        self,
        source: core.VariableSource,
        variables: dict[str, Sequence[tf.Variable]],
        update_period: int = 1,
    ):
        if update_period < 1:
            raise ValueError(f"update_period must be >= 1, got {update_period}")
        self._source = source
        self._names = list(variables)
        self._variables = [list(variables[name]) for name in self._names]
        self._update_period = update_period
        self._calls = 0
        self._lock = threading.Lock()
        self._arrived: list[list[np.ndarray]] | None = None
        self._fetching = False
        self._error: BaseException | None = None
        self.num_updates = 0  # How many times new values were copied in.

    def update(self, wait: bool = False) -> None:
        """Copies arrived values; starts a fetch every `update_period` calls."""
        if wait:
            self.update_and_wait()
            return
        self._calls += 1
        self._copy_arrived()
        if self._calls >= self._update_period and not self._fetching:
            self._calls = 0
            self._fetching = True
            threading.Thread(target=self._fetch, daemon=True, name="variable-fetch").start()

    def update_and_wait(self) -> None:
        """Fetches and copies the variables now, blocking."""
        self._assign(self._source.get_variables(self._names))

    def _fetch(self) -> None:
        try:
            values = self._source.get_variables(self._names)
            with self._lock:
                self._arrived = values
        except BaseException as e:  # Reported on the acting thread.
            with self._lock:
                self._error = e
        finally:
            self._fetching = False

    def _copy_arrived(self) -> None:
        with self._lock:
            values, self._arrived = self._arrived, None
            error, self._error = self._error, None
        if error is not None:
            raise RuntimeError(f"fetching variables failed: {error}") from error
        if values is not None:
            self._assign(values)

    def _assign(self, values: list[list[np.ndarray]]) -> None:
        for local, new in zip(self._variables, values):
            if len(local) != len(new):
                raise ValueError(f"variable source sent {len(new)} arrays, expected {len(local)}")
            for variable, value in zip(local, new):
                variable.assign(value)
        self.num_updates += 1


def make_variable_client(source: core.VariableSource | None,
                         variables: dict[str, Sequence[tf.Variable]],
                         update_period: int = 1) -> VariableClient | None:
    """A client of `source` for `variables`, or None without a source (an actor whose
    networks another actor of its node updates)."""
    if source is None:
        return None
    return VariableClient(source, variables, update_period=update_period)
