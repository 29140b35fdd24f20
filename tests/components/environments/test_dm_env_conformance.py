"""Every environment family passes dm_env's own conformance suite
(`dm_env.test_utils.EnvironmentTestMixin`).

Each class runs the mixin's tests (reset, step on a fresh environment, step after reset, a
longer action sequence) on one small environment of its family, with an action sequence that
ends episodes for real and goes on past their LAST step, so the end-of-episode contract (a
FIRST after each LAST, specs of the final step) is checked; each class's
`test_action_sequence_ends_an_episode` asserts that it is (without it the mixin would also
pass an environment whose episodes never end). The vector Atari pipeline is not a
dm_env.Environment and is not tested here.
"""

from __future__ import annotations

import importlib.util
import unittest

import dm_env
from absl.testing import absltest
from dm_env import test_utils

from components.environments import make_environment


class _Conformance(test_utils.EnvironmentTestMixin):
    """The mixin with a fixed action (the spec's zero) repeated `num_actions` times; subclasses
    name the environment (`env_name`, made by make_environment) or override
    make_object_under_test."""

    env_name: str = ""
    num_actions: int = 20

    def make_object_under_test(self):
        return make_environment(self.env_name, seed=0)

    def make_action_sequence(self):
        for _ in range(self.num_actions):
            yield self.make_action()

    def test_action_sequence_ends_an_episode(self):
        step_types = [self.reset_environment().step_type]
        for action in self.make_action_sequence():
            step_types.append(self.step_environment(action).step_type)
        lasts = [i for i, t in enumerate(step_types) if t is dm_env.StepType.LAST]
        self.assertTrue(lasts, f"{self.num_actions} actions ended no episode")
        self.assertLess(lasts[0] + 1, len(step_types), "no step after the first LAST")
        self.assertIs(step_types[lasts[0] + 1], dm_env.StepType.FIRST)


class TestGym(_Conformance, absltest.TestCase):
    env_name = "gym:CartPole-v1"  # Always pushing left: it falls over within ~10 steps.
    num_actions = 60


class TestAtari(_Conformance, absltest.TestCase):
    env_name = "atari:Pong"  # Always NOOP: the opponent wins 21-0 in ~760 agent steps.
    num_actions = 1_000


class TestMinAtar(_Conformance, absltest.TestCase):
    env_name = "minatar:breakout"  # Never moving: the ball is missed within a few dozen steps.
    num_actions = 200


class TestMemory(_Conformance, absltest.TestCase):
    env_name = "memory:3"  # 4 actions an episode.
    num_actions = 12


@unittest.skipUnless(importlib.util.find_spec("dm_control"), "dm_control is not installed")
class TestControl(_Conformance, absltest.TestCase):
    env_name = "control:cartpole:balance"  # 1,000 steps an episode (a time limit).
    num_actions = 1_010

