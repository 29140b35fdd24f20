"""DQN's builder: n-step transitions between epsilon-greedy actors and the learner.

The replay parts (table, dataset, adders) are the n-step transition ones
every such agent shares (`components.replay.NStepTransitionReplay`); this
builder adds DQN's networks, policies, actors and learner.
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
from agents.dqn.config import DQNConfig
from agents.dqn.learning import DQNLearner
from agents.dqn.networks import make_q_network
from components.actors import BatchedFeedForwardActor, EpsilonGreedyPolicy, TDPriority, apex_epsilon
from components.learners import target_copies
from components.replay import NStepTransitionReplay
from components.variable_client import make_variable_client


class DQNBuilder(NStepTransitionReplay):
    """Makes DQN's tables, dataset, adders, policies, actors and learner."""

    config_class = DQNConfig

    def central_inference_problem(self) -> str | None:
        if self._defer_items:
            return ("actors give new items their |TD| with weights of their own (Ape-X); "
                    "add --actor_priorities=false")
        return None

    @property
    def _defer_items(self) -> bool:
        """Ape-X: the actor writes its items with their |TD| as priorities."""
        return self.config.prioritized and self.config.actor_priorities

    @property
    def _items_per_batch(self) -> int:
        return self.config.batch_size * self.config.num_sgd_steps_per_step

    def make_policy(self, *, networks: Networks, spec: EnvironmentSpec,
                    evaluation: bool = False, seed: int = 0, actor_id: int = 0,
                    num_actors: int = 1) -> EpsilonGreedyPolicy:
        c = self.config
        if evaluation:
            return EpsilonGreedyPolicy(networks["q"], spec, c.epsilon_eval, c.epsilon_eval, 0, seed)
        if c.apex_epsilons:
            epsilon = apex_epsilon(actor_id, num_actors)
            return EpsilonGreedyPolicy(networks["q"], spec, epsilon, epsilon, 0, seed)
        return EpsilonGreedyPolicy(
            networks["q"], spec, c.epsilon_init, c.epsilon_final, c.epsilon_decay_steps, seed
        )

    def make_actor(self, *, policy: EpsilonGreedyPolicy, networks: Networks,
                   adder: BatchedAdder | None,
                   variable_source: core.VariableSource | None) -> core.Actor:
        """A batched actor; with Ape-X priorities, it gives its items their priorities."""
        client = make_variable_client(variable_source, {"q": networks["q"].variables},
                                      self.config.variable_update_period)
        priority_fn = None
        if adder is not None and self._defer_items:
            priority_fn = TDPriority(networks["q"], policy.spec, policy)
        fused = priority_fn.with_actions if priority_fn is not None else None
        return BatchedFeedForwardActor(policy, adder, client, priority_fn,
                                       fused_priority_policy=fused)

    def make_networks(self, *, spec: EnvironmentSpec) -> Networks:
        """{"q": a Q-network, [B, ...] observations -> [B, A] values}: the one network hook
        (Rainbow's, or an agent's outside the repository, returns its own); the learner's
        target is a second call of it."""
        return {"q": make_q_network(spec, self.config)}

    learner_class = DQNLearner  # An agent with another loss (Rainbow) names its own.

    def make_learner(self, *, networks: Networks, spec: EnvironmentSpec,
                     iterator: Iterator[reverb.ReplaySample], replay_address: str | None,
                     counter: Counter | None = None, logger: Logger | None = None,
                     seed: int = 0) -> DQNLearner:
        del seed  # The learner draws nothing of its own.
        c = self.config
        io = self.learner_io(iterator, replay_address, counter, logger)
        return self.learner_class(
            network=networks["q"],
            target_network=target_copies(networks, self.make_networks(spec=spec))["q"],
            io=io,
            learning_rate=c.learning_rate,
            target_update_period=c.target_update_period,
            target_update_tau=c.target_update_tau,
            learning_rate_final=c.learning_rate_final,
            learning_rate_decay_steps=c.learning_rate_decay_steps,
            huber_loss_parameter=c.huber_loss_parameter,
            importance_sampling_exponent=c.importance_sampling_exponent if c.prioritized else 0.0,
            max_gradient_norm=c.max_gradient_norm,
            adam_epsilon=c.adam_epsilon,
            double_q=c.double_q,
            num_sgd_steps_per_step=c.num_sgd_steps_per_step,
        )
