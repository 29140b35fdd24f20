"""A CSV logger that never drops a column that appears after the first row."""

from __future__ import annotations

import contextlib
import csv
import fcntl
import io
import os
import threading
from typing import Any

from agentkit.files import open_for_writing
from agentkit.loggers.base import Logger, LoggingData


def _format(value: Any) -> Any:
    if hasattr(value, "item") and getattr(value, "size", 2) == 1:
        value = value.item()
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 2**53:  # Counts exactly: 2500067, not 2.50007e+06.
            return str(int(value))
        return f"{value:.6g}"
    return value


class CSVLogger(Logger):
    """Appends rows to `<directory>/<label>.csv`.

    When a row brings a key that the header lacks, the file is rewritten with
    the wider header (rare: keys settle after the first rows), so no value is
    ever lost. Appending to an existing file keeps its header, so a resumed
    run continues the same file. Writers in several processes (actors under
    the ray launcher) may share one file: each write holds a lock file and
    first picks up a header that another process widened.
    """

    def __init__(self, directory: str, label: str):
        os.makedirs(directory, exist_ok=True)
        self.path = os.path.join(directory, f"{label}.csv")
        self._lock = threading.Lock()
        self._lock_path = os.path.join(directory, f".{label}.csv.lock")
        self._fields: list[str] = []
        with self._file_lock():
            self._open()

    def _open(self) -> None:
        """(Re)opens the file for appending and reads its header."""
        self._fields = []
        cut = False  # The last line lacks its newline: the previous writer died mid-row.
        if os.path.exists(self.path) and os.path.getsize(self.path) > 0:
            with open(self.path, newline="") as f:
                self._fields = next(csv.reader(f), [])
            with open(self.path, "rb") as f:
                f.seek(-1, os.SEEK_END)
                cut = f.read(1) != b"\n"
        self._file = open_for_writing(self.path, "a", newline="")
        if cut:  # Ends the cut row, so the next row starts a line of its own.
            self._file.write("\r\n")
        self._inode = os.fstat(self._file.fileno()).st_ino

    @contextlib.contextmanager
    def _file_lock(self):
        with open_for_writing(self._lock_path, "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def write(self, data: LoggingData) -> None:
        row = {k: _format(v) for k, v in data.items()}
        with self._lock, self._file_lock():
            if self._file.closed:
                return  # Another node sharing this file already closed it at shutdown.
            try:
                replaced = os.stat(self.path).st_ino != self._inode
            except FileNotFoundError:
                replaced = True
            if replaced:  # Another process widened (rewrote) the file.
                self._file.close()
                self._open()
            new = [k for k in row if k not in self._fields]
            if new:
                self._widen(self._fields + new)
            writer = csv.DictWriter(self._file, fieldnames=self._fields, restval="")
            writer.writerow(row)
            self._file.flush()

    def _widen(self, fields: list[str]) -> None:
        self._file.close()
        rows = read_csv(self.path) if self._fields else []
        tmp = self.path + ".tmp"
        with open_for_writing(tmp, "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=fields, restval="")
            writer.writeheader()
            writer.writerows(rows)
        os.replace(tmp, self.path)
        self._fields = fields
        self._file = open_for_writing(self.path, "a", newline="")
        self._inode = os.fstat(self._file.fileno()).st_ino

    @property
    def closed(self) -> bool:
        return self._file.closed

    def close(self) -> None:
        with self._lock:
            self._file.close()


_SHARED: dict[str, CSVLogger] = {}
_SHARED_LOCK = threading.Lock()


def shared_csv_logger(directory: str, label: str) -> CSVLogger:
    """One CSVLogger per file in this process.

    Nodes of the same kind (all actors) write one file; sharing the writer
    keeps their rows whole and the header consistent when it widens.
    """
    path = os.path.abspath(os.path.join(directory, f"{label}.csv"))
    with _SHARED_LOCK:
        logger = _SHARED.get(path)
        if logger is None or logger.closed:
            logger = _SHARED[path] = CSVLogger(directory, label)
        return logger


def read_csv(path: str, damaged: list[int] | None = None) -> list[dict[str, str]]:
    """Reads a CSV written by CSVLogger into a list of rows.

    A row that is cut short or too long (a process killed in the middle of
    writing it, a full disk) is skipped, and so is a last line without its
    newline (it may be cut inside a number); their line numbers are appended
    to `damaged` when given.
    """
    with open(path, newline="") as f:
        text = f.read()
    reader = csv.DictReader(io.StringIO(text))
    parsed = [(row, None in row or None in row.values(), reader.line_num) for row in reader]
    if parsed and not text.endswith("\n"):
        parsed[-1] = (parsed[-1][0], True, parsed[-1][2])
    if damaged is not None:
        damaged.extend(line for _, bad, line in parsed if bad)
    return [row for row, bad, _ in parsed if not bad]
