"""The logger interface and loggers that wrap other loggers."""

from __future__ import annotations

import abc
import time
from collections.abc import Mapping, Sequence
from typing import Any

LoggingData = Mapping[str, Any]


class Logger(abc.ABC):
    """Writes rows of named scalars somewhere."""

    @abc.abstractmethod
    def write(self, data: LoggingData) -> None:
        """Writes one row."""

    def close(self) -> None:
        """Flushes and releases resources."""


class NoOpLogger(Logger):
    def write(self, data: LoggingData) -> None:
        del data


class LoggerGroup(Logger):
    """Writes every row to each of several loggers."""

    def __init__(self, loggers: Sequence[Logger]):
        self._loggers = list(loggers)

    def write(self, data: LoggingData) -> None:
        for logger in self._loggers:
            logger.write(data)

    def close(self) -> None:
        for logger in self._loggers:
            logger.close()


class TimestampedLogger(Logger):
    """Adds `wall_time_s`, the seconds since the program started, to every row."""

    def __init__(self, logger: Logger, start_time: float | None = None):
        self._logger = logger
        self._start_time = time.time() if start_time is None else start_time

    def write(self, data: LoggingData) -> None:
        row = {"wall_time_s": round(time.time() - self._start_time, 3)}
        row.update(data)
        self._logger.write(row)

    def close(self) -> None:
        self._logger.close()
