"""The replay server: checkpoints that restore every item, on a port that survives restarts."""

from __future__ import annotations

import os
import tempfile
import time

import numpy as np
import pytest
import reverb
import tensorflow as tf

from components.replay import ReplayServer, make_rate_limiter, make_replay_table, pick_free_port
from components.replay.server import NoCheckpointer


def _tables():
    limiter = make_rate_limiter(samples_per_insert=None, min_replay_size=1)
    return [make_replay_table("t", tf.TensorSpec((), tf.float32), 1000, limiter,
                              prioritized=True)]


def _write(address: str, values) -> None:
    with reverb.Client(address).trajectory_writer(1) as writer:
        for v in values:
            writer.append(np.float32(v))
            writer.create_item("t", float(v) + 1.0, writer.history[-1])
        writer.flush()


def _contents(address: str) -> dict[float, float]:
    """Value -> priority of every item, read by sampling the table's whole content."""
    size = reverb.Client(address).server_info()["t"].current_size
    dataset = reverb.TrajectoryDataset.from_table_signature(
        address, "t", max_in_flight_samples_per_worker=8).take(50 * size)
    return {float(s.data): float(s.info.priority) for s in dataset}


@pytest.mark.timeout(60)  # Reverb restores have been reported to hang.
def test_checkpoint_at_stop_restores_every_item_and_priority(tmp_path):
    directory = str(tmp_path / "replay")
    port = pick_free_port()
    first = ReplayServer(_tables(), port=port, checkpoint_dir=directory)
    assert first.restored_items == 0
    _write(first.address(), range(20))
    first.stop()  # Checkpoints, then stops.
    assert first.checkpoints_written == 1

    start = time.monotonic()
    second = ReplayServer(_tables(), port=port, checkpoint_dir=directory)
    restore_s = time.monotonic() - start
    try:
        assert second.restored_items == 20
        assert second.address().endswith(f":{port}")  # Same address: clients find it again.
        assert _contents(second.address()) == {float(v): v + 1.0 for v in range(20)}
        info = second.info()["t"]
        assert info["current_size"] == 20
        _write(second.address(), [100])  # It takes new items after the restore.
        assert second.info()["t"]["current_size"] == 21
    finally:
        second.stop()
    assert restore_s < 10


@pytest.mark.timeout(60)
def test_periodic_checkpoints_and_none_without_a_directory(tmp_path):
    server = ReplayServer(_tables(), checkpoint_dir=str(tmp_path / "replay"), checkpoint_every_s=0.3)
    try:
        _write(server.address(), range(5))
        time.sleep(1.2)
        assert server.checkpoints_written >= 2
    finally:
        server.stop()
    plain = ReplayServer(_tables())
    try:
        assert plain.checkpoint() is None
    finally:
        plain.stop()
    assert plain.checkpoints_written == 0


def test_a_server_without_checkpoints_leaves_no_folder_in_the_temp_dir(tmp_path, monkeypatch):
    """Reverb's default checkpointer made a temp folder per server that nothing removed
    (2,787 of them under /tmp on a day's test runs)."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    assert tempfile.mkdtemp().startswith(str(tmp_path))  # The probe sees where Reverb's would go.
    made = set(os.listdir(tmp_path))
    server = ReplayServer(_tables())
    try:
        _write(server.address(), range(3))
        with pytest.raises(ValueError, match="no Checkpointer configured"):
            reverb.Client(server.address()).checkpoint()
    finally:
        server.stop()
    assert set(os.listdir(tmp_path)) == made


def test_port_in_use_sees_a_reverb_server_and_any_listener_but_not_a_free_port():
    import socket

    from components.replay import port_in_use

    free = pick_free_port()
    assert not port_in_use(free)
    # gRPC binds with SO_REUSEPORT: a second Reverb server on this port would bind
    # too, and clients would reach either one at random.
    server = reverb.Server(tables=[reverb.Table.queue("q", 10)], port=free,
                           checkpointer=NoCheckpointer())
    try:
        assert port_in_use(free)
    finally:
        server.stop()
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        assert port_in_use(listener.getsockname()[1])
