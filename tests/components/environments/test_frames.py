"""frames_last gives exactly the transpose, on the fast path (4 uint8 frames) and off it."""

from __future__ import annotations

import numpy as np
import pytest

from components.environments.frames import frames_last


@pytest.mark.parametrize("shape,dtype", [
    ((16, 4, 84, 84), np.uint8),  # A batched Pong step: the packed path.
    ((4, 84, 84), np.uint8),  # One game's stack.
    ((2, 3, 7, 5), np.uint8),  # Three frames: the transpose.
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


def test_frames_last_rejects_what_is_not_a_stack():
    with pytest.raises(ValueError, match=r"needs \[..., S, H, W\]"):
        frames_last(np.zeros((84, 84), np.uint8))
