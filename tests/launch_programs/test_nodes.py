"""The learner node: the run's seed fixes the initial weights the actors fetch."""

from __future__ import annotations

import numpy as np

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
