"""One progress line for a whole run, from the CSVs its nodes write.

Every node writes its rows to `<logdir>/<kind>.csv` whatever the launcher (in
this process or in Ray worker processes), so the driver reads the new rows
of actor.csv, learner.csv and evaluator.csv and prints where the run stands:

    [progress] 150,031/1,000,000 steps (15.0%) | actors 705/s, held by replay 62% |
    learner 180/s, waits for data 6% | eval 8.00 (10 ep) at 150,031 | RSS 2.1 GB |
    20 min left

(one line). On a terminal the line is rewritten in place; into a file each
report is a line of its own. The two waits say which side is the
bottleneck: the learner waiting for data near 100%, acting; the actors held
by the replay's rate limiter, learning. The replay's figures and the memory
come from the driver's monitor (launch_programs.monitor, monitor.csv). The
per-node rows stay in the CSVs.
"""

from __future__ import annotations

import collections
import csv
import dataclasses
import io
import os
import sys
import threading
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from launch_programs.monitor import MonitorRow, RunMonitor

RATE_S = 30.0  # The actors' steps/s is measured over about this many seconds.


class CsvTail:
    """The rows appended to a CSV since the last call (complete lines only).

    A CSVLogger rewrites its file with a wider header when a row brings a new
    key: then the header differs, and the whole file is read again.
    """

    def __init__(self, path: str):
        self._path = path
        self._offset = 0
        self._header_line: bytes | None = None
        self._header: list[str] = []

    def new_rows(self) -> list[dict[str, str]]:
        try:
            with open(self._path, "rb") as f:
                header_line = f.readline()
                if not header_line.endswith(b"\n"):
                    return []
                if header_line != self._header_line:  # New, or rewritten wider.
                    self._header_line = header_line
                    self._header = next(csv.reader([header_line.decode(errors="replace")]))
                    self._offset = len(header_line)
                f.seek(self._offset)
                data = f.read()
        except FileNotFoundError:
            return []
        end = data.rfind(b"\n") + 1  # A line still being written waits for the next call.
        if end == 0:
            return []
        self._offset += end
        rows = []
        for values in csv.reader(io.StringIO(data[:end].decode(errors="replace"))):
            if len(values) == len(self._header):  # A damaged row is skipped.
                rows.append(dict(zip(self._header, values)))
        return rows


def _number(row: dict[str, str], key: str) -> float | None:
    try:
        return float(row[key])
    except (KeyError, TypeError, ValueError):
        return None


@dataclasses.dataclass
class Progress:
    """Where a run stands, from its CSVs."""

    wall_time_s: float = 0.0
    actor_steps: float = 0.0
    learner_steps: float = 0.0
    actor_steps_per_s: float | None = None
    learner_steps_per_s: float | None = None
    data_wait_fraction: float | None = None
    eval_actor_steps: float | None = None
    eval_returns: list[float] = dataclasses.field(default_factory=list)


