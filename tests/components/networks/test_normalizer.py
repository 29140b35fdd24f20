"""RunningMeanStd: the moments of everything seen, and inputs scaled and clipped by them."""

import numpy as np
import pytest
import tensorflow as tf

from components.networks.normalizer import CLIP, EPSILON, RunningMeanStd


def test_updates_give_the_moments_of_all_batches_together():
    rng = np.random.default_rng(0)
    batches = [rng.normal(3.0, 2.0, (n, 4, 2)).astype(np.float32) for n in (5, 17, 64)]
    normalizer = RunningMeanStd()
    for batch in batches:
        normalizer.update(tf.constant(batch))
    everything = np.concatenate(batches)
    # The starting count of 1e-4 (mean 0, var 1) weighs 1e-4 of an element: within 1e-5.
    np.testing.assert_allclose(normalizer.mean.numpy(), everything.mean(0), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(normalizer.var.numpy(), everything.var(0), rtol=1e-4, atol=1e-5)
    assert float(normalizer.count.numpy()) == pytest.approx(86.0001)


def test_inputs_are_scaled_per_element_and_clipped():
    normalizer = RunningMeanStd()
    frames = np.zeros((4, 3), np.uint8)
    frames[:, 0] = [10, 10, 10, 10]  # A still pixel: variance 0.
    frames[:, 1] = [0, 0, 0, 200]  # A pixel that something crosses once.
    frames[:, 2] = [0, 100, 0, 100]
    assert np.all(normalizer(tf.constant(frames)).numpy() == np.minimum(frames, CLIP))  # 0, 1.
    normalizer.update(tf.constant(frames))
    out = normalizer(tf.constant(frames)).numpy()
    mean, var = normalizer.mean.numpy(), normalizer.var.numpy()
    expected = np.clip((frames - mean) / np.sqrt(var + EPSILON), -CLIP, CLIP)
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out[:, 0], 0.0, atol=1e-2)  # The still pixel reads 0.
    np.testing.assert_allclose(out[:, 2], [-1, 1, -1, 1], atol=1e-3)  # Unit scale.
    assert out[3, 1] > 1.7 and out[0, 1] < -0.5  # The crossing stands out.
