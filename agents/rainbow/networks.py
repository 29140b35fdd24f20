"""Rainbow's Q-network: DQN's torso, a (dueling) categorical head, noisy linear layers in the head.

`logits(o)` gives [B, A, N] (N atoms per action); calling the network gives
the Q-values [B, A] (each action's mean return), so that the epsilon-greedy
policy, the actor's priorities and DQN's learner (the `num_atoms=1`
ablation, where the head is DQN's scalar one) use it as any Q-network.
"""

from __future__ import annotations

import functools

import sonnet as snt
import tensorflow as tf
import tree

from agentkit.specs import EnvironmentSpec, num_discrete_actions
from agents.rainbow.config import RainbowConfig
from components.networks import CategoricalQHead, DuelingHead, NoisyMLP, make_torso


class RainbowNetwork(snt.Module):
    """observations -> Q-values [B, A]; `logits` -> [B, A, N] with N = num_atoms > 1."""

    def __init__(self, spec: EnvironmentSpec, config: RainbowConfig, name: str = "rainbow"):
        super().__init__(name=name)
        num_actions = num_discrete_actions(spec)
        hidden = [config.head_hidden_size] if config.head_hidden_size else []
        mlp = functools.partial(NoisyMLP, sigma0=config.sigma0) if config.noisy else snt.nets.MLP
        self.num_atoms = config.num_atoms
        self._torso = make_torso(spec, config.torso, config.hidden_sizes, config.compute_dtype)
        if config.num_atoms > 1:
            self._head = CategoricalQHead(num_actions, config.num_atoms, config.v_min,
                                          config.v_max, hidden, config.dueling, mlp=mlp)
            self.atoms = self._head.atoms
        elif config.dueling:
            self._head = DuelingHead(num_actions, hidden, mlp=mlp)
        else:
            self._head = mlp(hidden + [num_actions])

    def logits(self, observation) -> tf.Tensor:
        if self.num_atoms == 1:
            raise ValueError("a scalar (num_atoms=1) network has no return distribution")
        return self._head(self._torso(observation))

    def q_values(self, logits: tf.Tensor) -> tf.Tensor:
        return self._head.q_values(logits)

    def __call__(self, observation) -> tf.Tensor:
        out = self._head(self._torso(observation))
        return self._head.q_values(out) if self.num_atoms > 1 else out


def make_network(spec: EnvironmentSpec, config: RainbowConfig) -> RainbowNetwork:
    """Builds the network and creates its variables with a dummy batch."""
    network = RainbowNetwork(spec, config)
    network(tree.map_structure(lambda s: tf.zeros((1,) + tuple(s.shape), s.dtype),
                               spec.observations))
    return network


def make_networks(spec: EnvironmentSpec, config: RainbowConfig) -> dict[str, snt.Module]:
    """The online network; the learner copies it into its target network."""
    return {"q": make_network(spec, config)}