class ProgressReader:
    """Follows a logdir's CSVs; `read()` gives the run's progress so far. Threads may share
    one reader (the progress line and the monitor): each new row is read once."""

    def __init__(self, logdir: str):
        self.logdir = logdir
        self._lock = threading.Lock()
        self._tails = {kind: CsvTail(os.path.join(logdir, f"{kind}.csv"))
                       for kind in ("actor", "learner", "evaluator")}
        self._progress = Progress()
        # (wall_time_s, actor_steps) at each read: the actors' rate is over the last RATE_S.
        self._points: collections.deque = collections.deque()

    def read(self) -> Progress:
        with self._lock:
            return self._read()

    def _read(self) -> Progress:
        p = self._progress
        for kind, tail in self._tails.items():
            for row in tail.new_rows():
                wall, steps = _number(row, "wall_time_s"), _number(row, "actor_steps")
                if wall is not None and steps is not None and steps >= p.actor_steps:
                    p.wall_time_s, p.actor_steps = max(p.wall_time_s, wall), steps
                learned = _number(row, "learner_steps")
                if learned is not None:
                    p.learner_steps = max(p.learner_steps, learned)
                if kind == "learner":
                    for key in ("learner_steps_per_s", "data_wait_fraction"):
                        value = _number(row, key)
                        if value is not None:
                            setattr(p, key, value)
                elif kind == "evaluator" and steps is not None:
                    value = _number(row, "episode_return")
                    if value is None:
                        continue
                    if steps != p.eval_actor_steps:  # A new evaluation round.
                        p.eval_actor_steps, p.eval_returns = steps, []
                    p.eval_returns.append(value)
        if not self._points or p.wall_time_s > self._points[-1][0]:
            self._points.append((p.wall_time_s, p.actor_steps))
        while len(self._points) > 2 and self._points[1][0] <= p.wall_time_s - RATE_S:
            self._points.popleft()
        (wall0, steps0), (wall1, steps1) = self._points[0], self._points[-1]
        if wall1 > wall0:
            p.actor_steps_per_s = (steps1 - steps0) / (wall1 - wall0)
        return p


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def format_progress(p: Progress, budget: int | None, monitor: MonitorRow | None = None) -> str:
    """The one line: steps of the budget, rates, the learner's wait for data and the actors'
    wait on the replay's rate limiter, the last evaluation, memory, the time left at the
    current rate."""
    parts = [f"{int(p.actor_steps):,}/{budget:,} steps ({100 * p.actor_steps / budget:.1f}%)"
             if budget else f"{int(p.actor_steps):,} steps"]
    if p.actor_steps_per_s is not None:
        actors = f"actors {p.actor_steps_per_s:,.0f}/s"
        if monitor is not None and monitor.insert_wait_fraction is not None:
            actors += f", held by replay {100 * monitor.insert_wait_fraction:.0f}%"
        parts.append(actors)
    if p.learner_steps_per_s is not None:
        learner = f"learner {p.learner_steps_per_s:,.0f}/s"
        if p.data_wait_fraction is not None:
            learner += f", waits for data {100 * p.data_wait_fraction:.0f}%"
        parts.append(learner)
    if p.eval_returns:
        mean = sum(p.eval_returns) / len(p.eval_returns)
        parts.append(f"eval {mean:.2f} ({len(p.eval_returns)} ep) at "
                     f"{int(p.eval_actor_steps):,}")
    if monitor is not None and monitor.rss_mb is not None:
        parts.append(f"RSS {monitor.rss_mb / 1024:.1f} GB")
    if budget and p.actor_steps_per_s and p.actor_steps < budget:
        parts.append(f"{_duration((budget - p.actor_steps) / p.actor_steps_per_s)} left")
    return "[progress] " + " | ".join(parts)


class ProgressReporter:
    """Prints the progress line every `every_s` seconds in a thread, until `stop()`."""

    def __init__(self, logdir: str, budget: int | None, every_s: float,
                 stream: TextIO | None = None, monitor: RunMonitor | None = None,
                 reader: ProgressReader | None = None):
        self._reader = reader or ProgressReader(logdir)
        self._monitor = monitor  # Its last sample joins the line.
        self._budget = budget
        self._every_s = every_s
        self._stream = stream or sys.stdout
        self._in_place = bool(getattr(self._stream, "isatty", lambda: False)())
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name="progress", daemon=True)
        self._width = 0
        self.lines = 0

    def start(self) -> ProgressReporter:
        self._thread.start()
        return self

    def report(self) -> None:
        line = format_progress(self._reader.read(), self._budget,
                               self._monitor.last() if self._monitor is not None else None)
        if self._in_place:  # Rewrites the line: pads over a longer one before it.
            self._stream.write("\r" + line.ljust(self._width))
            self._width = max(self._width, len(line))
        else:
            self._stream.write(line + "\n")
        self._stream.flush()
        self.lines += 1

    def _run(self) -> None:
        while not self._stopped.wait(self._every_s):
            self.report()

    def stop(self) -> None:
        """Stops the thread and leaves the last line on screen."""
        self._stopped.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5.0)
        if self._in_place and self.lines:
            self._stream.write("\n")
            self._stream.flush()
