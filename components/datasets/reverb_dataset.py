"""A tf.data pipeline that samples batches from a Reverb table.

Each element is a `reverb.ReplaySample(info, data)`: `info` carries the keys
and sampling probabilities that prioritized learners need to weight their
loss and write priorities back.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import reverb
import tensorflow as tf


def make_reverb_dataset(
    server_address: str,
    table: str,
    batch_size: int,
    prefetch_size: int = 4,
    max_in_flight_samples_per_worker: int | None = None,
    num_workers_per_iterator: int = -1,
    rate_limiter_timeout_ms: int = 1000,
) -> tf.data.Dataset:
    """Batched, prefetched samples of `table`, with the table's signature.

    `max_in_flight_samples_per_worker` defaults to 2 x batch_size: too many
    samples in flight skews prioritized sampling towards stale priorities.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    if max_in_flight_samples_per_worker is None:
        max_in_flight_samples_per_worker = 2 * batch_size
    dataset = reverb.TrajectoryDataset.from_table_signature(
        server_address=server_address,
        table=table,
        max_in_flight_samples_per_worker=max_in_flight_samples_per_worker,
        num_workers_per_iterator=num_workers_per_iterator,
        rate_limiter_timeout_ms=rate_limiter_timeout_ms,
    )
    dataset = dataset.batch(batch_size, drop_remainder=True)
    return dataset.prefetch(prefetch_size)


class RestartingIterator:
    """Iterates over datasets from `make_iterator`, restarting each one that ends.

    A Reverb dataset with a rate-limiter timeout ends whenever sampling is
    blocked that long (while actors fill the table, or after they stopped).
    This wrapper starts a new one unless `should_stop()`, in which case it
    raises StopIteration: the learner's loop ends instead of hanging.
    """

    def __init__(self, make_iterator: Callable[[], Iterator], should_stop: Callable[[], bool]):
        self._make_iterator = make_iterator
        self._should_stop = should_stop
        self._iterator: Iterator | None = None
        self.restarts = 0

    def __iter__(self) -> RestartingIterator:
        return self

    def __next__(self):
        while True:
            iterator = self.current()
            try:
                return next(iterator)
            except StopIteration:
                self.restart()

    def current(self) -> Iterator:
        """The live dataset iterator (a new one if the last ended); StopIteration once stopped.

        A compiled learner loop reads this tf.data iterator inside its graph
        and calls `restart()` when it reaches the end.
        """
        if self._should_stop():
            raise StopIteration
        if self._iterator is None:
            self._iterator = self._make_iterator()
        return self._iterator

    def restart(self) -> None:
        """Drops the current iterator (it ended): the next `current()` starts a new one."""
        self._iterator = None
        self.restarts += 1


def make_batch_iterator(
    server_address: str,
    table: str,
    batch_size: int,
    prefetch_size: int = 4,
    should_stop: Callable[[], bool] | None = None,
) -> RestartingIterator:
    """Batches of `table` for a learner: restarts after rate-limiter timeouts, ends on should_stop."""

    def make():
        return iter(make_reverb_dataset(server_address, table, batch_size,
                                        prefetch_size=prefetch_size))

    return RestartingIterator(make, should_stop or (lambda: False))
