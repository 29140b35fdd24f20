"""R2D2's builder: a prioritized table of sequences between recurrent actors and the learner.

The builder knows nothing of launchers: the generic program in
launch_programs calls these methods inside whichever node needs each part.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import reverb
import tensorflow as tf

from agentkit import core
from agentkit.adders import BatchedAdder
from agentkit.builders import ActorLearnerBuilder, Networks
from agentkit.counting import Counter
from agentkit.loggers import Logger
from agentkit.specs import EnvironmentSpec
from agents.r2d2.config import R2D2Config
from agents.r2d2.learning import R2D2Learner
from agents.r2d2.networks import make_networks
from components.actors import BatchedRecurrentActor, RecurrentEpsilonGreedyPolicy, apex_epsilon
from components.adders import PerEnvironmentAdders, SequenceAdder, sequence_signature
from components.datasets import make_batch_iterator
from components.learners import make_learner_io, target_copies
from components.replay import make_rate_limiter, make_replay_table
from components.variable_client import make_variable_client


class R2D2Builder(ActorLearnerBuilder):
    """Makes R2D2's table, dataset, sequence adder, policies, actors and learner."""

    config_class = R2D2Config
    table_name = "priority_table"

    def _extras_spec(self) -> dict:
        """The core state each step began with (the learner restarts from step 0's)."""
        state = tf.TensorSpec((self.config.lstm_size,), tf.float32)
        return {"core_state": (state, state)}

    def signature(self, spec: EnvironmentSpec) -> dict:
        return sequence_signature(spec, self.config.sequence_length, self._extras_spec())

    def make_networks(self, *, spec: EnvironmentSpec) -> Networks:
        return make_networks(spec, self.config)

    def make_replay_tables(self, *, spec: EnvironmentSpec) -> list[reverb.Table]:
        c = self.config
        limiter = make_rate_limiter(c.samples_per_insert, c.min_replay_size)
        return [make_replay_table(self.table_name, self.signature(spec), c.max_replay_size,
                                  limiter, prioritized=True, priority_exponent=c.priority_exponent)]

    def make_dataset_iterator(
        self, *, replay_address: str, should_stop: Callable[[], bool] | None = None
    ) -> Iterator[reverb.ReplaySample]:
        """Batches of sequences; restarts after rate-limiter timeouts, ends on should_stop."""
        return make_batch_iterator(replay_address, self.table_name, self.config.batch_size,
                                   self.config.prefetch_size, should_stop)

    def make_adder(self, *, replay_client: reverb.Client, spec: EnvironmentSpec,
                   num_envs: int) -> BatchedAdder:
        """One sequence adder per environment (a sequence stays within its episode)."""
        del spec  # The signature is the table's; the adders need only the extras.
        c = self.config
        return PerEnvironmentAdders([
            SequenceAdder(replay_client, self.table_name, c.sequence_length, c.period,
                          self._extras_spec(), max_in_flight_items=c.max_in_flight_items)
            for _ in range(num_envs)])

    def make_policy(
        self,
        *,
        networks: Networks,
        spec: EnvironmentSpec,
        evaluation: bool = False,
        seed: int = 0,
        actor_id: int = 0,
        num_actors: int = 1,
    ) -> RecurrentEpsilonGreedyPolicy:
        c = self.config
        if evaluation:
            epsilon = c.epsilon_eval
        elif c.epsilon_per_environment:  # Row r of this actor's calls: environment i of N.
            rows = self.layout.envs_per_group
            epsilon = [apex_epsilon(actor_id * rows + r, num_actors * rows, c.epsilon_base,
                                    c.epsilon_alpha) for r in range(rows)]
        else:
            epsilon = apex_epsilon(actor_id, num_actors, c.epsilon_base, c.epsilon_alpha)
        return RecurrentEpsilonGreedyPolicy(networks["q"], spec, epsilon, seed)

    def make_actor(
        self,
        *,
        policy: RecurrentEpsilonGreedyPolicy,
        networks: Networks,
        adder: BatchedAdder | None,
        variable_source: core.VariableSource | None,
    ) -> core.Actor:
        client = make_variable_client(variable_source, {"q": networks["q"].variables},
                                      self.config.variable_update_period)
        return BatchedRecurrentActor(policy, networks["q"].initial_state, adder, client)

    def make_learner(
        self,
        *,
        networks: Networks,
        spec: EnvironmentSpec,
        iterator: Iterator[reverb.ReplaySample],
        replay_address: str | None,
        counter: Counter | None = None,
        logger: Logger | None = None,
        seed: int = 0,
    ) -> R2D2Learner:
        del seed  # The learner draws nothing of its own.
        c = self.config
        io = make_learner_io(iterator, replay_address, self.table_name, True, counter, logger,
                             c.batches_per_call)
        return R2D2Learner(
            network=networks["q"],
            target_network=target_copies(networks, self.make_networks(spec=spec))["q"],
            io=io,
            burn_in=c.burn_in,
            discount=c.discount,
            n_step=c.n_step,
            learning_rate=c.learning_rate,
            learning_rate_final=c.learning_rate_final,
            learning_rate_decay_steps=c.learning_rate_decay_steps,
            target_update_period=c.target_update_period,
            value_rescaling_eps=c.value_rescaling_eps,
            importance_sampling_exponent=c.importance_sampling_exponent,
            max_priority_weight=c.max_priority_weight,
            max_gradient_norm=c.max_gradient_norm,
            adam_epsilon=c.adam_epsilon,
        )
