"""A Reverb checkpoint is read through before a server loads it: damage is named, not met later."""

from __future__ import annotations

import os
import re
import shutil

import numpy as np
import pytest
import reverb
import tensorflow as tf

from components.replay.checkpoints import (
    ReplayCheckpointError,
    check_replay_checkpoint,
    latest_checkpoint,
)

ITEMS = 20


def write_replay_checkpoint(directory, items: int = ITEMS) -> str:
    """A real Reverb checkpoint of a table holding `items` items; the folder it wrote."""
    os.makedirs(directory, exist_ok=True)
    table = reverb.Table("t", reverb.selectors.Uniform(), reverb.selectors.Fifo(), 1000,
                         reverb.rate_limiters.MinSize(1))
    server = reverb.Server([table], checkpointer=reverb.checkpointers.DefaultCheckpointer(
        str(directory)))
    try:
        client = reverb.Client(f"localhost:{server.port}")
        for i in range(items):
            client.insert([np.full(4, i, np.float32)], {"t": 1.0})
        return client.checkpoint()
    finally:
        server.stop()


def test_an_intact_checkpoint_is_read_to_its_last_record(tmp_path):
    folder = write_replay_checkpoint(tmp_path)
    assert latest_checkpoint(str(tmp_path)) == folder
    # One table record, one chunk and one item record per insert.
    assert check_replay_checkpoint(str(tmp_path)) == 1 + 2 * ITEMS
    for name in ("tables", "chunks", "items"):  # What TensorFlow's own reader counts.
        path = os.path.join(folder, f"{name}.tfrecord")
        assert sum(1 for _ in tf.data.TFRecordDataset(path, compression_type="ZLIB")) >= 1


def test_no_checkpoint_or_one_without_done_is_nothing_to_check(tmp_path):
    assert check_replay_checkpoint(str(tmp_path / "absent")) == 0
    folder = write_replay_checkpoint(tmp_path)
    os.remove(os.path.join(folder, "DONE"))  # Reverb skips a folder it did not finish.
    assert latest_checkpoint(str(tmp_path)) is None


@pytest.mark.parametrize("damage", ["truncate", "flip", "append", "missing"])
def test_a_damaged_file_is_named(tmp_path, damage):
    folder = write_replay_checkpoint(tmp_path)
    path = os.path.join(folder, "items.tfrecord")
    data = bytearray(open(path, "rb").read())
    if damage == "truncate":
        data = data[: len(data) // 2]
    elif damage == "flip":
        data[len(data) // 2] ^= 0xFF
    elif damage == "append":
        data += b"\0junk"
    if damage == "missing":
        os.remove(path)
    else:
        open(path, "wb").write(bytes(data))
    with pytest.raises(ReplayCheckpointError, match=re.escape(f"replay checkpoint {path} is damaged")):
        check_replay_checkpoint(str(tmp_path))


def test_the_newest_finished_checkpoint_is_the_one_checked(tmp_path):
    older = write_replay_checkpoint(tmp_path)
    newer = os.path.join(str(tmp_path), "9999-01-01T00:00:00.000000000+00:00")
    shutil.copytree(older, newer)
    os.truncate(os.path.join(older, "items.tfrecord"), 10)  # Reverb would not load it.
    assert latest_checkpoint(str(tmp_path)) == newer
    assert check_replay_checkpoint(str(tmp_path)) == 1 + 2 * ITEMS
