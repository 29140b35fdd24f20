"""StepLoop: N learner steps per call, each on its own batch, in order, stopping where it must."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from components.datasets.reverb_dataset import RestartingIterator
from components.learners.step_loop import StepLoop


class RecordingStep:
    """A compiled 'learner step' that adds each batch to a running sum and counts its calls.

    A batch holding a NaN is 'not finite': its update is skipped, as a learner's would be.
    """

    def __init__(self):
        self.total = tf.Variable(0.0)
        self.calls = tf.Variable(0)
        self.seen = tf.Variable(tf.zeros(64))  # seen[k] = the k-th batch applied.
        self.fn = tf.function(self._step)

    def _step(self, batch):
        finite = tf.reduce_all(tf.math.is_finite(batch))
        if finite:
            self.seen.scatter_nd_update([[self.calls]], [tf.reduce_sum(batch)])
            self.total.assign_add(tf.reduce_sum(batch))
            self.calls.assign_add(1)
        return {"total": tf.identity(self.total), "finite": finite}


def batches(values):
    return tf.data.Dataset.from_tensor_slices(np.asarray(values, np.float32)[:, None])


@pytest.mark.parametrize("kind", ["tf", "python"])
def test_each_call_runs_n_batches_in_order(kind):
    step = RecordingStep()
    dataset = batches(range(1, 11))
    iterator = iter(dataset) if kind == "tf" else iter(list(dataset))
    loop = StepLoop(step.fn, iterator, steps=4)
    assert loop._compiled == (kind == "tf")
    metrics, n, _ = loop()
    assert n == 4 and float(metrics["total"]) == 1 + 2 + 3 + 4
    metrics, n, _ = loop()
    assert n == 4 and float(metrics["total"]) == sum(range(1, 9))
    metrics, n, _ = loop()  # Only two batches left: a short call.
    assert n == 2 and float(metrics["total"]) == sum(range(1, 11))
    np.testing.assert_array_equal(step.seen.numpy()[:11], list(range(1, 11)) + [0])
    with pytest.raises(StopIteration):  # Nothing left at all.
        loop()


def test_the_compiled_loop_traces_once():
    step = RecordingStep()
    loop = StepLoop(step.fn, iter(batches(range(100))), steps=8)
    for _ in range(5):
        loop()
    assert loop._loop_fn.experimental_get_tracing_count() == 1
    assert int(step.calls.numpy()) == 40


@pytest.mark.parametrize("kind", ["tf", "python"])
def test_a_non_finite_step_ends_the_call(kind):
    step = RecordingStep()
    dataset = batches([1, 2, np.nan, 4, 5, 6])
    iterator = iter(dataset) if kind == "tf" else iter(list(dataset))
    loop = StepLoop(step.fn, iterator, steps=5)
    metrics, n, _ = loop()
    assert n == 3 and not bool(metrics["finite"])  # The NaN batch was the last one read.
    assert int(step.calls.numpy()) == 2
    metrics, n, _ = loop()  # The next call goes on after it.
    assert n == 3 and bool(metrics["finite"]) and float(metrics["total"]) == 1 + 2 + 4 + 5 + 6


def test_a_restarting_iterator_is_restarted_where_its_dataset_ends():
    """A Reverb dataset ends on a rate-limiter timeout; the loop starts a new one
    (both when the end comes mid-call and when it comes first) until told to stop."""
    step = RecordingStep()
    made = []
    stop = []

    def make():
        made.append(len(made))
        return iter(batches([1, 1, 1]))  # Each new dataset: three batches.

    iterator = RestartingIterator(make, should_stop=lambda: bool(stop))
    loop = StepLoop(step.fn, iterator, steps=2)
    counts = [loop()[1] for _ in range(4)]
    # Dataset 1: 2 + 1 (ended mid-call); dataset 2: 2 + 1.
    assert counts == [2, 1, 2, 1] and iterator.restarts == 2 and len(made) == 2
    assert loop()[1] == 2 and len(made) == 3  # Dataset 3 was started for this call.
    assert loop()[1] == 1
    stop.append(True)
    with pytest.raises(StopIteration):
        loop()
    assert float(step.total.numpy()) == 9.0


def test_a_restarting_iterator_whose_new_dataset_is_empty_tries_again():
    step = RecordingStep()
    sizes = iter([0, 0, 3])
    iterator = RestartingIterator(lambda: iter(batches([1] * next(sizes))),
                                  should_stop=lambda: False)
    loop = StepLoop(step.fn, iterator, steps=3)
    assert loop()[1] == 3 and iterator.restarts == 2


def test_steps_must_be_positive():
    with pytest.raises(ValueError, match="steps must be >= 1"):
        StepLoop(RecordingStep().fn, iter([]), steps=0)
