"""The run's memory and replay, sampled by the driver: is memory flat, and who waits on whom.

Every `every_s` seconds the driver takes one sample and appends it to
`<logdir>/monitor.csv`:

- `rss_mb`: resident memory of the run's processes on this host, the driver
  and all its descendants (under the threads launcher the one process holds
  every node; under a local Ray cluster it includes Ray's own processes);
- `replay_items`, `replay_max_items`: the replay tables' sizes, summed;
- `insert_wait_fraction`: the share of the time since the previous sample
  that the replay's rate limiter held the actors' inserts (Reverb's table
  worker time "waiting for sampling"). Near 1 the learner holds the actors
  back; the learner's `data_wait_fraction` in learner.csv is the other side.

`summary.json` gets the RSS at the first sample, when the replay first
became full, at the end and its maximum: memory that keeps growing after the
replay is full is a leak.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from typing import Any

from agentkit.loggers.csv_logger import CSVLogger
from components.replay.server import port_in_use
from launch_programs.processes import process_tree_rss_mb


@dataclasses.dataclass
class ReplaySample:
    items: int
    max_items: int
    insert_wait_s: float  # How long the rate limiter has held inserts so far (the busiest table).


def replay_sample(client: Any, timeout_s: int = 1) -> ReplaySample:
    """The tables' sizes and the inserts' total rate-limiter wait, from `server_info`."""
    items = max_items = 0
    wait = 0.0
    for info in client.server_info(timeout=timeout_s).values():
        items += int(info.current_size)
        max_items += int(info.max_size)
        # The table's worker waits "for sampling" while its rate limiter holds the inserts.
        wait = max(wait, info.table_worker_time.waiting_for_sampling_ms / 1000.0)
    return ReplaySample(items, max_items, wait)


@dataclasses.dataclass
class MonitorRow:
    wall_time_s: float
    rss_mb: float | None = None
    replay_items: int | None = None
    replay_max_items: int | None = None
    insert_wait_fraction: float | None = None


class RunMonitor:
    """Samples the run every `every_s` seconds in a thread (and once more at `stop()`).

    `counts()` gives the (actor_steps, learner_steps) each row carries;
    `replay_address` is the replay server's (None or unreachable: no replay
    columns).
    """

    def __init__(self, logdir: str | None, start_time: float, replay_address: str | None,
                 counts=lambda: (0, 0), every_s: float = 10.0):
        self._start = start_time
        self._address = replay_address
        self._counts = counts
        self._every_s = every_s
        self._client = None
        self._last_wait: tuple[float, float] | None = None  # (time, insert wait so far)
        self._logger = CSVLogger(logdir, "monitor") if logdir else None
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name="monitor", daemon=True)
        self._lock = threading.Lock()
        self.rows: list[MonitorRow] = []

    def start(self) -> RunMonitor:
        self.sample()
        self._thread.start()
        return self

    def _replay(self) -> ReplaySample | None:
        if self._address is None:
            return None
        try:
            if self._client is None:
                # Not before the server listens: a refused first call puts gRPC's shared
                # connection to this address in a 1 s backoff, and every client the nodes
                # make then waits it out (the first actor's writer did: 1.2-1.5 s).
                if not port_in_use(int(self._address.rsplit(":", 1)[1])):
                    return None
                import reverb

                self._client = reverb.Client(self._address)
            return replay_sample(self._client)
        except Exception:  # noqa: BLE001 - a replay restarting or gone: no replay columns now.
            return None

    def sample(self) -> MonitorRow:
        now = time.time()
        row = MonitorRow(wall_time_s=round(now - self._start, 3), rss_mb=process_tree_rss_mb())
        replay = self._replay()
        if replay is not None:
            row.replay_items, row.replay_max_items = replay.items, replay.max_items
            if self._last_wait is not None and now > self._last_wait[0]:
                waited = max(0.0, replay.insert_wait_s - self._last_wait[1])
                fraction = waited / (now - self._last_wait[0])
                row.insert_wait_fraction = round(min(1.0, fraction), 4)
            self._last_wait = (now, replay.insert_wait_s)
        with self._lock:
            self.rows.append(row)
        if self._logger is not None:
            actor_steps, learner_steps = self._counts()
            values = {k: v for k, v in dataclasses.asdict(row).items() if v is not None}
            if values.get("rss_mb") is not None:
                values["rss_mb"] = round(values["rss_mb"], 1)
            self._logger.write({"wall_time_s": values.pop("wall_time_s"),
                                "actor_steps": int(actor_steps),
                                "learner_steps": int(learner_steps), **values})
        return row

    @property
    def replay_full_row(self) -> MonitorRow | None:
        """The first sample at which the replay's tables were full, if any."""
        return next((r for r in self.rows if r.replay_max_items
                     and r.replay_items >= r.replay_max_items), None)

    def last(self) -> MonitorRow | None:
        with self._lock:
            return self.rows[-1] if self.rows else None

    def _run(self) -> None:
        while not self._stopped.wait(self._every_s):
            self.sample()

    def stop(self) -> None:
        """Stops the thread after one last sample (the run's end)."""
        self._stopped.set()
        if self._thread.is_alive():
            self._thread.join(timeout=10.0)
        self.sample()
        if self._logger is not None:
            self._logger.close()

    def summary(self) -> dict[str, Any]:
        """RSS at start, when the replay first became full, at the end, and its maximum."""
        rss = [r for r in self.rows if r.rss_mb is not None]
        if not rss:
            return {}
        memory = {"rss_mb_start": round(rss[0].rss_mb, 1), "rss_mb_end": round(rss[-1].rss_mb, 1),
                  "rss_mb_max": round(max(r.rss_mb for r in rss), 1)}
        full = self.replay_full_row
        if full is not None and full.rss_mb is not None:
            memory["rss_mb_replay_full"] = round(full.rss_mb, 1)
            memory["replay_full_at_s"] = full.wall_time_s
        return {"memory": memory}
