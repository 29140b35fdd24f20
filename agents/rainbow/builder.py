"""Rainbow's builder: DQN's n-step replay, actors and Ape-X parts with Rainbow's network and loss.

Everything but the network, the policy's exploration and the learner is
DQN's (`agents.dqn.DQNBuilder`): the n-step table, dataset and adders,
the batched actor, the variable client.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import reverb

from agentkit.builders import Networks
from agentkit.config import field_values
from agentkit.counting import Counter
from agentkit.loggers import Logger
from agentkit.specs import EnvironmentSpec
from agents.dqn import DQNBuilder
from agents.rainbow.config import RainbowConfig
from agents.rainbow.learning import RainbowLearner
from agents.rainbow.networks import copy_network, make_networks
from components.actors import EpsilonGreedyPolicy
from components.learners import make_learner_io
from components.networks import set_noise


class RainbowBuilder(DQNBuilder):
    """Makes Rainbow's networks, policies and learner on top of DQN's parts."""

    config_class = RainbowConfig

    @classmethod
    def preset(cls, env: str) -> dict[str, Any]:
        return field_values(RainbowConfig.atari()) if env.startswith("atari:") else {}

    def make_networks(self, *, spec: EnvironmentSpec) -> Networks:
        return make_networks(spec, self.config)

    def make_policy(self, *, networks: Networks, spec: EnvironmentSpec,
                    evaluation: bool = False, seed: int = 0, actor_id: int = 0,
                    num_actors: int = 1) -> EpsilonGreedyPolicy:
        """With noisy nets, actors are greedy on noisy Q-values (fresh noise every step) and
        the evaluator greedy on the noiseless mean; without, DQN's epsilon-greedy."""
        if evaluation:
            set_noise(networks["q"], False)  # The evaluator's own networks: deterministic.
            eps = self.config.epsilon_eval
            return EpsilonGreedyPolicy(networks["q"], spec, eps, eps, 0, seed)
        if self.config.noisy:
            return EpsilonGreedyPolicy(networks["q"], spec, 0.0, 0.0, 0, seed)
        return super().make_policy(networks=networks, spec=spec, seed=seed, actor_id=actor_id,
                                   num_actors=num_actors)

    def _target_network(self, network, spec: EnvironmentSpec):
        return copy_network(network, spec, self.config)

    def make_learner(self, *, networks: Networks, spec: EnvironmentSpec,
                     iterator: Iterator[reverb.ReplaySample], replay_address: str | None,
                     counter: Counter | None = None, logger: Logger | None = None):
        c = self.config
        if c.num_atoms == 1:  # The ablation: a scalar (noisy, dueling) Q-network and DQN's loss.
            return super().make_learner(networks=networks, spec=spec, iterator=iterator,
                                        replay_address=replay_address, counter=counter,
                                        logger=logger)
        io = make_learner_io(iterator, replay_address, self.table_name, c.prioritized, counter,
                             logger, c.batches_per_call)
        return RainbowLearner(
            network=networks["q"],
            target_network=self._target_network(networks["q"], spec),
            io=io,
            learning_rate=c.learning_rate,
            target_update_period=c.target_update_period,
            target_update_tau=c.target_update_tau,
            learning_rate_final=c.learning_rate_final,
            learning_rate_decay_steps=c.learning_rate_decay_steps,
            importance_sampling_exponent=c.importance_sampling_exponent if c.prioritized else 0.0,
            max_gradient_norm=c.max_gradient_norm,
            adam_epsilon=c.adam_epsilon,
            double_q=c.double_q,
            num_sgd_steps_per_step=c.num_sgd_steps_per_step,
        )
