"""Checkpointing of any Saveable to a directory, atomically and without pickles.

The state is a flat mapping of names to arrays, written with `np.savez` and
read back with `allow_pickle=False`, so nothing in `--logdir` can run code.
A checkpoint is written to a temporary file and renamed into place, so a
crash mid-write leaves the previous checkpoint intact.
"""

from __future__ import annotations

import os
import time

import numpy as np

from agentkit import core


class Checkpointer:
    """Saves one Saveable to `<directory>/<name>.npz`, at most every `interval_s`."""

    def __init__(
        self,
        saveable: core.Saveable,
        directory: str,
        name: str,
        interval_s: float = 300.0,
    ):
        self._saveable = saveable
        self._interval_s = interval_s
        os.makedirs(directory, exist_ok=True)
        self.path = os.path.join(directory, f"{name}.npz")
        self._last_save = time.time()

    def save(self) -> str:
        """Writes the checkpoint now; returns its path."""
        state = {k: np.asarray(v) for k, v in self._saveable.save().items()}
        tmp = self.path + ".tmp.npz"
        np.savez(tmp, **state)
        os.replace(tmp, self.path)
        self._last_save = time.time()
        return self.path

    def maybe_save(self) -> bool:
        """Saves if `interval_s` has passed since the last save."""
        if time.time() - self._last_save >= self._interval_s:
            self.save()
            return True
        return False

    def exists(self) -> bool:
        return os.path.exists(self.path)

    def restore(self) -> bool:
        """Restores the saveable if a checkpoint exists; returns whether it did."""
        if not self.exists():
            return False
        with np.load(self.path, allow_pickle=False) as data:
            state = {k: data[k] for k in data.files}
        self._saveable.restore(state)
        return True
