"""IMPALA's network: `components.networks.make_policy_value_network` from its config's fields."""

from __future__ import annotations

import sonnet as snt

from agentkit.specs import EnvironmentSpec
from agents.impala.config import IMPALAConfig
from components.networks import make_policy_value_network


def make_networks(spec: EnvironmentSpec, config: IMPALAConfig) -> dict[str, snt.Module]:
    return {"policy": make_policy_value_network(
        spec, torso=config.torso, hidden_sizes=config.hidden_sizes,
        head_hidden_size=config.head_hidden_size, shared_torso=config.shared_torso,
        lstm_size=config.lstm_size, compute_dtype=config.compute_dtype,
        init=config.network_init, activation=config.activation,
        normalize_observations=config.normalize_observations)}
