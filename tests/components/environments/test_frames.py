"""frames_last gives exactly the transpose, on the fast path (uint8 planes merged) and off it."""

from __future__ import annotations

import numpy as np
import pytest

from components.environments.frames import frames_last


@pytest.mark.parametrize("shape,dtype", [
    ((16, 4, 84, 84), np.uint8),  # A batched Pong step: merged.
    ((4, 84, 84), np.uint8),  # One game's stack.
    ((2, 3, 4, 7, 5), np.uint8),  # Two lead axes.
    ((2, 3, 7, 5), np.uint8),  # Three frames.
    ((2, 5, 7, 5), np.uint8),  # Five frames.
    ((2, 1, 7, 5), np.uint8),  # One frame: the transpose.
    ((2, 4, 7, 5), np.float32),  # Not bytes: the transpose.
])
def test_frames_last_is_the_transpose(shape, dtype):
    rng = np.random.default_rng(0)
    frames = rng.integers(0, 256, shape).astype(dtype)
    got = frames_last(frames)
    lead = len(shape) - 3
    want = np.transpose(frames, tuple(range(lead)) + (lead + 1, lead + 2, lead))
    assert got.shape == want.shape and got.dtype == want.dtype and got.flags.c_contiguous
    np.testing.assert_array_equal(got, want)
    assert got[..., -1].tolist() == frames[..., -1, :, :].tolist()  # The newest frame last.
    assert not np.shares_memory(got, frames)


def test_frames_last_of_a_view_of_longer_runs():
    """Frames-once replay items hold S + n frames each; their first S (a view whose items
    are S + n frames apart) and a window further on move like copies of them."""
    rng = np.random.default_rng(1)
    runs = rng.integers(0, 256, (6, 7, 84, 84)).astype(np.uint8)
    for window in (runs[:, :4], runs[:, 3:7], runs[::2, 1:5]):
        assert not window.flags.c_contiguous
        np.testing.assert_array_equal(frames_last(window),
                                      frames_last(np.ascontiguousarray(window)))
        np.testing.assert_array_equal(frames_last(window), np.transpose(window, (0, 2, 3, 1)))


def test_frames_last_rejects_what_is_not_a_stack():
    with pytest.raises(ValueError, match=r"needs \[..., S, H, W\]"):
        frames_last(np.zeros((84, 84), np.uint8))
