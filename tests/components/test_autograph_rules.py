"""Sonnet, Reverb and dm-tree are left alone by autograph; project code is still converted."""

from __future__ import annotations

import sonnet as snt
import tensorflow as tf
from tensorflow.python.autograph.core import config
from tensorflow.python.autograph.impl import conversion

import components  # noqa: F401  (installs the rules)
from components.autograph_rules import PACKAGES, skip_autograph_for


def _project_function(x):
    return x


def test_library_code_is_exempt_and_project_code_is_not():
    assert conversion.is_allowlisted(snt.Linear.__call__)
    assert conversion.is_allowlisted(snt.optimizers.Adam.apply)
    assert not conversion.is_allowlisted(_project_function)


def test_installing_twice_adds_no_rules():
    before = len(config.CONVERSION_RULES)
    skip_autograph_for()
    skip_autograph_for(PACKAGES)
    assert len(config.CONVERSION_RULES) == before


def test_a_sonnet_network_still_traces_and_branches_on_tensors_in_project_code():
    mlp = snt.nets.MLP([8, 2])

    @tf.function
    def f(x):
        y = mlp(x)
        if tf.reduce_sum(y) > 1e9:  # A tensor condition: needs autograph here.
            y = -y
        return y

    x = tf.ones((3, 4))
    tf.debugging.assert_equal(f(x), mlp(x))
