"""The memory left to the run, watched while it runs: when what this process could still
allocate (`memory.available_bytes`: the machine's MemAvailable, or a memory cgroup's
headroom where one caps the run lower) falls below a floor, the run stops as Ctrl-C stops
it (adders flushed, the learner and the counter saved, summary.json written) and says why
in one line. Without it the kernel's OOM killer ends the run with kill -9 (these machines
have no swap), losing what the learner did since its last checkpoint and the summary.

The check before launch (`memory.check_memory`) refuses flags whose lower bound cannot fit;
this watch catches what grows past it while the run runs (a replay of items that compress
worse than the bound assumes, a leak). A look reads /proc/meminfo and the cgroup's files
(about 0.2 ms here), so it looks four times a second. Only this host is watched: on a
cluster the other hosts' nodes are not.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from launch_programs.memory import available_bytes
from launch_programs.processes import process_tree_rss_mb

MB = 1e6
# Room for a burst between two looks and for the stop itself: an evaluation round of DQN on
# Pong (10 games made at once) grew a run by 130 MB in 0.4 s, and with a floor of 60 MB
# (5% of a 1.2 GB cgroup) the OOM killer came first (bench/oom_run.py).
DEFAULT_FLOOR_MB = 1024.0  # On a machine of 10 GB and more.
DEFAULT_FLOOR_FRACTION = 0.10  # Of all the run may use, on a smaller one ...
MIN_DEFAULT_FLOOR_MB = 256.0  # ... but never less.


def floor_bytes(flag_mb: float | None, total: int | None) -> int:
    """The floor in bytes: the flag's (0: never stop), or by default DEFAULT_FLOOR_FRACTION
    of `total`, all the run may use (`memory.total_bytes`: MemTotal, or a memory cgroup's
    lower limit), within MIN_DEFAULT_FLOOR_MB and DEFAULT_FLOOR_MB."""
    if flag_mb is not None:
        return int(flag_mb * MB)
    if total is None:
        return 0
    return int(min(DEFAULT_FLOOR_MB * MB,
                   max(MIN_DEFAULT_FLOOR_MB * MB, DEFAULT_FLOOR_FRACTION * total)))


def low_memory_message(available: int, floor: int, run_mb: float | None) -> str:
    held = "" if run_mb is None else f", this run's processes holding {run_mb:,.0f} MB"
    return (f"--min_free_memory_mb: the memory this run can still use fell to "
            f"{available / MB:,.0f} MB, below the floor of {floor / MB:,.0f} MB{held}; "
            f"stopped it before the kernel's OOM killer would (checkpoints saved; the same "
            f"command resumes; a smaller --max_replay_size, --batch_size or fewer environments "
            f"need less)")


class MemoryWatch:
    """Calls `on_low(message)` once, from its thread, when `read()` falls below `floor`."""

    def __init__(self, floor: int, on_low: Callable[[str], None], every_s: float = 0.25,
                 read: Callable[[], int | None] = available_bytes,
                 run_mb: Callable[[], float | None] = process_tree_rss_mb):
        self.floor = floor
        self._on_low = on_low
        self._every_s = every_s
        self._read = read
        self._run_mb = run_mb
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="memory-watch", daemon=True)
        self.fired: str | None = None  # The message, once it fired.

    def start(self) -> MemoryWatch:
        if self.floor > 0:
            self._thread.start()
        return self

    def check(self) -> bool:
        """One look; True when it fired."""
        available = self._read()
        if available is None or available >= self.floor:
            return False
        self.fired = low_memory_message(available, self.floor, self._run_mb())
        self._on_low(self.fired)
        return True

    def _watch(self) -> None:
        while not self._stopped.wait(self._every_s):
            if self.check():
                return

    def stop(self) -> None:
        self._stopped.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5.0)
