"""Loggers behind one interface: terminal, CSV, TensorBoard, and fan-out."""

from agentkit.loggers.base import Logger, LoggerGroup, NoOpLogger, TimestampedLogger
from agentkit.loggers.csv_logger import CSVLogger, read_csv
from agentkit.loggers.factory import make_logger
from agentkit.loggers.terminal import TerminalLogger

__all__ = [
    "CSVLogger",
    "Logger",
    "LoggerGroup",
    "NoOpLogger",
    "TerminalLogger",
    "TimestampedLogger",
    "make_logger",
    "read_csv",
]
