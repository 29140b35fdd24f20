"""The memory watch: a run stops cleanly, in one line, when the memory left falls below the
floor (instead of the kernel's OOM killer ending it with nothing saved)."""

from __future__ import annotations

import json
import os
import threading
import time

import pytest

from launch_programs import memory_watch
from launch_programs.memory_watch import MemoryWatch, floor_bytes
from launch_programs.stop_signals import StopSignals
from tests.commands import run_module

MB = 10**6


def test_the_floor_is_the_flag_or_10_percent_of_the_total_within_256_and_1024_mb():
    assert floor_bytes(None, 24_000 * MB) == 1024 * MB
    assert floor_bytes(None, 4_000 * MB) == 400 * MB  # 10% of a small machine.
    assert floor_bytes(None, 1_200 * MB) == 256 * MB  # A small cgroup: never less.
    assert floor_bytes(None, None) == 0  # Nothing says what there is: no watch.
    assert floor_bytes(300, 24_000 * MB) == 300 * MB
    assert floor_bytes(0, 24_000 * MB) == 0


def test_it_fires_once_at_the_first_look_below_the_floor_and_stops_looking():
    readings = iter([5_000 * MB, 2_000 * MB, 900 * MB, 100 * MB, 50 * MB])
    looks, fired = [], []

    def read():
        value = next(readings)
        looks.append(value)
        return value

    watch = MemoryWatch(1_000 * MB, fired.append, every_s=0.01, read=read,
                        run_mb=lambda: 21_345.6).start()
    deadline = time.monotonic() + 10
    while not fired and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.1)  # Time for more looks, had it gone on.
    watch.stop()
    assert looks == [5_000 * MB, 2_000 * MB, 900 * MB]
    assert fired == [watch.fired] and len(fired) == 1
    assert fired[0].startswith("--min_free_memory_mb: the memory this run can still use fell "
                               "to 900 MB, below the floor of 1,000 MB, this run's processes "
                               "holding 21,346 MB; stopped it")


def test_a_floor_of_0_never_looks_and_an_unknown_reading_never_fires():
    looks = []
    watch = MemoryWatch(0, pytest.fail, every_s=0.01, read=lambda: looks.append(1) or 0).start()
    time.sleep(0.1)
    watch.stop()
    assert looks == []
    assert MemoryWatch(10**12, pytest.fail, read=lambda: None).check() is False


def test_stop_for_stops_the_main_thread_as_a_signal_would_but_records_no_signal():
    signals = StopSignals().install()
    try:
        threading.Timer(0.2, signals.stop_for, ("why", "memory low")).start()
        with pytest.raises(KeyboardInterrupt):
            time.sleep(10)  # A wait in C: the signal wakes it.
        assert signals.reason == "why" and signals.received is None
        signals.stop_for("again", "memory low")  # A second stop: nothing more.
        assert signals.reason == "why"
    finally:
        signals.uninstall()


def test_a_run_whose_memory_falls_below_the_floor_stops_cleanly_in_one_line(tmp_path):
    """The floor above anything a machine has: the watch fires at its first look, a second
    after launch, and the run stops as Ctrl-C stops it, with its own exit line and status."""
    logdir = tmp_path / "run"
    done = run_module("launch_programs.run", "--agent=dqn", "--env=gym:CartPole-v1",
                      "--max_actor_steps=1000000", "--min_free_memory_mb=1e12",
                      f"--logdir={logdir}", timeout=180)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 1, done.stderr[-2000:]
    assert lines[-1].startswith("error: --min_free_memory_mb: the memory this run can still "
                                "use fell to "), lines[-5:]
    assert "below the floor of 1,000,000,000,000 MB" in lines[-1]
    assert [line for line in lines if line.startswith("error")] == lines[-1:]
    assert "[run] memory low: stopping" in done.stderr and "Traceback" not in done.stderr
    summary = json.loads((logdir / "summary.json").read_text())
    assert summary["status"] == "interrupted" and "signal" not in summary
    assert summary["stopped_by"] == lines[-1][len("error: "):]
    assert summary["actor_steps"] < 1_000_000
    assert os.path.exists(logdir / "checkpoints" / "counter.npz")
    record = json.loads((logdir / "run.json").read_text())
    assert [life["status"] for life in record["lives"]] == ["interrupted"]


def test_the_message_names_the_flag_and_what_to_lower():
    message = memory_watch.low_memory_message(512 * MB, 1024 * MB, None)
    assert message.startswith("--min_free_memory_mb: ") and "\n" not in message
    assert "512 MB, below the floor of 1,024 MB; stopped it" in message
    assert "--max_replay_size" in message
