"""IMPALA's builder: a queue of unrolls between sampling actors and a V-trace learner.

A feed-forward policy's actor writes one rollout per round of its
environments (`BatchedRolloutAdder`: one item of T steps of all K of them,
across episode ends, as PPO's); the learner's batches are `batch_size` of
those columns. A recurrent policy needs each unroll within one episode, to
restart its core from the stored state: one `UnrollAdder` per environment.

The builder knows nothing of launchers: the generic program in
launch_programs calls these methods inside whichever node needs each part.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import reverb
import tensorflow as tf

from agentkit import core
from agentkit.adders import BatchedAdder
from agentkit.builders import ActorLearnerBuilder, Networks
from agentkit.counting import Counter
from agentkit.loggers import Logger
from agentkit.specs import EnvironmentSpec
from agents.impala.config import IMPALAConfig
from agents.impala.learning import IMPALALearner
from agents.impala.networks import make_networks
from components.actors import (
    BatchedFeedForwardActor,
    BatchedRecurrentActor,
    RecurrentSamplingPolicy,
    SamplingPolicy,
)
from components.adders import (
    BatchedRolloutAdder,
    PerEnvironmentAdders,
    UnrollAdder,
    rollout_signature,
    unroll_signature,
)
from components.datasets import BatchingIterator, make_single_sample_iterator
from components.learners import make_learner_io
from components.replay import make_queue_table
from components.variable_client import make_variable_client


class IMPALABuilder(ActorLearnerBuilder):
    """Makes IMPALA's queue, batches, adder, policies, actors and learner."""

    config_class = IMPALAConfig
    learner_class = IMPALALearner  # A subclass changes the loss (APPO).
    table_name = "unroll_queue"

    @property
    def rollout_envs(self) -> int | None:
        """A feed-forward policy's item is a rollout of one group of environments (this many);
        an LSTM's is one environment's unroll (None), restarted from its stored core state."""
        return None if self.config.lstm_size else self.layout.envs_per_group

    def _extras_spec(self, spec: EnvironmentSpec) -> dict:
        """Behaviour logits and the weights' version; with an LSTM, also the core state each
        step began with."""
        extras = SamplingPolicy.extras_spec(spec)
        if self.config.lstm_size:
            size = self.config.lstm_size
            extras["core_state"] = (tf.TensorSpec((size,), tf.float32),
                                    tf.TensorSpec((size,), tf.float32))
        return extras

    def signature(self, spec: EnvironmentSpec) -> dict:
        """One item's: a rollout of `rollout_envs` environments, or one unroll."""
        if self.rollout_envs:
            return rollout_signature(spec, self.config.unroll_length, self.rollout_envs,
                                     self._extras_spec(spec))
        return unroll_signature(spec, self.config.unroll_length, self._extras_spec(spec))

    def make_networks(self, *, spec: EnvironmentSpec) -> Networks:
        return make_networks(spec, self.config)

    def make_replay_tables(self, *, spec: EnvironmentSpec) -> list[reverb.Table]:
        c = self.config
        if not self.rollout_envs:
            return [make_queue_table(self.table_name, self.signature(spec), c.max_queue_size,
                                     c.batch_size)]
        # max_queue_size counts unrolls: a rollout item holds rollout_envs of them.
        per_batch = -(-c.batch_size // self.rollout_envs)
        size = max(-(-c.max_queue_size // self.rollout_envs), per_batch + 2)
        return [make_queue_table(self.table_name, self.signature(spec), size, per_batch)]

    def make_dataset_iterator(
        self, *, replay_address: str, should_stop: Callable[[], bool] | None = None
    ) -> Iterator[dict]:
        """Batches of unrolls, each taken from the queue once and never dropped."""
        return BatchingIterator(
            lambda: make_single_sample_iterator(replay_address, self.table_name),
            self.config.batch_size, should_stop or (lambda: False),
            columns=bool(self.rollout_envs))

    def make_adder(self, *, replay_client: reverb.Client, spec: EnvironmentSpec,
                   num_envs: int) -> BatchedAdder:
        """A rollout adder of the group's environments, or with an LSTM one unroll adder per
        environment."""
        if not self.rollout_envs:
            return PerEnvironmentAdders([
                UnrollAdder(replay_client, self.table_name, self.config.unroll_length,
                            self._extras_spec(spec)) for _ in range(num_envs)])
        if num_envs != self.rollout_envs:
            raise ValueError(f"an adder of {num_envs} environments, but the builder's layout "
                             f"has {self.rollout_envs} a group")
        return BatchedRolloutAdder(replay_client, self.table_name, num_envs,
                                   self.config.unroll_length, self._extras_spec(spec),
                                   max_in_flight_items=1)

    def make_policy(
        self,
        *,
        networks: Networks,
        spec: EnvironmentSpec,
        evaluation: bool = False,
        seed: int = 0,
        actor_id: int = 0,
        num_actors: int = 1,
    ) -> SamplingPolicy:
        del actor_id, num_actors  # Every IMPALA actor samples from the same policy.
        greedy = evaluation and self.config.evaluation_greedy
        policy_class = RecurrentSamplingPolicy if self.config.lstm_size else SamplingPolicy
        return policy_class(networks["policy"], spec, greedy=greedy, seed=seed)

    def make_actor(
        self,
        *,
        policy: SamplingPolicy,
        networks: Networks,
        adder: BatchedAdder | None,
        variable_source: core.VariableSource | None,
    ) -> core.Actor:
        variables = {"policy": networks["policy"].variables}
        if variable_source is not None:  # Central inference: no source, and a stand-in policy.
            variables["policy_version"] = [policy.version]
        client = make_variable_client(variable_source, variables,
                                      self.config.variable_update_period)
        if self.config.lstm_size:
            return BatchedRecurrentActor(policy, networks["policy"].initial_state, adder, client)
        return BatchedFeedForwardActor(policy, adder, client, policy_has_extras=True)

    def make_learner(
        self,
        *,
        networks: Networks,
        spec: EnvironmentSpec,
        iterator: Iterator[dict],
        replay_address: str | None,
        counter: Counter | None = None,
        logger: Logger | None = None,
        seed: int = 0,
    ) -> IMPALALearner:
        del seed  # The learner draws nothing of its own (APPO's epochs take whole batches).
        # The queue removes what it hands out: no priorities to write back.
        io = make_learner_io(iterator, replay_address, counter=counter, logger=logger)
        return self.learner_class(io=io, **self._learner_kwargs(networks, spec))

    def _learner_kwargs(self, networks: Networks, spec: EnvironmentSpec) -> dict[str, Any]:
        """The learner's arguments from the config (a subclass adds its own)."""
        c = self.config
        clip_rho, clip_pg_rho = c.rho_thresholds
        return dict(
            network=networks["policy"],
            signature=self.signature(spec),
            discount=c.discount,
            learning_rate=c.learning_rate,
            learning_rate_final=c.learning_rate_final,
            learning_rate_decay_steps=c.learning_rate_decay_steps,
            optimizer=c.optimizer,
            epsilon=c.adam_epsilon,
            baseline_cost=c.baseline_cost,
            entropy_cost=c.entropy_cost,
            max_gradient_norm=c.max_gradient_norm,
            clip_rho_threshold=clip_rho,
            clip_pg_rho_threshold=clip_pg_rho,
            vtrace_lambda=c.vtrace_lambda,
            value_learning_rate=c.value_learning_rate or None,
            batch_size=c.batch_size,
            time_major=bool(self.rollout_envs),
        )
