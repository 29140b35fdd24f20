"""Keeps an actor's copy of the learner's weights fresh.

`VariableClient`: every `update_period` calls of `update()`, a background
thread fetches the named variables from the source; a later `update()` copies
the arrived values into the local variables. Acting never waits on the fetch.

`RoundVariableClient` (on-policy agents in rounds, PPO): after every round
of `round_length` calls, `update()` waits until the learner serves weights of
another version (but for the first `max_lag` rounds, which let acting run
ahead of learning), so that every step of a round acts with the same weights.
"""

from __future__ import annotations

import threading
import time
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
        self._interrupted = threading.Event()
        self.num_updates = 0  # How many times new values were copied in.

    def interrupt(self) -> None:
        """Ends a wait in `update` (this client never waits: nothing to end)."""
        self._interrupted.set()

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


class RoundVariableClient(VariableClient):
    """Waits at the end of every round of `round_length` steps for the learner's next weights.

    The learner serves `version_name` (its update count) beside the weights,
    and the actor's copy of it is `variables[version_name][0]`. At a round's
    end `update()` polls the version alone every `poll_s` until it differs
    from the one the round acted with (differs, not exceeds: a learner that
    restarted from an older checkpoint must release its actors too), then
    fetches weights and version together. With `max_lag=0` every round acts
    with the weights learned from the one before (zero policy lag). With
    `max_lag=L` the first L rounds start without waiting (with the newest
    weights served, if any): the actor stays L rounds ahead of the learner,
    acting while it learns, and every later round still needs a version newer
    than the last round's, so it never gets further ahead. (One actor: a
    round's data is at most L versions older than the weights that learn
    from it. Several actors share the learner's batches, which take the
    first rollouts queued, so a fast actor's can reach L + 1.) `interrupt()`
    ends the wait (a stopping program). `wait_s` sums the time spent waiting.
    """

    def __init__(self, source: core.VariableSource, variables: dict[str, Sequence[tf.Variable]],
                 round_length: int, version_name: str = "policy_version", poll_s: float = 0.001,
                 max_lag: int = 0):
        if round_length < 1:
            raise ValueError(f"round_length must be >= 1, got {round_length}")
        if max_lag < 0:
            raise ValueError(f"max_lag must be >= 0, got {max_lag}")
        if version_name not in variables:
            raise ValueError(f"the variables have no '{version_name}' to wait on")
        super().__init__(source, variables)
        self._round_length = round_length
        self._version_name = version_name
        self._version = variables[version_name][0]
        self._poll_s = poll_s
        self._steps = 0
        self._rounds_ahead = max_lag  # Rounds still free to start without a new version.
        self.wait_s = 0.0

    def update(self, wait: bool = False) -> None:
        if wait:  # Now, whatever the version: a (re)started actor's first weights.
            self.update_and_wait()
            return
        self._steps += 1
        if self._steps < self._round_length:
            return
        self._steps = 0
        start = time.monotonic()
        acted = int(self._version.numpy())
        while not self._interrupted.is_set():
            [[served]] = self._source.get_variables([self._version_name])
            if int(served) != acted:  # Newer (or a restarted learner's): take it.
                self.update_and_wait()
                break
            if self._rounds_ahead > 0:  # One of the first max_lag rounds: go on with these.
                self._rounds_ahead -= 1
                break
            self._interrupted.wait(self._poll_s)
        self.wait_s += time.monotonic() - start


def make_variable_client(source: core.VariableSource | None,
                         variables: dict[str, Sequence[tf.Variable]],
                         update_period: int = 1) -> VariableClient | None:
    """A client of `source` for `variables`, or None without a source (an actor whose
    networks another actor of its node updates)."""
    if source is None:
        return None
    return VariableClient(source, variables, update_period=update_period)
