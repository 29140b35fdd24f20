"""BatchingIterator: samples stacked, or the columns of time-major samples joined, in order,
with nothing dropped between batches."""

from __future__ import annotations

import collections

import numpy as np
import pytest

from components.datasets import BatchingIterator

Sample = collections.namedtuple("Sample", ["info", "data"])


def _rollouts(widths, t=3):
    """Time-major samples whose column j of sample i holds 100 i + j everywhere."""
    samples, columns = [], []
    for i, k in enumerate(widths):
        ids = 100 * i + np.arange(k)
        columns.extend(ids)
        samples.append(Sample(None, {
            "observation": np.broadcast_to(ids, (t + 1, k)).astype(np.float32),
            "extras": {"logits": np.broadcast_to(ids[None, :, None], (t, k, 2)).copy()},
        }))
    return samples, columns


def test_columns_of_rollouts_make_batches_in_order_and_the_rest_waits():
    samples, columns = _rollouts([3, 3, 3, 3])
    taken = iter(samples)
    batches = BatchingIterator(lambda: taken, 4, lambda: False, columns=True)
    got = []
    for expected_waiting in (2, 1, 0):
        batch = next(batches)
        assert batch["observation"].shape == (4, 4)
        assert batch["extras"]["logits"].shape == (3, 4, 2)
        np.testing.assert_array_equal(batch["extras"]["logits"][:, :, 0],
                                      batch["observation"][:-1])
        got.extend(batch["observation"][0])
        assert batches.waiting == expected_waiting
    assert got == columns[:12] and batches.samples_taken == 4


def test_a_sample_as_wide_as_the_batch_is_the_batch():
    samples, _ = _rollouts([4, 4])
    batches = BatchingIterator(lambda: iter(samples), 4, lambda: False, columns=True)
    assert next(batches)["observation"] is samples[0].data["observation"]
    assert batches.waiting == 0


def test_stacked_samples_count_one_each():
    samples, _ = _rollouts([2, 2, 2])
    batches = BatchingIterator(lambda: iter(samples), 2, lambda: False)
    assert next(batches)["observation"].shape == (2, 4, 2)
    assert batches.waiting == 0


def test_the_iterator_ends_when_told_to_stop_keeping_what_it_took():
    samples, _ = _rollouts([3])
    stop = [False]
    source = iter(samples)

    def make():
        if samples_left[0]:
            samples_left[0] = False
            return source
        stop[0] = True  # Nothing more will come: the dataset restarted after a timeout.
        return iter(())

    samples_left = [True]
    batches = BatchingIterator(make, 4, lambda: stop[0], columns=True)
    with pytest.raises(StopIteration):
        next(batches)
    assert batches.waiting == 3
