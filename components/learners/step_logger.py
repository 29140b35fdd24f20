"""Counts a learner's steps and writes its metric rows, with steps/s, at most once a second."""

from __future__ import annotations

import time
from collections.abc import Mapping

import tensorflow as tf

from agentkit.counting import Counter
from agentkit.loggers import Logger, NoOpLogger


class StepLogger:
    """Counts learner steps and writes a row of metrics at most every `log_every_s`."""

    def __init__(self, counter: Counter | None, logger: Logger | None, log_every_s: float = 1.0):
        self._counter = counter or Counter(prefix="learner")
        self._logger = logger or NoOpLogger()
        self._log_every_s = log_every_s
        self._steps_since_log = 0
        self._time_of_log = time.time()

    def record(self, metrics: Mapping[str, tf.Tensor], extra: Mapping | None = None,
               steps: int = 1) -> None:
        """Counts `steps` learner steps (SGD steps: a call may make several)."""
        counts = self._counter.increment(steps=steps)
        self._steps_since_log += steps
        now = time.time()
        if now - self._time_of_log >= self._log_every_s:
            row = dict(counts)
            row.update({k: float(v) for k, v in metrics.items()})
            row["learner_steps_per_s"] = self._steps_since_log / (now - self._time_of_log)
            row.update(extra or {})
            self._logger.write(row)
            self._steps_since_log = 0
            self._time_of_log = now
