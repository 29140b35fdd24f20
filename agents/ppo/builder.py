"""PPO's builder (and A2C's): rounds of rollouts through a queue, actors that wait for each
round's weights, a learner of several SGD steps per round.

The builder knows nothing of launchers. The acting layout it is made with
decides its parts: the learner takes one rollout per actor each round, and the
queue's items hold `num_envs_per_actor` environments.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import reverb

from agentkit import core
from agentkit.acting import ActingLayout
from agentkit.adders import BatchedAdder
from agentkit.builders import ActorLearnerBuilder, Networks
from agentkit.config import ConfigError
from agentkit.counting import Counter
from agentkit.loggers import Logger
from agentkit.specs import EnvironmentSpec
from agents.ppo.config import A2CConfig, PPOConfig
from agents.ppo.learning import PPOLearner
from components.actors import BatchedFeedForwardActor, SamplingPolicy
from components.adders import BatchedRolloutAdder, rollout_signature
from components.datasets import BatchingIterator, make_single_sample_iterator
from components.learners import make_learner_io
from components.networks import make_policy_value_network
from components.replay import make_queue_table
from components.variable_client import RoundVariableClient, make_variable_client


class PPOBuilder(ActorLearnerBuilder):
    """Makes PPO's queue, batches, rollout adder, policies, waiting actors and learner."""

    config_class = PPOConfig
    table_name = "rollout_queue"

    def central_inference_problem(self) -> str | None:
        return ("PPO's actors wait for the learner's new weights before each rollout (zero "
                "policy lag); an inference node shared by all actors has no such rounds")

    def __init__(self, config: PPOConfig, layout: ActingLayout | None = None):
        super().__init__(config, layout)
        layout = self.layout
        name = type(config).__name__.removesuffix("Config")
        if layout.env_groups != 1:
            raise ConfigError(f"--env_groups: must be 1 with {name}, whose actors wait for the "
                              f"learner after every round (alternating groups would wait on "
                              f"each other), got {layout.env_groups}")
        steps = config.rollout_length * layout.num_envs
        if config.num_minibatches > steps:
            raise ConfigError(f"--num_minibatches: must be at most the {steps} steps of a round "
                              f"(rollout_length x num_envs_per_actor x num_actors), got "
                              f"{config.num_minibatches}")

    def signature(self, spec: EnvironmentSpec) -> dict:
        return rollout_signature(spec, self.config.rollout_length, self.layout.num_envs_per_actor,
                                 SamplingPolicy.extras_spec(spec))

    def make_networks(self, *, spec: EnvironmentSpec) -> Networks:
        c = self.config
        return {"policy": make_policy_value_network(
            spec, torso=c.torso, hidden_sizes=c.hidden_sizes,
            head_hidden_size=c.head_hidden_size, shared_torso=c.shared_torso,
            compute_dtype=c.compute_dtype, init=c.network_init, activation=c.activation,
            normalize_observations=c.normalize_observations)}

    def make_replay_tables(self, *, spec: EnvironmentSpec) -> list[reverb.Table]:
        # A round puts at most one rollout per actor in the queue: twice that never blocks.
        actors = self.layout.num_actors
        return [make_queue_table(self.table_name, self.signature(spec), 2 * actors + 2, actors)]

    def make_dataset_iterator(
        self, *, replay_address: str, should_stop: Callable[[], bool] | None = None
    ) -> Iterator[dict]:
        """A round's rollouts, one per actor, each taken from the queue once."""
        return BatchingIterator(
            lambda: make_single_sample_iterator(replay_address, self.table_name),
            self.layout.num_actors, should_stop or (lambda: False))

    def make_adder(self, *, replay_client: reverb.Client, spec: EnvironmentSpec,
                   num_envs: int) -> BatchedAdder:
        """One rollout of all the actor's environments a round."""
        if num_envs != self.layout.num_envs_per_actor:
            raise ValueError(f"an adder of {num_envs} environments, but the builder's layout "
                             f"has {self.layout.num_envs_per_actor} per actor")
        return BatchedRolloutAdder(replay_client, self.table_name, num_envs,
                                   self.config.rollout_length, SamplingPolicy.extras_spec(spec))

    def make_policy(self, *, networks: Networks, spec: EnvironmentSpec,
                    evaluation: bool = False, seed: int = 0, actor_id: int = 0,
                    num_actors: int = 1) -> SamplingPolicy:
        del actor_id, num_actors  # Every actor samples from the same policy.
        greedy = evaluation and self.config.evaluation_greedy
        return SamplingPolicy(networks["policy"], spec, greedy=greedy, seed=seed)

    def make_actor(self, *, policy: SamplingPolicy, networks: Networks,
                   adder: BatchedAdder | None,
                   variable_source: core.VariableSource | None) -> core.Actor:
        variables = {"policy": networks["policy"].variables, "policy_version": [policy.version]}
        if adder is None or variable_source is None:  # The evaluator: fetches when it starts.
            client = make_variable_client(variable_source, variables)
        else:  # Every step of a round acts with the same weights (see max_policy_lag).
            client = RoundVariableClient(variable_source, variables, self.config.rollout_length,
                                         max_lag=self.config.max_policy_lag)
        return BatchedFeedForwardActor(policy, adder, client, policy_has_extras=True)

    def make_learner(self, *, networks: Networks, spec: EnvironmentSpec,
                     iterator: Iterator[dict], replay_address: str | None,
                     counter: Counter | None = None, logger: Logger | None = None,
                     seed: int = 0) -> PPOLearner:
        c = self.config
        io = make_learner_io(iterator, replay_address, counter=counter, logger=logger)
        return PPOLearner(
            network=networks["policy"], io=io, signature=self.signature(spec),
            rollouts_per_round=self.layout.num_actors, discount=c.discount, gae_lambda=c.gae_lambda,
            learning_rate=c.learning_rate, learning_rate_final=c.learning_rate_final,
            learning_rate_decay_steps=c.learning_rate_decay_steps, kl_target=c.kl_target,
            optimizer=c.optimizer,
            epsilon=c.adam_epsilon, clip_epsilon=c.clip_epsilon, value_clip=c.value_clip,
            baseline_cost=c.baseline_cost, entropy_cost=c.entropy_cost,
            normalize_advantages=c.normalize_advantages, num_epochs=c.num_epochs,
            num_minibatches=c.num_minibatches, max_gradient_norm=c.max_gradient_norm, seed=seed)


class A2CBuilder(PPOBuilder):
    """A2C (PAAC): PPO's parts with A2C's defaults (one SGD step per round, no clipping)."""

    config_class = A2CConfig
