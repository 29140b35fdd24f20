"""Dense FLOPs from a network's graph, against counts by hand."""

from __future__ import annotations

import pytest
import sonnet as snt
import tensorflow as tf

from components.networks.atari import AtariTorso
from components.networks.flops import ForwardFlops, forward_flops, matmul_rate


def test_the_nature_torso_and_a_head_by_hand():
    batch = 3
    network = snt.Sequential([AtariTorso(), snt.Linear(512), tf.nn.relu, snt.Linear(6)])
    flops = forward_flops(network, tf.TensorSpec((batch, 84, 84, 4), tf.uint8))
    conv1 = 20 * 20 * 32 * (8 * 8 * 4)  # Multiply-adds per frame of each layer.
    conv2 = 9 * 9 * 64 * (4 * 4 * 32)
    conv3 = 7 * 7 * 64 * (3 * 3 * 64)
    dense = 3136 * 512 + 512 * 6
    assert flops.first == 2 * batch * conv1
    assert flops.total == 2 * batch * (conv1 + conv2 + conv3 + dense)


def test_transposed_and_batched_products():
    a = tf.TensorSpec((5, 7), tf.float32)
    assert forward_flops(lambda x: tf.matmul(x, tf.ones((5, 3)), transpose_a=True), a).total \
        == 2 * 7 * 5 * 3
    assert forward_flops(lambda x: tf.matmul(x, tf.ones((3, 7)), transpose_b=True), a).total \
        == 2 * 5 * 7 * 3
    b = tf.TensorSpec((4, 5, 7), tf.float32)
    assert forward_flops(lambda x: tf.linalg.matmul(x, tf.ones((4, 7, 2))), b).total \
        == 2 * 4 * 5 * 7 * 2


def test_an_sgd_step_counts_gradients_and_extra_passes():
    # Forward F, weight gradients F, input gradients F less the first op's, 2 more passes.
    assert ForwardFlops(total=100, first=30).sgd_step(extra_forwards=2) == 100 + 100 + 70 + 200


def test_no_dense_op_or_an_open_shape_fails():
    with pytest.raises(ValueError, match="no convolution or matrix product"):
        forward_flops(lambda x: x * 2.0, tf.TensorSpec((3,), tf.float32))
    with pytest.raises(ValueError, match="fully defined shape"):
        forward_flops(lambda x: x, tf.TensorSpec((None, 3), tf.float32))


def test_the_matmul_rate_is_a_plausible_rate():
    rate = matmul_rate(size=256, seconds=0.2)
    assert 1e8 < rate < 1e14  # FLOP/s: above 0.1 GFLOP/s, below 100 TFLOP/s.


def test_the_shallow_torso_is_about_a_third_of_the_nature_one():
    """The IMPALA paper's 16/32 network (torso="atari_shallow"), by hand: its two convolutions
    and a 256-unit head, against the Nature CNN with its 512-unit head."""
    from components.networks.atari import SHALLOW_LAYERS

    spec = tf.TensorSpec((1, 84, 84, 4), tf.uint8)
    shallow = snt.Sequential([AtariTorso(layers=SHALLOW_LAYERS), snt.Linear(256), tf.nn.relu,
                              snt.Linear(6)])
    nature = snt.Sequential([AtariTorso(), snt.Linear(512), tf.nn.relu, snt.Linear(6)])
    conv1 = 20 * 20 * 16 * (8 * 8 * 4)
    conv2 = 9 * 9 * 32 * (4 * 4 * 16)
    dense = 9 * 9 * 32 * 256 + 256 * 6
    small = forward_flops(shallow, spec).total
    assert small == 2 * (conv1 + conv2 + dense)
    assert 0.25 < small / forward_flops(nature, spec).total < 0.40
