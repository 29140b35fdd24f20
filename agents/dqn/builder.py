"""DQN's builder: the parts a program needs, each made from the config.

The builder knows nothing of launchers: the generic program in
launch_programs calls these methods inside whichever node needs each part.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

import reverb
import sonnet as snt

from agentkit import core
from agentkit.counting import Counter
from agentkit.loggers import Logger
from agentkit.specs import EnvironmentSpec
from agents.dqn.acting import EpsilonGreedyPolicy, TDPriority
from agents.dqn.config import DQNConfig
from agents.dqn.learning import DQNLearner
from agents.dqn.networks import copy_network, make_networks
from components.actors import BatchedFeedForwardActor, FeedForwardActor, apex_epsilon
from components.adders import (
    Adder,
    BatchedAdder,
    BatchedNStepTransitionAdder,
    NStepTransitionAdder,
)
from components.datasets import make_batch_iterator
from components.replay import make_rate_limiter, make_replay_table, transition_signature
from components.variable_client import VariableClient

Networks = dict[str, snt.Module]


class DQNBuilder:
    """Makes DQN's tables, dataset, adder, policies, actors and learner."""

    table_name = "priority_table"
    variable_names = ("q",)

    def __init__(self, config: DQNConfig):
        self.config = config

    def make_networks(self, spec: EnvironmentSpec) -> Networks:
        return make_networks(spec, self.config)

    def make_replay_tables(self, spec: EnvironmentSpec) -> list[reverb.Table]:
        c = self.config
        limiter = make_rate_limiter(c.samples_per_insert, c.min_replay_size)
        return [
            make_replay_table(
                self.table_name, transition_signature(spec), c.max_replay_size, limiter,
                prioritized=c.prioritized, priority_exponent=c.priority_exponent,
            )
        ]

    def make_dataset_iterator(
        self, replay_address: str, should_stop: Callable[[], bool] | None = None
    ) -> Iterator[reverb.ReplaySample]:
        """Batches of transitions; restarts after rate-limiter timeouts, ends on should_stop.

        Each batch holds the transitions of one learner call:
        batch_size x num_sgd_steps_per_step.
        """
        c = self.config
        return make_batch_iterator(replay_address, self.table_name,
                                   c.batch_size * c.num_sgd_steps_per_step, c.prefetch_size,
                                   should_stop)

    @property
    def _actor_priorities(self) -> bool:
        return self.config.prioritized and self.config.actor_priorities

    def make_adder(self, replay_client: reverb.Client, spec: EnvironmentSpec | None = None
                   ) -> Adder:
        del spec  # Transitions need nothing beyond the table's signature.
        c = self.config
        return NStepTransitionAdder(
            replay_client, self.table_name, n_step=c.n_step, discount=c.discount,
            max_in_flight_items=c.max_in_flight_items,
            defer_items=self._actor_priorities,  # The actor writes them with priorities.
        )

    def make_batched_adder(self, replay_client: reverb.Client, spec: EnvironmentSpec,
                           num_envs: int) -> BatchedNStepTransitionAdder:
        """The same items for K lock-stepped environments, at a fraction of the Python cost."""
        del spec
        c = self.config
        return BatchedNStepTransitionAdder(
            replay_client, self.table_name, num_envs, n_step=c.n_step, discount=c.discount,
            max_in_flight_items=c.max_in_flight_items, defer_items=self._actor_priorities)

    def make_policy(
        self,
        networks: Networks,
        spec: EnvironmentSpec,
        evaluation: bool = False,
        seed: int = 0,
        actor_id: int = 0,
        num_actors: int = 1,
    ) -> EpsilonGreedyPolicy:
        c = self.config
        if evaluation:
            return EpsilonGreedyPolicy(networks["q"], spec, c.epsilon_eval, c.epsilon_eval, 0, seed)
        if c.apex_epsilons:
            epsilon = apex_epsilon(actor_id, num_actors)
            return EpsilonGreedyPolicy(networks["q"], spec, epsilon, epsilon, 0, seed)
        return EpsilonGreedyPolicy(
            networks["q"], spec, c.epsilon_init, c.epsilon_final, c.epsilon_decay_steps, seed
        )

    def make_actor(
        self,
        policy: EpsilonGreedyPolicy,
        networks: Networks,
        adders: Sequence[Adder] | BatchedAdder | None,
        variable_source: core.VariableSource | None,
        batched: bool = True,
    ) -> core.Actor:
        """A batched actor (one adder per environment, or one batched adder) or a
        single-environment one."""
        client = None
        if variable_source is not None:
            client = VariableClient(
                variable_source, {"q": networks["q"].variables},
                update_period=self.config.variable_update_period,
            )
        priority_fn = None
        if adders and self._actor_priorities:
            priority_fn = TDPriority(networks["q"], policy.spec, policy)
        if batched:
            fused = priority_fn.with_actions if priority_fn is not None else None
            return BatchedFeedForwardActor(policy, adders, client, priority_fn,
                                           fused_priority_policy=fused)
        adder = adders[0] if adders else None
        return FeedForwardActor(policy, adder, client, priority_fn)

    def make_learner(
        self,
        networks: Networks,
        spec: EnvironmentSpec,
        iterator: Iterator[reverb.ReplaySample],
        replay_address: str | None,
        counter: Counter | None = None,
        logger: Logger | None = None,
    ) -> DQNLearner:
        c = self.config
        client = None
        if c.prioritized and replay_address is not None:
            client = reverb.TFClient(replay_address)
        return DQNLearner(
            network=networks["q"],
            target_network=copy_network(networks["q"], spec, c),
            iterator=iterator,
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
            batches_per_call=c.batches_per_call,
            replay_client=client,
            table=self.table_name,
            counter=counter,
            logger=logger,
        )
