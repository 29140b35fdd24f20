"""Datasets: Reverb -> tf.data."""

from components.datasets.batching import BatchingIterator, make_single_sample_iterator
from components.datasets.reverb_dataset import (
    RestartingIterator,
    make_batch_iterator,
    make_reverb_dataset,
    unpack_frames_once,
)

__all__ = ["BatchingIterator", "RestartingIterator", "make_batch_iterator",
           "make_reverb_dataset", "make_single_sample_iterator", "unpack_frames_once"]
