"""The program's counter node: the run's step totals, checkpointed so that no life loses them.

The totals are the step budget (`--max_actor_steps` covers the whole run)
and what summary.json reports, so they are saved every `save_every_s` (a
few floats: cheap) and on `checkpoint()`, which the command line calls at
every stop. A counter node that Ray rebuilds after its process died, and a
rerun in the same logdir, both start from the last save, not from zero.
The saved state also holds the run's wall time, so that a life that was
killed without writing anything else still adds its time to the run's.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Mapping

import numpy as np

from agentkit.checkpointing import Checkpointer, CheckpointError, read_checkpoint
from agentkit.counting import Counter

CHECKPOINT_NAME = "counter"
WALL_TIME_KEY = "__wall_time_s"  # Saved beside the counts; never a count itself.


def checkpoint_path(logdir: str) -> str:
    return os.path.join(logdir, "checkpoints", f"{CHECKPOINT_NAME}.npz")


MAX_COUNT = 2.0**53  # Counts are whole numbers: a float holds them exactly below this.


def counts_of_state(state: Mapping, path: str) -> dict[str, float]:
    """The counts (and the wall time) a counter checkpoint holds, each a real number >= 0,
    finite and below MAX_COUNT in a single value; CheckpointError naming the file and the
    entry otherwise (a hand-edited or foreign file: a count that went back or to nan would
    skew every later figure)."""
    counts = {}
    for name, value in state.items():
        value = np.asarray(value)
        if value.shape != () or value.dtype.kind not in "biuf":
            problem = f"a {value.dtype} array of shape {value.shape}, not one real number"
        elif not 0 <= float(value) < MAX_COUNT:
            problem = f"{float(value)!r}, not a count in [0, 2**53)"
        else:
            counts[name] = float(value)
            continue
        raise CheckpointError(f"checkpoint {path} does not fit this run ({name!r} is "
                              f"{problem}); put the run's own file back, or rerun with --fresh")
    return counts


def read_saved_counts(logdir: str) -> tuple[dict[str, float], float] | None:
    """(counts, wall time of the run in seconds) from a logdir's counter checkpoint, if any."""
    path = checkpoint_path(logdir)
    if not os.path.exists(path):
        return None
    state = counts_of_state(read_checkpoint(path), path)
    wall = state.pop(WALL_TIME_KEY, 0.0)
    return state, wall


class CounterNode:
    """A root Counter that restores itself from, and saves itself to, `<logdir>/checkpoints`."""

    def __init__(self, *, initial: Mapping[str, float] | None = None, logdir: str | None = None,
                 start_time: float | None = None, save_every_s: float = 2.0):
        """`start_time` is time.time() at the start of the run's first life (as the CSVs'
        wall_time_s counts from it); `initial` the counts the program starts from."""
        counts = {"actor_steps": 0.0, "learner_steps": 0.0}
        counts.update(initial or {})
        self._start_time = time.time() if start_time is None else start_time
        self._counter = Counter(initial=counts)
        self._save_lock = threading.Lock()
        self._checkpointer = None
        if logdir:
            self._checkpointer = Checkpointer(self, os.path.dirname(checkpoint_path(logdir)),
                                              CHECKPOINT_NAME, interval_s=save_every_s)
            saved = read_saved_counts(logdir)
            # A rebuilt node finds a newer save than the counts it was built with.
            if saved is not None and saved[0].get("actor_steps", 0) >= counts["actor_steps"]:
                self._counter.restore(saved[0])

    def increment(self, **counts: float) -> dict[str, float]:
        result = self._counter.increment(**counts)
        if self._checkpointer is not None and self._save_lock.acquire(blocking=False):
            try:  # One saver at a time; a concurrent caller skips (the next call saves).
                self._checkpointer.maybe_save()
            finally:
                self._save_lock.release()
        return result

    def get_counts(self) -> dict[str, float]:
        return self._counter.get_counts()

    def checkpoint(self) -> dict[str, float]:
        """Saves the totals now (at every stop); returns them."""
        if self._checkpointer is not None:
            with self._save_lock:
                self._checkpointer.save()
        return self.get_counts()

    # agentkit.core.Saveable, for the Checkpointer.
    def save(self) -> dict[str, np.ndarray]:
        state = {k: np.asarray(v) for k, v in self._counter.save().items()}
        state[WALL_TIME_KEY] = np.asarray(time.time() - self._start_time)
        return state

    def restore(self, state: Mapping) -> None:
        path = self._checkpointer.path if self._checkpointer else "the counter checkpoint"
        counts = counts_of_state(state, path)
        self._counter.restore({k: v for k, v in counts.items() if k != WALL_TIME_KEY})
