"""The rank check of the time-major losses: one line naming the function and the argument."""

from __future__ import annotations

import tensorflow as tf


def check_rank(function: str, tensor: tf.Tensor, rank: int, name: str) -> None:
    """ValueError unless `tensor` has `rank` ([T, B] for 2, [B] for 1) or an unknown rank."""
    actual = tensor.shape.rank
    if actual is not None and actual != rank:
        raise ValueError(
            f"{function}: {name} must have rank {rank} (shape {'[T, B]' if rank == 2 else '[B]'}), "
            f"got rank {actual} with shape {tensor.shape}."
        )
