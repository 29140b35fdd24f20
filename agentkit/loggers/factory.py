"""The default logger of a node: terminal + CSV + TensorBoard, timestamped."""

from __future__ import annotations

from agentkit.loggers.base import Logger, LoggerGroup, TimestampedLogger
from agentkit.loggers.csv_logger import shared_csv_logger
from agentkit.loggers.terminal import TerminalLogger


def make_logger(
    label: str,
    logdir: str | None = None,
    start_time: float | None = None,
    print_every_s: float = 5.0,
    terminal_keys: list[str] | None = None,
    step_key: str | None = None,
    tensorboard: bool = True,
) -> Logger:
    """Returns a logger writing `<logdir>/<label>.csv` and TensorBoard events.

    With `print_every_s <= 0` nothing is printed; with no `logdir` nothing is
    written to disk.
    """
    loggers: list[Logger] = []
    if print_every_s > 0:
        loggers.append(TerminalLogger(label, print_every_s, keys=terminal_keys))
    if logdir:
        loggers.append(shared_csv_logger(logdir, label))
        if tensorboard:
            from agentkit.loggers.tensorboard import TensorBoardLogger

            loggers.append(TensorBoardLogger(logdir, label, step_key=step_key))
    return TimestampedLogger(LoggerGroup(loggers), start_time=start_time)
