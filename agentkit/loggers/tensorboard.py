"""A TensorBoard logger: one event directory per label."""

from __future__ import annotations

import numbers
import os

from agentkit.loggers.base import Logger, LoggingData


class TensorBoardLogger(Logger):
    """Writes every numeric value as a scalar, against `step_key` if present."""

    def __init__(self, directory: str, label: str, step_key: str | None = None):
        import tensorflow as tf  # Imported here: only this logger needs TF.

        self._tf = tf
        self._writer = tf.summary.create_file_writer(os.path.join(directory, "tb", label))
        self._step_key = step_key
        self._row = 0

    def write(self, data: LoggingData) -> None:
        step = int(data.get(self._step_key, self._row)) if self._step_key else self._row
        self._row += 1
        with self._writer.as_default():
            for key, value in data.items():
                if isinstance(value, numbers.Number) or getattr(value, "size", 0) == 1:
                    self._tf.summary.scalar(key, float(value), step=step)

    def close(self) -> None:
        self._writer.flush()
        self._writer.close()
