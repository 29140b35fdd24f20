"""Checkpointing any Saveable: round trip, atomic replace, no pickles."""

from __future__ import annotations

import numpy as np
import pytest

from agentkit import core
from agentkit.checkpointing import Checkpointer


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
