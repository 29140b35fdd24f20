"""The convolutional torsos of Atari agents: the Nature DQN's (Mnih et al., 2015) and the
IMPALA paper's shallow one (Espeholt et al., 2018: 16 and 32 filters, about a third of the
Nature CNN's FLOPs)."""

from __future__ import annotations

import sonnet as snt
import tensorflow as tf

from components.networks.initializers import hidden_init
from components.networks.precision import resolve_compute_dtype

# The three valid-padding convolutions need at least this many pixels a side.
MIN_SIDE = 36
# (filters, kernel, stride) of each convolution.
NATURE_LAYERS = ((32, 8, 4), (64, 4, 2), (64, 3, 1))
SHALLOW_LAYERS = ((16, 8, 4), (32, 4, 2))


class AtariTorso(snt.Module):
    """uint8 [B, H, W, C] frames -> scaled to [0, 1] -> 3 conv layers -> flat features.

    With `compute_dtype="bfloat16"` the convolutions run in bfloat16 on float32
    weights (cast at each call; the optimizer keeps float32) and the features
    come back as float32: on CPUs with AVX-512 BF16 or AMX, oneDNN's bfloat16
    convolutions are about 1.8x its float32 ones (a DQN learner step about
    1.2x, bench/learner.py --compute_dtype=bfloat16). `"auto"` is bfloat16 on such
    CPUs and float32 elsewhere (`components.networks.precision`); `compute_dtype`
    holds the type chosen.
    """

    def __init__(self, compute_dtype: str = "float32", init: str = "default",
                 name: str = "atari_torso", layers=NATURE_LAYERS, input_scale: float = 1 / 255):
        super().__init__(name=name)
        # Frames are multiplied by this: 1/255 for raw pixels, 1 for inputs normalised before
        # the torso (components.networks.normalizer).
        self._input_scale = float(input_scale)
        self.compute_dtype = resolve_compute_dtype(compute_dtype)
        self._dtype = tf.as_dtype(self.compute_dtype)
        w_init = hidden_init(init)  # `init`: components.networks.initializers.INITS.
        self._convs = [snt.Conv2D(filters, [kernel, kernel], stride=[stride, stride],
                                  padding="VALID", w_init=w_init)
                       for filters, kernel, stride in layers]
        self._to_features = snt.Flatten()
        steps: list = []
        for conv in self._convs:
            steps += [conv, tf.nn.relu]
        self._network = snt.Sequential(steps + [self._to_features])

    def __call__(self, inputs: tf.Tensor) -> tf.Tensor:
        frames = tf.cast(inputs, tf.float32) * self._input_scale
        if self._dtype == tf.float32:
            return self._network(frames)
        if not hasattr(self._convs[-1], "w"):  # float32 variables, made by one frame's float32
            self._network(frames[:1])  # pass (networks are built eagerly on a dummy batch).
        h = tf.cast(frames, self._dtype)
        for conv in self._convs:
            h = tf.nn.conv2d(h, tf.cast(conv.w, self._dtype), conv.stride, conv.conv_padding)
            h = tf.nn.relu(h + tf.cast(conv.b, self._dtype))
        return tf.cast(self._to_features(h), tf.float32)
