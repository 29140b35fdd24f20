"""The learner node: the run's seed fixes the initial weights the actors fetch."""

from __future__ import annotations

import numpy as np

from agentkit.acting import ActingLayout
from agentkit.specs import make_environment_spec
from agents.dqn import DQNBuilder, DQNConfig
from launch_programs.nodes import LearnerNode, RunContext, make_replay
from tests import fakes


def _initial_weights(seed: int) -> list[np.ndarray]:
    spec = make_environment_spec(fakes.discrete_environment(2, (4,)))
    builder = DQNBuilder(DQNConfig(hidden_sizes=(8,), head_hidden_size=0))
    replay = make_replay(builder=builder, spec=spec)
    try:
        node = LearnerNode(builder=builder, spec=spec, replay=replay, counter=None,
                           run=RunContext(seed=seed))
        (weights,) = node.get_variables(["q"])
    finally:
        replay.stop()
    return weights


def test_a_seed_gives_the_same_initial_weights_and_another_seed_other_ones():
    first, again, other = _initial_weights(3), _initial_weights(3), _initial_weights(4)
    assert len(first) == len(again) > 0
    for a, b in zip(first, again):
        np.testing.assert_array_equal(a, b)
    assert any(not np.allclose(a, b) for a, b in zip(first, other))  # Not only biases.


def _actor_epsilon(prior_actor_steps: int) -> float:
    from agentkit.counting import Counter
    from launch_programs.nodes import ActingConfig, ActorNode

    spec = make_environment_spec(fakes.discrete_environment(2, (4,)))
    builder = DQNBuilder(DQNConfig(hidden_sizes=(8,), head_hidden_size=0, epsilon_init=1.0,
                                   epsilon_final=0.1, epsilon_decay_steps=1000),
                         ActingLayout(num_actors=2, num_envs_per_actor=2))
    replay = make_replay(builder=builder, spec=spec)
    counter = Counter()
    if prior_actor_steps:  # The counts a resumed run's counter starts from.
        counter.increment(actor_steps=prior_actor_steps)
    try:
        def make_env(seed=None, evaluation=False):
            return fakes.discrete_environment(2, (4,))

        node = ActorNode(builder=builder, environment_factory=make_env,
                         spec=spec, actor_id=0, replay=replay, variable_source=None,
                         counter=counter, run=RunContext(),
                         acting=ActingConfig())
        return node._actors[0]._policy.epsilon()
    finally:
        replay.stop()


def test_a_resumed_actor_goes_on_with_its_epsilon_schedule():
    assert _actor_epsilon(0) == 1.0
    # 1,000 steps taken by 2 actors: this one's share is 500, half the decay.
    np.testing.assert_allclose(_actor_epsilon(1000), 0.55, rtol=1e-6)
    np.testing.assert_allclose(_actor_epsilon(10_000), 0.1, rtol=1e-6)


def _learner_draws(seed: int) -> np.ndarray:
    """SAC's learner's first draws (its generator's normals) in a learner node of `seed`."""
    from agents.sac import SACBuilder, SACConfig

    spec = make_environment_spec(fakes.continuous_environment(action_dim=2))
    builder = SACBuilder(SACConfig(policy_hidden_sizes=(8,), critic_hidden_sizes=(8,),
                                   batch_size=16, min_replay_size=16))
    replay = make_replay(builder=builder, spec=spec)
    try:
        node = LearnerNode(builder=builder, spec=spec, replay=replay, counter=None,
                           run=RunContext(seed=seed))
        return node._learner._rng.normal([8]).numpy()
    finally:
        replay.stop()


def test_the_runs_seed_seeds_the_learners_own_draws():
    first, again, other = _learner_draws(3), _learner_draws(3), _learner_draws(4)
    np.testing.assert_array_equal(first, again)
    assert not np.allclose(first, other)
