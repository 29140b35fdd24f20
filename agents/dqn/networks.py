"""DQN's Q-network: a torso chosen from the observation spec and a (dueling) head."""

from __future__ import annotations

import sonnet as snt
import tensorflow as tf
import tree

from agentkit.specs import EnvironmentSpec, num_discrete_actions
from agents.dqn.config import DQNConfig
from components.networks import DuelingHead, make_torso


def make_q_network(spec: EnvironmentSpec, config: DQNConfig) -> snt.Module:
    """Builds the Q-network and creates its variables with a dummy batch."""
    num_actions = num_discrete_actions(spec)
    head_hidden = [config.head_hidden_size] if config.head_hidden_size else []
    if config.dueling:
        head = DuelingHead(num_actions, head_hidden)
    else:
        head = snt.nets.MLP(head_hidden + [num_actions])
    torso = make_torso(spec, config.torso, config.hidden_sizes, config.compute_dtype)
    network = snt.Sequential([torso, head])
    dummy = tree.map_structure(
        lambda s: tf.zeros((1,) + tuple(s.shape), s.dtype), spec.observations
    )
    network(dummy)  # Create variables now: actors and checkpoints need them.
    return network


def make_networks(spec: EnvironmentSpec, config: DQNConfig) -> dict[str, snt.Module]:
    """The online network; the learner copies it into its target network."""
    return {"q": make_q_network(spec, config)}
