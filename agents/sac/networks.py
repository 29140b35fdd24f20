"""SAC's networks: a tanh-squashed Gaussian policy and twin Q critics, ReLU MLPs."""

from __future__ import annotations

import sonnet as snt
import tensorflow as tf
import tree

from agentkit.specs import EnvironmentSpec, bounded_continuous_actions
from agents.sac.config import SACConfig
from components.networks import TanhGaussianPolicy, TwinCritic


def make_networks(spec: EnvironmentSpec, config: SACConfig) -> dict[str, snt.Module]:
    """{"policy", "critic"}, with variables created by a dummy batch (the learner's target
    critic is a second call of this)."""
    policy = TanhGaussianPolicy(bounded_continuous_actions(spec), config.policy_hidden_sizes)
    critic = TwinCritic(config.critic_hidden_sizes)
    dummy = tree.map_structure(lambda s: tf.zeros((1,) + tuple(s.shape), s.dtype),
                               spec.observations)
    critic(dummy, policy.mode(dummy))
    return {"policy": policy, "critic": critic}
