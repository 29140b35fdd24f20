"""Batches from a queue table without ever dropping a sample.

A Reverb dataset with a rate-limiter timeout ends whenever the queue stays
empty that long, and tf.data's `batch(drop_remainder=True)` would then throw
away the samples of an unfinished batch: each was removed from the queue, so
it would be lost. Here single samples are taken one at a time (one worker,
one in flight, so FIFO order holds) and stacked in Python; a batch that is
not full waits across dataset restarts.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np
import reverb
import tree

from components.datasets.reverb_dataset import RestartingIterator


def make_single_sample_iterator(server_address: str, table: str,
                                rate_limiter_timeout_ms: int = 1000) -> Iterator:
    """Unbatched samples of `table` in its order (one worker, one in flight)."""
    dataset = reverb.TrajectoryDataset.from_table_signature(
        server_address=server_address, table=table, max_in_flight_samples_per_worker=1,
        num_workers_per_iterator=1, rate_limiter_timeout_ms=rate_limiter_timeout_ms,
    )
    return iter(dataset)


class BatchingIterator:
    """Yields batches (a structure of numpy arrays, batch-major) of `batch_size` samples."""

    def __init__(self, make_iterator: Callable[[], Iterator], batch_size: int,
                 should_stop: Callable[[], bool]):
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self._samples = RestartingIterator(make_iterator, should_stop)
        self._batch_size = batch_size
        self.pending: list = []  # Samples taken from the table, waiting for a full batch.
        self.samples_taken = 0

    def __iter__(self) -> BatchingIterator:
        return self

    def __next__(self):
        while len(self.pending) < self._batch_size:
            sample = next(self._samples)  # StopIteration when asked to stop.
            self.pending.append(tree.map_structure(np.asarray, sample.data))
            self.samples_taken += 1
        batch, self.pending = self.pending[:self._batch_size], self.pending[self._batch_size:]
        return tree.map_structure(lambda *xs: np.stack(xs), *batch)
