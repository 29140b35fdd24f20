"""The driver's monitor: RSS of the run's processes, the replay's size, the actors' wait on its
rate limiter, and the memory figures of summary.json."""

from __future__ import annotations

import os
import threading
import time

import numpy as np
import reverb

from agentkit.loggers import read_csv
from components.replay.server import NoCheckpointer
from launch_programs.monitor import RunMonitor


def _insert_until_blocked(client: reverb.Client, count: int, stop: threading.Event) -> None:
    writer = client.trajectory_writer(num_keep_alive_refs=1)
    try:
        for i in range(count):
            writer.append({"x": np.float32(i)})
            writer.create_item("table", 1.0, {"x": writer.history["x"][-1]})
            try:
                writer.flush(timeout_ms=200)
            except reverb.DeadlineExceededError:
                stop.wait()  # Held by the rate limiter until the test is done.
                return
    finally:
        writer.close()  # Drops what the limiter holds (a flush would wait for ever).


def test_replay_size_insert_wait_and_the_memory_summary(reverb_server_factory, tmp_path):
    # Inserts block once 20 items wait unsampled (nothing samples): the actor waits from then.
    limiter = reverb.rate_limiters.SampleToInsertRatio(1.0, min_size_to_sample=10,
                                                       error_buffer=10.0)
    server, client = reverb_server_factory([reverb.Table(
        "table", reverb.selectors.Uniform(), reverb.selectors.Fifo(), max_size=20,
        rate_limiter=limiter)])
    counts = iter([(0, 0), (7, 3), (9, 4), (11, 5), (12, 6)])
    monitor = RunMonitor(str(tmp_path), time.time(), f"localhost:{server.port}",
                         counts=lambda: next(counts), every_s=1000.0)
    first = monitor.sample()
    assert first.replay_items == 0 and first.replay_max_items == 20
    assert first.insert_wait_fraction is None  # Needs an interval.
    stop = threading.Event()
    writer = threading.Thread(target=_insert_until_blocked, args=(client, 100, stop))
    writer.start()
    try:
        time.sleep(1.5)
        blocked = monitor.sample()
        time.sleep(1.5)
        still = monitor.sample()
    finally:
        stop.set()
        writer.join(timeout=10)
    assert blocked.replay_items == still.replay_items == 20
    assert still.insert_wait_fraction > 0.8, still  # Waited all of the second interval.
    assert monitor.replay_full_row is blocked
    rows = read_csv(os.path.join(tmp_path, "monitor.csv"))
    assert [int(r["actor_steps"]) for r in rows] == [0, 7, 9]
    assert {"wall_time_s", "learner_steps", "rss_mb", "replay_items",
            "insert_wait_fraction"} <= set(rows[-1])
    memory = monitor.summary()["memory"]
    assert memory["rss_mb_start"] == round(first.rss_mb, 1)
    assert memory["rss_mb_replay_full"] == round(blocked.rss_mb, 1)
    assert memory["rss_mb_end"] == round(still.rss_mb, 1)
    assert memory["rss_mb_max"] >= max(memory["rss_mb_start"], memory["rss_mb_end"])


def test_no_replay_means_no_replay_columns(tmp_path):
    monitor = RunMonitor(str(tmp_path), time.time(), None)
    row = monitor.sample()
    assert row.replay_items is None and row.insert_wait_fraction is None
    assert row.rss_mb > 0
    assert "replay_full_at_s" not in monitor.summary()["memory"]


def test_a_monitor_started_before_the_replay_does_not_delay_its_clients(tmp_path):
    """The command line starts the monitor before the launcher builds the replay. A refused
    first call would put gRPC's shared connection to the address in a 1 s backoff, and the
    nodes' first clients would wait it out (the first actor's writer did: 1.2-1.5 s)."""
    from components.replay.server import pick_free_port

    port = pick_free_port()
    monitor = RunMonitor(str(tmp_path), time.time(), f"localhost:{port}")
    early = monitor.sample()  # Nothing listens yet: no replay columns, and no connection.
    assert early.replay_items is None
    table = reverb.Table("t", reverb.selectors.Uniform(), reverb.selectors.Fifo(), 10,
                         reverb.rate_limiters.MinSize(1))
    server = reverb.Server([table], port=port, checkpointer=NoCheckpointer())
    try:
        started = time.monotonic()
        reverb.Client(f"localhost:{port}").server_info(timeout=5)
        assert time.monotonic() - started < 0.5
        assert monitor.sample().replay_max_items == 10  # Once it listens, the monitor reads it.
    finally:
        server.stop()
