"""D4PG's networks: a deterministic policy and a distributional critic, both MLPs."""

from __future__ import annotations

import sonnet as snt
import tensorflow as tf
import tree

from agentkit.specs import EnvironmentSpec, bounded_continuous_actions
from agents.d4pg.config import D4PGConfig
from components.networks import DeterministicPolicy, DistributionalCritic


def make_networks(spec: EnvironmentSpec, config: D4PGConfig) -> dict[str, snt.Module]:
    """The policy and critic, with variables created by a dummy batch."""
    action_spec = bounded_continuous_actions(spec)
    policy = DeterministicPolicy(action_spec, config.policy_hidden_sizes, config.layer_norm)
    critic = DistributionalCritic(config.critic_hidden_sizes, config.v_min, config.v_max,
                                  config.num_atoms, config.layer_norm)
    dummy = tree.map_structure(lambda s: tf.zeros((1,) + tuple(s.shape), s.dtype),
                               spec.observations)
    critic(dummy, policy(dummy))
    return {"policy": policy, "critic": critic}
