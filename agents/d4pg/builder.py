"""D4PG's builder: n-step transitions between noisy deterministic actors and the learner.

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
from agents.d4pg.acting import GaussianNoisePolicy
from agents.d4pg.config import D4PGConfig
from agents.d4pg.learning import D4PGLearner
from agents.d4pg.networks import copy_networks, make_networks
from components.actors import BatchedFeedForwardActor
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


class D4PGBuilder:
    """Makes D4PG's table, dataset, adder, policies, actors and learner."""

    table_name = "priority_table"
    variable_names = ("policy",)

    def __init__(self, config: D4PGConfig):
        self.config = config

    def make_networks(self, spec: EnvironmentSpec) -> Networks:
        return make_networks(spec, self.config)

    def make_replay_tables(self, spec: EnvironmentSpec) -> list[reverb.Table]:
        c = self.config
        limiter = make_rate_limiter(c.samples_per_insert, c.min_replay_size)
        return [make_replay_table(self.table_name, transition_signature(spec), c.max_replay_size,
                                  limiter, prioritized=c.prioritized,
                                  priority_exponent=c.priority_exponent)]

    def make_dataset_iterator(
        self, replay_address: str, should_stop: Callable[[], bool] | None = None
    ) -> Iterator[reverb.ReplaySample]:
        """Batches of transitions; restarts after rate-limiter timeouts, ends on should_stop."""
        return make_batch_iterator(replay_address, self.table_name, self.config.batch_size,
                                   self.config.prefetch_size, should_stop)

    def make_adder(self, replay_client: reverb.Client, spec: EnvironmentSpec | None = None
                   ) -> Adder:
        del spec  # Transitions need nothing beyond the table's signature.
        c = self.config
        return NStepTransitionAdder(replay_client, self.table_name, n_step=c.n_step,
                                    discount=c.discount,
                                    max_in_flight_items=c.max_in_flight_items)

    def make_batched_adder(self, replay_client: reverb.Client, spec: EnvironmentSpec,
                           num_envs: int) -> BatchedNStepTransitionAdder:
        """The same items for K lock-stepped environments, at a fraction of the Python cost."""
        del spec
        c = self.config
        return BatchedNStepTransitionAdder(replay_client, self.table_name, num_envs,
                                           n_step=c.n_step, discount=c.discount,
                                           max_in_flight_items=c.max_in_flight_items)

    def make_policy(
        self,
        networks: Networks,
        spec: EnvironmentSpec,
        evaluation: bool = False,
        seed: int = 0,
        actor_id: int = 0,
        num_actors: int = 1,
    ) -> GaussianNoisePolicy:
        del actor_id, num_actors  # Every actor explores with the same sigma.
        sigma = 0.0 if evaluation else self.config.sigma
        return GaussianNoisePolicy(networks["policy"], spec, sigma, seed)

    def make_actor(
        self,
        policy: GaussianNoisePolicy,
        networks: Networks,
        adders: Sequence[Adder] | BatchedAdder | None,
        variable_source: core.VariableSource | None,
    ) -> core.Actor:
        client = None
        if variable_source is not None:
            client = VariableClient(variable_source, {"policy": networks["policy"].variables},
                                    update_period=self.config.variable_update_period)
        return BatchedFeedForwardActor(policy, adders, client)

    def make_learner(
        self,
        networks: Networks,
        spec: EnvironmentSpec,
        iterator: Iterator[reverb.ReplaySample],
        replay_address: str | None,
        counter: Counter | None = None,
        logger: Logger | None = None,
    ) -> D4PGLearner:
        c = self.config
        client = None
        if c.prioritized and replay_address is not None:
            client = reverb.TFClient(replay_address)
        targets = copy_networks(networks, spec, c)
        return D4PGLearner(
            policy=networks["policy"],
            critic=networks["critic"],
            target_policy=targets["policy"],
            target_critic=targets["critic"],
            iterator=iterator,
            policy_learning_rate=c.policy_learning_rate,
            critic_learning_rate=c.critic_learning_rate,
            target_update_period=c.target_update_period,
            target_update_tau=c.target_update_tau,
            importance_sampling_exponent=c.importance_sampling_exponent if c.prioritized else 0.0,
            max_gradient_norm=c.max_gradient_norm,
            batches_per_call=c.batches_per_call,
            replay_client=client,
            table=self.table_name,
            counter=counter,
            logger=logger,
        )
