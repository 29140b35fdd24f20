"""The counter node checkpoints the run's totals, and a rebuilt node or a rerun starts from them."""

from __future__ import annotations

import time

import pytest

from launch_programs.counter_node import CounterNode, read_saved_counts


def test_totals_are_saved_on_their_period_and_a_rebuilt_node_starts_from_them(tmp_path):
    start = time.time() - 100.0  # The run's first life began 100 s ago.
    node = CounterNode(initial={"actor_steps": 10}, logdir=str(tmp_path), start_time=start,
                       save_every_s=0.05)
    node.increment(actor_steps=5)
    assert read_saved_counts(str(tmp_path)) is None  # The period has not passed yet.
    time.sleep(0.06)
    node.increment(actor_steps=7, learner_steps=3)
    counts, wall = read_saved_counts(str(tmp_path))
    assert counts == {"actor_steps": 22.0, "learner_steps": 3.0}
    assert 100.0 <= wall < 105.0
    # Ray rebuilds a dead counter from its constructor arguments (the counts at program
    # start); it must come back with the saved totals, not those.
    rebuilt = CounterNode(initial={"actor_steps": 10}, logdir=str(tmp_path), start_time=start)
    assert rebuilt.get_counts() == {"actor_steps": 22.0, "learner_steps": 3.0}


def test_checkpoint_saves_now_and_returns_the_totals(tmp_path):
    node = CounterNode(logdir=str(tmp_path), save_every_s=3600)
    node.increment(actor_steps=4)
    assert node.checkpoint() == {"actor_steps": 4.0, "learner_steps": 0.0}
    assert read_saved_counts(str(tmp_path))[0]["actor_steps"] == 4.0


def test_a_save_older_than_the_starting_counts_is_not_taken(tmp_path):
    CounterNode(initial={"actor_steps": 5}, logdir=str(tmp_path)).checkpoint()
    node = CounterNode(initial={"actor_steps": 50}, logdir=str(tmp_path))
    assert node.get_counts()["actor_steps"] == 50


def test_without_a_logdir_nothing_is_written(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    node = CounterNode(initial={"actor_steps": 1}, save_every_s=0.0)
    node.increment(actor_steps=1)
    assert node.checkpoint()["actor_steps"] == 2 and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("content", [b"", b"garbage"])
def test_a_damaged_counter_checkpoint_is_named(tmp_path, content):
    (tmp_path / "checkpoints").mkdir()
    (tmp_path / "checkpoints" / "counter.npz").write_bytes(content)
    with pytest.raises(ValueError, match="checkpoints/counter.npz is damaged"):
        CounterNode(logdir=str(tmp_path))
