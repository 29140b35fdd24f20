"""R2D2's network: a torso chosen from the observation spec, an LSTM core, a dueling head."""

from __future__ import annotations

import sonnet as snt
import tensorflow as tf
import tree

from agentkit.specs import EnvironmentSpec, num_discrete_actions
from agents.r2d2.config import R2D2Config
from components.networks import RecurrentQNetwork, make_torso


def make_recurrent_q_network(spec: EnvironmentSpec, config: R2D2Config) -> RecurrentQNetwork:
    """Builds the network and creates its variables with a dummy step."""
    head_hidden = [config.head_hidden_size] if config.head_hidden_size else []
    torso = make_torso(spec, config.torso, config.hidden_sizes, config.compute_dtype)
    if config.torso_features:
        torso = snt.Sequential([torso, snt.Linear(config.torso_features), tf.nn.relu],
                               name="torso_with_features")
    network = RecurrentQNetwork(torso,
                                config.lstm_size, num_discrete_actions(spec), config.dueling,
                                head_hidden)
    dummy = tree.map_structure(lambda s: tf.zeros((1,) + tuple(s.shape), s.dtype),
                               spec.observations)
    network(dummy, network.initial_state(1))  # Actors and checkpoints need the variables.
    return network


def make_networks(spec: EnvironmentSpec, config: R2D2Config) -> dict:
    """The online network; the learner copies it into its target network."""
    return {"q": make_recurrent_q_network(spec, config)}
