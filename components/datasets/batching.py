"""Batches from a queue table without ever dropping a sample.

A Reverb dataset with a rate-limiter timeout ends whenever the queue stays
empty that long, and tf.data's `batch(drop_remainder=True)` would then throw
away the samples of an unfinished batch: each was removed from the queue, so
it would be lost. Here single samples are taken one at a time (one worker,
one in flight, so FIFO order holds) and joined in Python; a batch that is
not full waits across dataset restarts.

Two ways to join: samples stacked on a new leading axis (one unroll each,
batch-major), or the columns of time-major samples ([T(+1), K, ...]: one
rollout of K environments each) concatenated on axis 1, a batch being
`batch_size` columns whatever the K of the samples.
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


def _columns(sample) -> int:
    return int(tree.flatten(sample)[0].shape[1])


class BatchingIterator:
    """Yields batches (a structure of numpy arrays) of `batch_size` samples, or with
    `columns` of `batch_size` columns of time-major samples."""

    def __init__(self, make_iterator: Callable[[], Iterator], batch_size: int,
                 should_stop: Callable[[], bool], columns: bool = False):
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self._samples = RestartingIterator(make_iterator, should_stop)
        self._batch_size = batch_size
        self._columns = columns
        self.pending: list = []  # Samples taken from the table, waiting for a full batch.
        self.samples_taken = 0

    @property
    def waiting(self) -> int:
        """Unrolls (samples, or columns) taken from the table and not yet in a batch."""
        return sum(map(_columns, self.pending)) if self._columns else len(self.pending)

    def __iter__(self) -> BatchingIterator:
        return self

    def __next__(self):
        while self.waiting < self._batch_size:
            sample = next(self._samples)  # StopIteration when asked to stop.
            self.pending.append(tree.map_structure(np.asarray, sample.data))
            self.samples_taken += 1
        if not self._columns:
            batch, self.pending = self.pending[:self._batch_size], self.pending[self._batch_size:]
            return tree.map_structure(lambda *xs: np.stack(xs), *batch)
        if len(self.pending) == 1 and _columns(self.pending[0]) == self._batch_size:
            batch, self.pending = self.pending[0], []  # One sample, one batch: no copy.
            return batch
        joined = tree.map_structure(lambda *xs: np.concatenate(xs, axis=1), *self.pending)
        n = self._batch_size
        rest = tree.map_structure(lambda x: x[:, n:], joined)
        self.pending = [rest] if _columns(rest) else []
        return tree.map_structure(lambda x: x[:, :n], joined)
