"""D4PG's builder: n-step transitions between noisy deterministic actors and the learner.

The replay parts (table, dataset, adders) are the n-step transition ones
every such agent shares (`components.replay.NStepTransitionReplay`); this
builder adds D4PG's networks, policies, actors and learner.
"""

from __future__ import annotations

from collections.abc import Iterator

import reverb

from agentkit import core
from agentkit.adders import BatchedAdder
from agentkit.builders import Networks
from agentkit.counting import Counter
from agentkit.loggers import Logger
from agentkit.specs import EnvironmentSpec
from agents.d4pg.config import D4PGConfig
from agents.d4pg.learning import D4PGLearner
from agents.d4pg.networks import make_networks
from components.actors import GaussianNoisePolicy, network_actor
from components.learners import target_copies
from components.replay import NStepTransitionReplay


class D4PGBuilder(NStepTransitionReplay):
    """Makes D4PG's table, dataset, adders, policies, actors and learner."""

    config_class = D4PGConfig

    def make_networks(self, *, spec: EnvironmentSpec) -> Networks:
        return make_networks(spec, self.config)

    def make_policy(self, *, networks: Networks, spec: EnvironmentSpec,
                    evaluation: bool = False, seed: int = 0, actor_id: int = 0,
                    num_actors: int = 1) -> GaussianNoisePolicy:
        del actor_id, num_actors  # Every actor explores with the same sigma.
        sigma = 0.0 if evaluation else self.config.sigma
        return GaussianNoisePolicy(networks["policy"], spec, sigma, seed)

    def make_actor(self, *, policy: GaussianNoisePolicy, networks: Networks,
                   adder: BatchedAdder | None,
                   variable_source: core.VariableSource | None) -> core.Actor:
        return network_actor(policy, networks, adder, variable_source,
                             self.config.variable_update_period)

    def make_learner(self, *, networks: Networks, spec: EnvironmentSpec,
                     iterator: Iterator[reverb.ReplaySample], replay_address: str | None,
                     counter: Counter | None = None, logger: Logger | None = None,
                     seed: int = 0) -> D4PGLearner:
        del seed  # The learner draws nothing of its own.
        c = self.config
        io = self.learner_io(iterator, replay_address, counter, logger)
        targets = target_copies(networks, self.make_networks(spec=spec))
        return D4PGLearner(
            policy=networks["policy"],
            critic=networks["critic"],
            target_policy=targets["policy"],
            target_critic=targets["critic"],
            io=io,
            policy_learning_rate=c.policy_learning_rate,
            critic_learning_rate=c.critic_learning_rate,
            target_update_period=c.target_update_period,
            target_update_tau=c.target_update_tau,
            importance_sampling_exponent=c.importance_sampling_exponent if c.prioritized else 0.0,
            max_gradient_norm=c.max_gradient_norm,
        )
