"""A factorised Gaussian noisy linear layer (Fortunato et al. 2018, "Noisy Networks for Exploration").

Why: epsilon-greedy perturbs actions independently at every step, with one
hand-tuned rate. A noisy layer perturbs the weights instead, with a learned
scale per weight, so exploration is state-dependent and the agent can anneal it
where it has learned enough. Rainbow uses it in place of epsilon-greedy.

For inputs x [in] and outputs y [out]:

    y_j     = sum_i x_i (mu_ij + sigma_ij eps_ij) + mu_bj + sigma_bj eps_bj
    eps_ij  = f(e_i) f(e'_j),   eps_bj = f(e'_j),   f(u) = sign(u) sqrt(|u|)

with e [in] and e' [out] drawn from N(0, 1), in + out draws per call rather than
in * out (the factorised form, for Q-networks). Initialisation:
mu ~ U(-1/sqrt(in), 1/sqrt(in)) and sigma = sigma0 / sqrt(in), sigma0 = 0.5.

Since E[f(e)] = 0 and E[f(e)^2] = E|e| = sqrt(2/pi) =: c, the noise leaves the
mean output at the noiseless x mu_w + mu_b and adds, per output unit, the variance

    Var(y_j) = c * (c * sum_i x_i^2 sigma_ij^2 + sigma_bj^2).

The noise is drawn inside `__call__` (stateful random ops), so each call, eager or
under tf.function, gets fresh noise, shared by every row of the batch in that call.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import sonnet as snt
import tensorflow as tf


def _factorise(noise: tf.Tensor) -> tf.Tensor:
    """f(u) = sign(u) sqrt(|u|)."""
    return tf.sign(noise) * tf.sqrt(tf.abs(noise))


class NoisyLinear(snt.Module):
    """inputs [B, in] -> outputs [B, out], with factorised Gaussian weight noise.

    The variables, created on the first call, are mu_w and sigma_w [in, out] and
    mu_b and sigma_b [out], all trainable. `seed` is the op-level seed of the
    initialisers and of the noise: with `tf.random.set_seed` it makes both reproducible.
    """

    def __init__(self, output_size: int, sigma0: float = 0.5, seed: int | None = None,
                 name: str = "noisy_linear"):
        super().__init__(name=name)
        if output_size < 1:
            raise ValueError(f"output_size must be >= 1, got {output_size}")
        if sigma0 < 0:
            raise ValueError(f"sigma0 must be >= 0, got {sigma0}")
        self.output_size = int(output_size)
        self.sigma0 = float(sigma0)
        self._seed = seed

    @snt.once
    def _initialize(self, inputs: tf.Tensor) -> None:
        input_size = inputs.shape[-1]
        if input_size is None:
            raise ValueError(f"NoisyLinear needs a known input size, got shape {inputs.shape}")
        self.input_size = int(input_size)
        bound = 1.0 / math.sqrt(self.input_size)
        mu_init = snt.initializers.RandomUniform(-bound, bound, seed=self._seed)
        sigma = self.sigma0 / math.sqrt(self.input_size)
        self.mu_w = tf.Variable(mu_init([self.input_size, self.output_size], tf.float32),
                                name="mu_w")
        self.mu_b = tf.Variable(mu_init([self.output_size], tf.float32), name="mu_b")
        self.sigma_w = tf.Variable(tf.fill([self.input_size, self.output_size], sigma),
                                   name="sigma_w")
        self.sigma_b = tf.Variable(tf.fill([self.output_size], sigma), name="sigma_b")

    def __call__(self, inputs: tf.Tensor, noisy: bool = True) -> tf.Tensor:
        """y = x mu_w + mu_b, plus the factorised noise term when `noisy` (a Python bool).

        noisy=False is for evaluation: deterministic, the mean of the noisy outputs.
        """
        inputs = tf.cast(inputs, tf.float32)
        self._initialize(inputs)
        outputs = tf.matmul(inputs, self.mu_w) + self.mu_b
        if not noisy:
            return outputs
        noise = _factorise(tf.random.normal([self.input_size + self.output_size],
                                            seed=self._seed))
        f_in, f_out = noise[:self.input_size], noise[self.input_size:]
        # sum_i x_i sigma_ij f_in_i f_out_j without building the [in, out] noise matrix.
        weight_noise = tf.matmul(inputs * f_in, self.sigma_w) * f_out
        return outputs + weight_noise + self.sigma_b * f_out


class NoisyMLP(snt.Module):
    """NoisyLinear layers with ReLU between them (none after the last), as heads use snt.nets.MLP.

    Its noise is switched by the `noisy` attribute, not a call argument, so that
    it fits wherever an MLP is called with inputs alone (the categorical and
    dueling heads); `set_noise` switches every NoisyMLP inside a network, as an
    evaluation policy does once before it traces its step.
    """

    def __init__(self, output_sizes: Sequence[int], sigma0: float = 0.5, name: str = "noisy_mlp"):
        super().__init__(name=name)
        self.noisy = True
        self._layers = [NoisyLinear(int(size), sigma0, name=f"noisy_linear_{i}")
                        for i, size in enumerate(output_sizes)]

    def __call__(self, inputs: tf.Tensor) -> tf.Tensor:
        outputs = inputs
        for i, layer in enumerate(self._layers):
            outputs = layer(outputs, noisy=self.noisy)
            if i < len(self._layers) - 1:
                outputs = tf.nn.relu(outputs)
        return outputs


def set_noise(module: snt.Module, enabled: bool) -> int:
    """Turns the noise of every NoisyMLP in `module` on or off; returns how many it switched."""
    switched = 0
    for sub in [module, *module.submodules]:
        if isinstance(sub, NoisyMLP):
            sub.noisy = bool(enabled)
            switched += 1
    return switched
