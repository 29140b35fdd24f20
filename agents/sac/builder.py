"""SAC's builder: n-step transitions between tanh-Gaussian actors and the learner.

The replay parts (table, dataset, adders) are the n-step transition ones every such agent
shares (`components.replay.NStepTransitionReplay`); the policy and critic networks
(`components.networks.TanhGaussianPolicy`, `TwinCritic`) and the acting policy
(`components.actors.SquashedGaussianPolicy`) are components too; this builder adds SAC's
learner and its choices.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import reverb

from agentkit import core
from agentkit.adders import BatchedAdder
from agentkit.builders import Networks
from agentkit.counting import Counter
from agentkit.loggers import Logger
from agentkit.specs import EnvironmentSpec, bounded_continuous_actions
from agents.sac.config import SACConfig
from agents.sac.learning import SACLearner
from agents.sac.networks import make_networks
from components.actors import SquashedGaussianPolicy, network_actor
from components.learners import target_copies
from components.replay import NStepTransitionReplay


class SACBuilder(NStepTransitionReplay):
    """Makes SAC's table, dataset, adders, policies, actors and learner."""

    config_class = SACConfig

    def make_networks(self, *, spec: EnvironmentSpec) -> Networks:
        return make_networks(spec, self.config)

    def make_policy(self, *, networks: Networks, spec: EnvironmentSpec,
                    evaluation: bool = False, seed: int = 0, actor_id: int = 0,
                    num_actors: int = 1) -> SquashedGaussianPolicy:
        """Samples while training; the evaluator takes the Gaussian's mean (SAC's
        deterministic evaluation)."""
        del num_actors
        return SquashedGaussianPolicy(networks["policy"], spec, deterministic=evaluation,
                                      seed=seed * 1_000 + actor_id)

    def make_actor(self, *, policy: SquashedGaussianPolicy, networks: Networks,
                   adder: BatchedAdder | None,
                   variable_source: core.VariableSource | None) -> core.Actor:
        return network_actor(policy, networks, adder, variable_source,
                             self.config.variable_update_period)

    def make_learner(self, *, networks: Networks, spec: EnvironmentSpec,
                     iterator: Iterator[reverb.ReplaySample], replay_address: str | None,
                     counter: Counter | None = None, logger: Logger | None = None,
                     seed: int = 0) -> SACLearner:
        c = self.config
        io = self.learner_io(iterator, replay_address, counter, logger)
        dimensions = int(np.prod(bounded_continuous_actions(spec).shape))
        target_entropy = c.target_entropy_per_dimension * dimensions  # SAC's: -dim(A).
        return SACLearner(
            policy=networks["policy"], critic=networks["critic"],
            target_critic=target_copies(networks, self.make_networks(spec=spec))["critic"],
            io=io, policy_learning_rate=c.policy_learning_rate,
            critic_learning_rate=c.critic_learning_rate,
            temperature_learning_rate=c.temperature_learning_rate,
            initial_temperature=c.initial_temperature, target_entropy=target_entropy,
            target_update_tau=c.target_update_tau, target_update_period=c.target_update_period,
            importance_sampling_exponent=c.importance_sampling_exponent if c.prioritized else 0.0,
            max_gradient_norm=c.max_gradient_norm, seed=seed)
