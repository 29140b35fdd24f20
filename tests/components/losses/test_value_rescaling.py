"""Value rescaling: the exact values of h, and h^-1 undoing h over a wide range."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from components.losses import signed_hyperbolic, signed_parabolic


@pytest.mark.parametrize("eps", [1e-3, 1e-2, 0.0])
def test_parabolic_inverts_hyperbolic_over_a_wide_range(eps):
    x = np.concatenate([-np.logspace(-6, 5, 500), [0.0], np.logspace(-6, 5, 500)])
    x = tf.constant(x, tf.float64)
    np.testing.assert_allclose(signed_parabolic(signed_hyperbolic(x, eps), eps), x,
                               rtol=1e-9, atol=1e-5)
    np.testing.assert_allclose(signed_hyperbolic(signed_parabolic(x, eps), eps), x,
                               rtol=1e-9, atol=1e-5)


def test_float32_round_trip_within_1e_5_relative():
    x = tf.constant(np.linspace(-3000.0, 3000.0, 6001), tf.float32)
    back = signed_parabolic(signed_hyperbolic(x)).numpy()
    np.testing.assert_allclose(back, x.numpy(), rtol=1e-5, atol=1e-5)


def test_hyperbolic_values_by_hand():
    # h(3) = sqrt(4) - 1 + 0.003 = 1.003; h(-8) = -(3 - 1) - 0.008; h(0) = 0.
    np.testing.assert_allclose(signed_hyperbolic(tf.constant([3.0, -8.0, 0.0])),
                               [1.003, -2.008, 0.0], rtol=1e-6)
    # It squashes: h(10,000) is about 109, while it keeps the sign and order.
    values = signed_hyperbolic(tf.constant([-1e4, -1.0, 1.0, 1e4])).numpy()
    assert np.all(np.diff(values) > 0) and 100 < values[-1] < 110
