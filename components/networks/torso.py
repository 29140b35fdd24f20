"""Picks a torso from the observation spec: the Nature CNN for frames, MinAtar's convolution
for small grids, else an MLP."""

from __future__ import annotations

from collections.abc import Sequence

import sonnet as snt

from agentkit.config import ConfigError
from agentkit.specs import EnvironmentSpec
from components.networks.atari import MIN_SIDE, SHALLOW_LAYERS, AtariTorso
from components.networks.minatar import MinAtarTorso
from components.networks.mlp import MLPTorso

TORSOS = ("auto", "mlp", "atari", "atari_shallow", "minatar")


def make_torso(spec: EnvironmentSpec, kind: str, hidden_sizes: Sequence[int],
               compute_dtype: str = "float32", init: str = "default",
               activation: str = "relu", normalized_inputs: bool = False) -> snt.Module:
    """`kind` is "mlp", "atari" (Nature CNN), "atari_shallow" (the IMPALA paper's 16/32 CNN),
    "minatar" or "auto": atari for [H, W, C] observations at
    least MIN_SIDE a side, minatar for smaller grids, mlp for the rest. `compute_dtype`
    ("float32" or "bfloat16") is the Nature CNN's (the other torsos compute in float32);
    `init` its weights' initialiser (`components.networks.initializers`); `activation` the
    MLP's nonlinearity (`components.networks.mlp.ACTIVATIONS`; the convolutions use ReLU).
    `normalized_inputs`: the observations come normalised (components.networks.normalizer),
    so the Atari torsos take them as they are instead of dividing pixels by 255."""
    shape = spec.observations.shape
    if kind not in TORSOS:
        raise ConfigError(f"--torso: must be one of {', '.join(TORSOS)}, got {kind!r}")
    if kind == "auto":
        if len(shape) == 3:
            kind = "atari" if min(shape[:2]) >= MIN_SIDE else "minatar"
        else:
            kind = "mlp"
    if kind == "minatar":
        if len(shape) != 3 or min(shape[:2]) < 3:
            raise ConfigError(f"--torso: 'minatar' needs [H, W, C] observations with H, W >= 3, "
                              f"got shape {tuple(shape)}")
        return MinAtarTorso(init)
    if kind in ("atari", "atari_shallow"):
        if len(shape) != 3 or min(shape[:2]) < MIN_SIDE:
            raise ConfigError(
                f"--torso: '{kind}' needs [H, W, C] observations with H, W >= {MIN_SIDE}, "
                f"got shape {tuple(shape)}"
            )
        scale = 1.0 if normalized_inputs else 1 / 255
        if kind == "atari_shallow":
            return AtariTorso(compute_dtype, init, name="atari_shallow_torso",
                              layers=SHALLOW_LAYERS, input_scale=scale)
        return AtariTorso(compute_dtype, init, input_scale=scale)
    return MLPTorso(hidden_sizes, init, activation)
