"""The learning-rate schedules: exact rates after given steps and KLs."""

import numpy as np
import pytest
import tensorflow as tf

from components.learners import KLAdaptive, LinearDecay


def test_linear_decay_reaches_final_and_stays():
    schedule = LinearDecay(1.0, 0.0, steps=4)
    rates = []
    for step in range(1, 7):
        schedule.update(tf.constant(step))
        rates.append(float(schedule.rate.numpy()))
    np.testing.assert_allclose(rates, [0.75, 0.5, 0.25, 0.0, 0.0, 0.0])


def test_kl_adaptive_moves_by_factor_only_outside_the_band():
    schedule = KLAdaptive(1e-3, target=0.01)
    rates = []
    # Below half the target: up; inside [0.5, 2] x target: kept; above twice: down.
    for kl in (0.0, 0.004, 0.005, 0.01, 0.02, 0.021, 0.5):
        schedule.adapt(tf.constant(kl))
        rates.append(float(schedule.rate.numpy()))
    np.testing.assert_allclose(
        rates, [1.5e-3, 2.25e-3, 2.25e-3, 2.25e-3, 2.25e-3, 1.5e-3, 1e-3], rtol=1e-6)


def test_kl_adaptive_stays_within_its_bounds_and_ignores_step_counts():
    schedule = KLAdaptive(1e-3, target=0.01, low=1e-4, high=2e-3)
    for _ in range(5):
        schedule.adapt(tf.constant(0.0))
    assert float(schedule.rate.numpy()) == pytest.approx(2e-3)
    # The loop's update: the step's KL moves it, the step count does not.
    schedule.update(tf.constant(10_000), {"approx_kl": tf.constant(0.01)})
    assert float(schedule.rate.numpy()) == pytest.approx(2e-3)
    schedule.update(tf.constant(10_001), {"approx_kl": tf.constant(0.05)})
    assert float(schedule.rate.numpy()) == pytest.approx(2e-3 / 1.5)
    with pytest.raises(ValueError, match="'approx_kl'"):
        schedule.update(tf.constant(1), {"loss": tf.constant(1.0)})
    schedule.adapt(tf.constant(0.0))
    for _ in range(20):
        schedule.adapt(tf.constant(1.0))
    assert float(schedule.rate.numpy()) == pytest.approx(1e-4)


@pytest.mark.parametrize("kwargs", [dict(target=0.0), dict(target=0.01, factor=1.0),
                                    dict(target=0.01, high=1e-4)])
def test_kl_adaptive_refuses_bad_settings(kwargs):
    with pytest.raises(ValueError, match="KLAdaptive needs"):
        KLAdaptive(1e-3, **kwargs)
