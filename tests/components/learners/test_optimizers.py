"""FusedAdam: Sonnet's Adam update, step for step, with one fused op per variable."""

from __future__ import annotations

import numpy as np
import pytest
import sonnet as snt
import tensorflow as tf

from components.learners.optimizers import FusedAdam


def _variables(seed):
    rng = np.random.default_rng(seed)
    return [tf.Variable(rng.normal(size=shape).astype(np.float32)) for shape in [(4, 3), (3,), (2,)]]


@pytest.mark.parametrize("compiled", [False, True])
def test_fused_adam_matches_sonnet_adam_step_for_step(compiled):
    rate = tf.Variable(3e-3)  # A learner's decaying rate is a variable.
    reference, fused = snt.optimizers.Adam(rate, epsilon=1e-4), FusedAdam(rate, epsilon=1e-4)
    ref_vars, fused_vars = _variables(0), _variables(0)
    rng = np.random.default_rng(1)
    ref_apply = tf.function(reference.apply) if compiled else reference.apply
    fused_apply = tf.function(fused.apply) if compiled else fused.apply
    for step in range(12):
        grads = [rng.normal(size=v.shape).astype(np.float32) * 10.0 ** rng.integers(-3, 2)
                 for v in ref_vars]
        grads[2] = None if step % 4 == 3 else grads[2]  # A variable without a gradient.
        ref_apply(grads, ref_vars)
        fused_apply(grads, fused_vars)
        rate.assign(rate * 0.9)
        for a, b in zip(ref_vars, fused_vars):
            np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=2e-5, atol=1e-6)
    assert int(fused.step.numpy()) == int(reference.step.numpy()) == 12
    for a, b in zip(reference.m + reference.v, fused.m + fused.v):  # Same state: checkpoints swap.
        np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=2e-5, atol=1e-7)
    assert not np.allclose(_variables(0)[0].numpy(), fused_vars[0].numpy())  # It did move.


def test_fused_adam_needs_one_update_per_parameter():
    with pytest.raises(ValueError, match="as many updates as parameters"):
        FusedAdam(1e-3).apply([tf.zeros(3)], _variables(0))
