"""A tf.data pipeline that samples batches from a Reverb table.

Each element is a `reverb.ReplaySample(info, data)`: `info` carries the keys
and sampling probabilities that prioritized learners need to weight their
loss and write priorities back.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np
import reverb
import tensorflow as tf

from agentkit.types import Transition
from components.environments.frames import frames_last


def make_reverb_dataset(
    server_address: str,
    table: str,
    batch_size: int,
    prefetch_size: int = 4,
    max_in_flight_samples_per_worker: int | None = None,
    num_workers_per_iterator: int = 2,
    rate_limiter_timeout_ms: int = 1000,
    transform: Callable[[reverb.ReplaySample], reverb.ReplaySample] | None = None,
) -> tf.data.Dataset:
    """Batched, prefetched samples of `table`, with the table's signature.

    `max_in_flight_samples_per_worker` defaults to 2 x batch_size: too many
    samples in flight skews prioritized sampling towards stale priorities.
    Two workers, not Reverb's automatic choice (one here): 9,200 -> 14,200
    samples/s of Pong transitions on this project's 2-core machine
    (bench/replay.py). A FIFO (queue) table needs exactly one.
    `transform` maps each batch (in the tf.data pipeline, before prefetching).
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
    if transform is not None:
        dataset = dataset.map(transform, num_parallel_calls=tf.data.AUTOTUNE)
    return dataset.prefetch(prefetch_size)


def unpack_frames_once(n_step: int) -> Callable[[reverb.ReplaySample], reverb.ReplaySample]:
    """The map from a batch of frames-once items of n-step transitions (`FramesOnceNStepAdder`:
    frames [B, S + n, H, W], scalars [B, 4] of a_t, R, D, m) to the batch of `Transition`s the
    learner expects: [B, H, W, S] stacks o_t = frames[:S] and o_t+m = frames[m:m+S], int32
    actions, as stored whole.

    The stacks move channels last through `frames_last` (OpenCV's SIMD interleave) in a
    `tf.numpy_function`: on this project's 2-core machine XLA's transpose and gather took
    about 2 ms of CPU a batch of 32 Pong transitions in tf.data, 63 us a sample. In one A/B
    run on one server (2026-12-03): 7,967-8,188 samples/s this way against 7,109-7,467 with
    XLA (whole stacks, which need no move: 9,499-9,787). What is left of the gap is the map
    stage itself, about 1 ms of CPU a batch whatever it computes (docs/benchmarks.md)."""
    if n_step < 1:
        raise ValueError(f"n_step must be >= 1, got {n_step}")

    def stacks(frames: np.ndarray, m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        size = frames.shape[1] - n_step
        observation = frames_last(frames[:, :size])
        next_observation = frames_last(frames[:, n_step:n_step + size])  # Most items: m = n.
        for shift in np.unique(m[m != n_step]):  # Items that end their episode early.
            rows = np.flatnonzero(m == shift)
            next_observation[rows] = frames_last(frames[rows, shift:shift + size])
        return observation, next_observation

    def unpack(sample: reverb.ReplaySample) -> reverb.ReplaySample:
        frames, scalars = sample.data.frames, sample.data.scalars
        observation, next_observation = tf.numpy_function(
            stacks, [frames, tf.cast(scalars[:, 3], tf.int32)], [tf.uint8, tf.uint8],
            stateful=False)
        batch, length, height, width = frames.shape
        shape = [batch, height, width, None if length is None else length - n_step]
        observation.set_shape(shape)
        next_observation.set_shape(shape)
        return sample._replace(data=Transition(
            observation=observation, action=tf.cast(scalars[:, 0], tf.int32),
            reward=scalars[:, 1], discount=scalars[:, 2], next_observation=next_observation,
            extras=()))

    return unpack


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
    transform: Callable[[reverb.ReplaySample], reverb.ReplaySample] | None = None,
) -> RestartingIterator:
    """Batches of `table` for a learner: restarts after rate-limiter timeouts, ends on should_stop."""

    def make():
        return iter(make_reverb_dataset(server_address, table, batch_size,
                                        prefetch_size=prefetch_size, transform=transform))

    return RestartingIterator(make, should_stop or (lambda: False))
