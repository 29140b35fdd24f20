"""Checkpointing any Saveable: round trip, atomic replace, no pickles."""

from __future__ import annotations

import errno

import numpy as np
import pytest

from agentkit import checkpointing, core
from agentkit.checkpointing import Checkpointer, CheckpointError, read_checkpoint


class Box(core.Saveable):
    def __init__(self, value):
        self.state = {"w": np.full((2, 3), value, np.float32), "step": np.asarray(value)}

    def save(self):
        return self.state

    def restore(self, state):
        self.state = dict(state)


def test_round_trip(tmp_path):
    saved = Checkpointer(Box(3), str(tmp_path), "box")
    assert not saved.exists()
    saved.save()
    target = Box(0)
    assert Checkpointer(target, str(tmp_path), "box").restore()
    np.testing.assert_array_equal(target.state["w"], np.full((2, 3), 3, np.float32))
    assert int(target.state["step"]) == 3


def test_restore_without_checkpoint_returns_false(tmp_path):
    assert not Checkpointer(Box(1), str(tmp_path), "none").restore()


def test_maybe_save_respects_the_interval(tmp_path):
    checkpointer = Checkpointer(Box(1), str(tmp_path), "box", interval_s=3600)
    assert not checkpointer.maybe_save()
    assert not checkpointer.exists()


def test_object_arrays_are_refused(tmp_path):
    box = Box(1)
    box.state = {"bad": np.array([{"a": 1}], dtype=object)}
    checkpointer = Checkpointer(box, str(tmp_path), "box")
    checkpointer.save()
    with pytest.raises(ValueError):
        checkpointer.restore()  # allow_pickle=False: nothing in --logdir runs code.


@pytest.mark.parametrize("content", [b"", b"PK\x03\x04 cut off", b"not a zip at all"])
def test_a_damaged_checkpoint_fails_naming_the_file(tmp_path, content):
    (tmp_path / "box.npz").write_bytes(content)
    with pytest.raises(CheckpointError) as raised:
        Checkpointer(Box(1), str(tmp_path), "box").restore()
    message = str(raised.value)
    assert str(tmp_path / "box.npz") in message and "--fresh" in message
    assert len(message.splitlines()) == 1


def test_a_truncated_checkpoint_fails_naming_the_file(tmp_path):
    Checkpointer(Box(3), str(tmp_path), "box").save()
    path = tmp_path / "box.npz"
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    with pytest.raises(CheckpointError, match="box.npz is damaged"):
        read_checkpoint(str(path))


def test_a_checkpoint_that_does_not_fit_fails_naming_the_file(tmp_path):
    class Strict(Box):
        def restore(self, state):
            if state["w"].shape != (5,):
                raise ValueError(f"shape {state['w'].shape} != (5,)")

    Checkpointer(Box(3), str(tmp_path), "box").save()
    with pytest.raises(CheckpointError, match=r"box.npz does not fit this run.*\(2, 3\)"):
        Checkpointer(Strict(0), str(tmp_path), "box").restore()


def test_a_full_disk_keeps_the_previous_checkpoint_and_leaves_no_temporary_file(
        tmp_path, monkeypatch):
    checkpointer = Checkpointer(Box(3), str(tmp_path), "box")
    checkpointer.save()

    def full_disk(file, **arrays):
        file.write(b"partial")  # What a write that runs out of space leaves.
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(checkpointing.np, "savez", full_disk)
    checkpointer._saveable = Box(7)
    with pytest.raises(CheckpointError, match="cannot write checkpoint .*box.npz: No space left"):
        checkpointer.save()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["box.npz"]
    monkeypatch.undo()
    restored = Box(0)
    assert Checkpointer(restored, str(tmp_path), "box").restore()
    assert int(restored.state["step"]) == 3  # The previous checkpoint, intact.


def test_a_checkpoint_is_never_written_through_a_link(tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("precious")
    (tmp_path / "box.npz.tmp.npz").symlink_to(victim)
    with pytest.raises(CheckpointError, match="cannot write checkpoint"):
        Checkpointer(Box(3), str(tmp_path), "box").save()
    assert victim.read_text() == "precious"
