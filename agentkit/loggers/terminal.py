"""A terminal logger that prints one compact progress line at a bounded rate."""

from __future__ import annotations

import sys
import time
from typing import Any, TextIO

from agentkit.loggers.base import Logger, LoggingData


def _short(value: Any) -> str:
    if hasattr(value, "item") and getattr(value, "size", 2) == 1:
        value = value.item()
    if isinstance(value, float):
        if value != 0 and (abs(value) >= 1e5 or abs(value) < 1e-3):
            return f"{value:.3g}"
        return f"{value:.3f}".rstrip("0").rstrip(".")
    return str(value)


class TerminalLogger(Logger):
    """Prints `[label] key=value ...` at most once every `print_every_s` seconds."""

    def __init__(
        self,
        label: str,
        print_every_s: float = 5.0,
        keys: list[str] | None = None,
        stream: TextIO | None = None,
    ):
        self._label = label
        self._print_every_s = print_every_s
        self._keys = keys
        self._stream = stream or sys.stdout
        self._last = float("-inf")

    def write(self, data: LoggingData) -> None:
        now = time.time()
        if now - self._last < self._print_every_s:
            return
        self._last = now
        keys = self._keys or list(data)
        parts = [f"{k}={_short(data[k])}" for k in keys if k in data]
        print(f"[{self._label}] " + " ".join(parts), file=self._stream, flush=True)
