"""Checkpointing of any Saveable to a directory, atomically and without pickles.

The state is a flat mapping of names to arrays, written with `np.savez` and
read back with `allow_pickle=False`, so nothing in `--logdir` can run code.
A checkpoint is written to a temporary file and renamed into place, so a
crash mid-write leaves the previous checkpoint intact; a write that fails
(a full disk) removes its temporary file, so failures do not fill the disk.
"""

from __future__ import annotations

import contextlib
import os
import time
import zipfile

import numpy as np

from agentkit import core
from agentkit.files import open_for_writing

# What a damaged .npz raises on np.load or on reading one of its arrays.
_DAMAGED = (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile)


class CheckpointError(ValueError):
    """A checkpoint cannot be read or written; the message names the file and what to do."""


def read_checkpoint(path: str) -> dict[str, np.ndarray]:
    """Every array of the checkpoint at `path`, or CheckpointError naming the file."""
    try:
        with np.load(path, allow_pickle=False) as data:
            return {k: data[k] for k in data.files}
    except _DAMAGED as e:
        raise CheckpointError(
            f"checkpoint {path} is damaged ({type(e).__name__}: {e}); delete it to start that "
            f"part over, or rerun with --fresh") from None


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
        """Writes the checkpoint now; returns its path. CheckpointError if it cannot."""
        state = {k: np.asarray(v) for k, v in self._saveable.save().items()}
        tmp = self.path + ".tmp.npz"
        try:
            with open_for_writing(tmp, "wb") as f:
                np.savez(f, **state)
            os.replace(tmp, self.path)
        except OSError as e:
            with contextlib.suppress(OSError):
                os.remove(tmp)
            raise CheckpointError(f"cannot write checkpoint {self.path}: {e.strerror or e}; "
                                  f"the previous one is kept") from None
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
        """Restores the saveable if a checkpoint exists; returns whether it did.

        A damaged file, or one that does not fit the saveable (another
        network), raises CheckpointError naming the file.
        """
        if not self.exists():
            return False
        state = read_checkpoint(self.path)
        try:
            self._saveable.restore(state)
        except CheckpointError:
            raise
        except (ValueError, KeyError, TypeError) as e:
            raise CheckpointError(
                f"checkpoint {self.path} does not fit this run ({type(e).__name__}: {e}); "
                f"rerun with --fresh or another --logdir") from None
        return True
