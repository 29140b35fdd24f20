"""Datasets: Reverb -> tf.data."""

from components.datasets.reverb_dataset import RestartingIterator, make_reverb_dataset

__all__ = ["RestartingIterator", "make_reverb_dataset"]
