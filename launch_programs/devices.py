"""TensorFlow's process-wide settings, applied before a process's first op."""

from __future__ import annotations


def configure_tensorflow(threads: int = 0) -> None:
    """A thread budget (0: TensorFlow's default) and GPU memory growth.

    An actor reserving one CPU runs its small batched forward passes fastest
    on one thread and then leaves the other cores to the other processes.
    TensorFlow takes all GPU memory by default; processes sharing a GPU must not.
    """
    import tensorflow as tf

    if threads > 0:
        tf.config.threading.set_intra_op_parallelism_threads(threads)
        tf.config.threading.set_inter_op_parallelism_threads(threads)
    for gpu in tf.config.list_physical_devices("GPU"):
        tf.config.experimental.set_memory_growth(gpu, True)
