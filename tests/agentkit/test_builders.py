"""The builder contract: every agent subclasses it, and the program calls it only by keyword."""

from __future__ import annotations

import collections
import dataclasses
import threading

import pytest

from agentkit.builders import ActorLearnerBuilder
from agentkit.specs import make_environment_spec
from agents.dqn import DQNBuilder, DQNConfig
from launch_programs.agent_program import ProgramConfig, make_agent_program
from launch_programs.registry import AGENTS, get_agent
from launch_programs.threads import launch_threads
from tests import fakes


@pytest.mark.parametrize("name", sorted(AGENTS))
def test_every_agent_is_a_builder_with_a_dataclass_config(name):
    builder_class = get_agent(name)
    assert issubclass(builder_class, ActorLearnerBuilder)
    assert dataclasses.is_dataclass(builder_class.config_class)
    assert builder_class.__name__ == AGENTS[name].split(":")[1]  # The class the name maps to.


def test_a_builder_missing_a_method_cannot_be_made():
    class Incomplete(ActorLearnerBuilder):
        config_class = DQNConfig

        def make_networks(self, *, spec):
            return {}

    with pytest.raises(TypeError, match="make_learner"):
        Incomplete(DQNConfig())


def test_the_program_takes_only_builders():
    spec = make_environment_spec(fakes.match_the_sign(0, False))
    with pytest.raises(TypeError, match="ActorLearnerBuilder, got DQNConfig"):
        make_agent_program(DQNConfig(), fakes.match_the_sign, spec, ProgramConfig())


class RecordingBuilder(DQNBuilder):
    """DQN's builder, recording every call the program makes; optionally without a batched
    adder (the contract's default), so each environment gets an adder of its own."""

    def __init__(self, config, batched: bool):
        super().__init__(config)
        self.calls = collections.Counter()
        self._batched = batched
        self._lock = threading.Lock()

    def _record(self, name, args):
        assert not args, f"{name} was called with positional arguments {args}"
        with self._lock:
            self.calls[name] += 1


def _recording(name):
    def method(self, *args, **kwargs):
        self._record(name, args)
        if name == "make_batched_adder" and not self._batched:
            return ActorLearnerBuilder.make_batched_adder(self, **kwargs)
        return getattr(DQNBuilder, name)(self, **kwargs)
    return method


for _name in ("configure_acting", "make_networks", "make_replay_tables", "make_dataset_iterator",
              "make_adder", "make_batched_adder", "make_policy", "make_actor", "make_learner"):
    setattr(RecordingBuilder, _name, _recording(_name))


@pytest.mark.parametrize("batched", [True, False])
def test_the_program_calls_each_part_by_keyword_where_the_contract_says(batched):
    config = DQNConfig(hidden_sizes=(8,), head_hidden_size=0, batch_size=8, min_replay_size=16,
                       samples_per_insert=1.0)
    program_config = ProgramConfig(num_actors=2, num_envs_per_actor=4, env_groups=2,
                                   max_actor_steps=300, eval_every=10_000, eval_episodes=2,
                                   print_every_s=0)
    builder = RecordingBuilder(config, batched)
    spec = make_environment_spec(fakes.match_the_sign(0, False))
    result = launch_threads(make_agent_program(builder, fakes.match_the_sign, spec,
                                               program_config))
    assert result.status == "completed", result.error and result.error.formatted
    calls = builder.calls
    assert calls["configure_acting"] == 1  # Once, as the graph is made: before any node.
    assert calls["make_replay_tables"] == 1
    assert calls["make_dataset_iterator"] == 1 and calls["make_learner"] == 1
    assert calls["make_networks"] == 1 + 2 + 1  # Learner, two actors, evaluator.
    assert calls["make_policy"] == 2 + 1
    assert calls["make_actor"] == 2 * 2 + 1  # Two groups per actor; the evaluator's.
    assert calls["make_batched_adder"] == 2 * 2  # Asked once per group...
    # ... and without one, every environment gets its own adder.
    assert calls["make_adder"] == (0 if batched else 2 * 4)
    info = result.objects["replay"].info()[DQNBuilder.table_name]
    assert info["num_inserts"] == result.objects["counter"].get_counts()["actor_steps"]
