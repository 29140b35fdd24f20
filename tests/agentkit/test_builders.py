"""The builder contract: every agent subclasses it, and the program calls it only by keyword."""

from __future__ import annotations

import collections
import dataclasses
import threading

import pytest

from agentkit.acting import ActingLayout
from agentkit.builders import ActorLearnerBuilder
from agentkit.config import ConfigError
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
    """DQN's builder, recording every call the program makes."""

    def __init__(self, config, layout):
        super().__init__(config, layout)
        self.calls = collections.Counter()
        self._lock = threading.Lock()

    def _record(self, name, args):
        assert not args, f"{name} was called with positional arguments {args}"
        with self._lock:
            self.calls[name] += 1


def _recording(name):
    def method(self, *args, **kwargs):
        self._record(name, args)
        return getattr(DQNBuilder, name)(self, **kwargs)
    return method


for _name in ("make_networks", "make_replay_tables", "make_dataset_iterator",
              "make_adder", "make_policy", "make_actor", "make_learner"):
    setattr(RecordingBuilder, _name, _recording(_name))


def test_the_program_calls_each_part_by_keyword_where_the_contract_says():
    config = DQNConfig(hidden_sizes=(8,), head_hidden_size=0, batch_size=8, min_replay_size=16,
                       samples_per_insert=1.0)
    program_config = ProgramConfig(num_actors=2, num_envs_per_actor=4, env_groups=2,
                                   max_actor_steps=300, eval_every=10_000, eval_episodes=2,
                                   print_every_s=0)
    builder = RecordingBuilder(config, program_config.layout)
    spec = make_environment_spec(fakes.match_the_sign(0, False))
    result = launch_threads(make_agent_program(builder, fakes.match_the_sign, spec,
                                               program_config))
    assert result.status == "completed", result.error and result.error.formatted
    calls = builder.calls
    assert calls["make_replay_tables"] == 1
    assert calls["make_dataset_iterator"] == 1 and calls["make_learner"] == 1
    # Learner (its networks, and its target as a second call), two actors, evaluator.
    assert calls["make_networks"] == 2 + 2 + 1
    assert calls["make_policy"] == 2 + 1
    assert calls["make_actor"] == 2 * 2 + 1  # Two groups per actor; the evaluator's.
    assert calls["make_adder"] == 2 * 2  # One per group of environments.
    info = result.objects["replay"].info()[DQNBuilder.table_name]
    assert info["num_inserts"] == result.objects["counter"].get_counts()["actor_steps"]


def test_a_builder_keeps_the_layout_it_was_made_with_and_the_program_checks_it():
    layout = ActingLayout(num_actors=2, num_envs_per_actor=4, env_groups=2)
    builder = DQNBuilder(DQNConfig(), layout)
    assert builder.layout == layout and builder.layout.envs_per_group == 2
    assert DQNBuilder(DQNConfig()).layout == ActingLayout(1, 1, 1)  # Parts made by hand.
    with pytest.raises(dataclasses.FrozenInstanceError):
        builder.layout.num_actors = 3
    spec = make_environment_spec(fakes.match_the_sign(0, False))
    other = ProgramConfig(num_actors=2, num_envs_per_actor=4, env_groups=1)
    with pytest.raises(ValueError, match="make the builder with layout=config.layout"):
        make_agent_program(builder, fakes.match_the_sign, spec, other)


@pytest.mark.parametrize("fields, flag", [
    (dict(num_actors=0), "--num_actors"), (dict(num_envs_per_actor=0), "--num_envs_per_actor"),
    (dict(num_envs_per_actor=4, env_groups=3), "--env_groups"),
    (dict(num_envs_per_actor=2.0), "--num_envs_per_actor")])
def test_a_layout_out_of_range_names_its_flag(fields, flag):
    with pytest.raises(ConfigError, match=f"^{flag}: must be"):
        ActingLayout(**fields)


def test_the_program_configs_layout_is_its_three_flags():
    config = ProgramConfig(num_actors=3, num_envs_per_actor=6, env_groups=2)
    assert config.layout == ActingLayout(num_actors=3, num_envs_per_actor=6, env_groups=2)
    assert (config.layout.envs_per_group, config.layout.num_envs) == (3, 18)
