"""TensorFlow's process-wide settings, applied on purpose before a process's first op.

The command line calls `configure_tensorflow` in its own process, and the
ray launcher in every node process it starts whose node has TensorFlow loaded
(thread budgets, GPU memory growth, autograph's rules for library code:
`components.autograph_rules`). A node process without it (the counter) gets
the thread budget and memory growth through `tensorflow_environment`, and the
autograph rules if its constructor imports TensorFlow after all.
"""

from __future__ import annotations

import os


def tensorflow_environment(threads: int = 0) -> None:
    """The settings TensorFlow reads from the environment when it starts its thread pools and
    GPUs (thread budget, GPU memory growth), for a process that has not imported it yet and
    may never need it: setting them costs no import."""
    if threads > 0:
        os.environ["TF_NUM_INTRAOP_THREADS"] = str(threads)
        os.environ["TF_NUM_INTEROP_THREADS"] = str(threads)
    os.environ.setdefault("TF_FORCE_GPU_ALLOW_GROWTH", "true")


def configure_tensorflow(threads: int = 0) -> None:
    """A thread budget (0: TensorFlow's default), GPU memory growth, autograph's rules.

    An actor reserving one CPU runs its small batched forward passes fastest
    on one thread and then leaves the other cores to the other processes.
    TensorFlow takes all GPU memory by default; processes sharing a GPU must not.
    Autograph skips Sonnet, Reverb and dm-tree (tracing a learner step 2.6x
    faster; see components/autograph_rules.py).
    """
    import tensorflow as tf

    from components.autograph_rules import skip_autograph_for

    skip_autograph_for()

    if threads > 0:
        tf.config.threading.set_intra_op_parallelism_threads(threads)
        tf.config.threading.set_inter_op_parallelism_threads(threads)
    for gpu in tf.config.list_physical_devices("GPU"):
        tf.config.experimental.set_memory_growth(gpu, True)
