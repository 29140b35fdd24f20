"""`--agent` finds agents outside the repository (module:Factory, entry points), or says why not.

Each failure is one line naming `--agent`, before anything starts; the
external agent's config fields become flags with their defaults and comments.
"""

from __future__ import annotations

import dataclasses
import importlib.metadata
import json
import os
import sys

import pytest
import tensorflow as tf

from launch_programs import registry, run
from launch_programs.flag_help import field_comments, flag_help
from tests.commands import run_module
from tests.launch_programs.help_text import help_entry

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PACKAGE = "extagents_test"  # Not a name anything else imports: the fixture owns it.

AGENT_SOURCE = '''
import dataclasses

from agentkit.builders import ActorLearnerBuilder


@dataclasses.dataclass
class TinyConfig:
    width: int = 7  # Units of the only layer.
    # Steps between two looks at the weights,
    # written as a block above the field.
    period: int = 3
    greedy: bool = False  # Never explore (50% of the time: %s is not a format).
    sizes: tuple[int, ...] = (4, 2)  # Layers.


class TinyBuilder(ActorLearnerBuilder):
    config_class = TinyConfig

    def make_networks(self, *, spec):
        return {}

    def make_replay_tables(self, *, spec):
        return []

    def make_dataset_iterator(self, *, replay_address, should_stop=None):
        return iter(())

    def make_adder(self, *, replay_client, spec):
        return None

    def make_policy(self, *, networks, spec, evaluation=False, seed=0, actor_id=0, num_actors=1):
        return None

    def make_actor(self, *, policy, networks, adders, variable_source):
        return None

    def make_learner(self, *, networks, spec, iterator, replay_address, counter=None, logger=None):
        return None


def make_builder():
    return TinyBuilder


def make_nothing():
    return 3


def make_instance():
    return TinyBuilder(TinyConfig())


def needs_args(size):
    return TinyBuilder


class NoConfig(TinyBuilder):
    config_class = None


class DictConfig(TinyBuilder):
    config_class = dict


class Abstract(ActorLearnerBuilder):
    config_class = TinyConfig


@dataclasses.dataclass
class ClashConfig:
    seed: int = 1  # Named like the program flag --seed.


class ClashBuilder(TinyBuilder):
    config_class = ClashConfig


class DynamicBuilder(TinyBuilder):
    config_class = dataclasses.make_dataclass("DynamicConfig", [("depth", int, 5)])


@dataclasses.dataclass
class RequiredConfig:
    label: str  # What to call the run.
    size: int = 2  # Units.


class RequiredBuilder(TinyBuilder):
    config_class = RequiredConfig


NOT_A_BUILDER = 42
'''


@pytest.fixture
def external(tmp_path, monkeypatch):
    """A package outside the repository, `extagents_test` (tmp_path on sys.path); its agents module."""
    package = tmp_path / PACKAGE
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "agents.py").write_text(AGENT_SOURCE)
    (package / "broken.py").write_text("raise RuntimeError('boom on\\nimport')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield importlib.import_module(f"{PACKAGE}.agents")
    for name in [m for m in sys.modules if m == PACKAGE or m.startswith(PACKAGE + ".")]:
        del sys.modules[name]


def _fake_entry_points(monkeypatch, **names: str) -> None:
    """Installs the entry points `name=target` in group agentkit.agents (as a package would)."""
    points = importlib.metadata.EntryPoints(
        importlib.metadata.EntryPoint(name, target, registry.ENTRY_POINT_GROUP)
        for name, target in names.items())

    def entry_points(**params):
        assert params == {"group": registry.ENTRY_POINT_GROUP}
        return points

    monkeypatch.setattr(importlib.metadata, "entry_points", entry_points)


def test_module_form_with_a_builder_class(external):
    entry = registry.get_agent(f"{PACKAGE}.agents:TinyBuilder")
    assert entry is external.TinyBuilder
    assert entry.config_class is external.TinyConfig
    assert entry.preset("atari:Pong") == {}


def test_module_form_with_a_factory_function(external):
    entry = registry.get_agent(f"{PACKAGE}.agents:make_builder")
    assert entry is external.TinyBuilder


def test_parse_turns_the_external_config_into_flags(external, tmp_path):
    spec = run.parse([f"--agent={PACKAGE}.agents:make_builder", f"--logdir={tmp_path}/run"])
    config_class = external.TinyConfig
    assert spec.agent_config == config_class(width=7, period=3, greedy=False, sizes=(4, 2))
    spec = run.parse([f"--agent={PACKAGE}.agents:TinyBuilder", "--width=9", "--greedy",
                      "--sizes=8,8,8", f"--logdir={tmp_path}/run"])
    assert spec.agent_config == config_class(width=9, period=3, greedy=True, sizes=(8, 8, 8))
    assert spec.agent == f"{PACKAGE}.agents:TinyBuilder"


def test_default_logdir_names_an_external_agent_in_one_path_component(external):
    spec = run.parse([f"--agent={PACKAGE}.agents:TinyBuilder"])
    assert os.path.basename(spec.logdir) == f"{PACKAGE}.agents-TinyBuilder-gym-CartPole-v1-s0"
    assert os.path.dirname(spec.logdir) == os.path.abspath("runs")


BUILTINS = "a2c, appo, d4pg, dqn, impala, ppo, r2d2, rainbow, sac"
NOT_BUILDER = "not an ActorLearnerBuilder subclass or a zero-argument factory returning one"
ABSTRACT = ("make_actor, make_adder, make_dataset_iterator, make_learner, make_networks, "
            "make_policy, make_replay_tables")


@pytest.mark.parametrize("agent,message", [
    ("nope", f"--agent: unknown agent 'nope'; allowed: {BUILTINS}, or package.module:Factory "
             f"for an agent outside this repository"),
    ("nosuchpkg_xyz.mod:Builder",
     "--agent: cannot import module 'nosuchpkg_xyz.mod': No module named 'nosuchpkg_xyz'"),
    (f"{PACKAGE}.nosuch:Builder",
     f"--agent: cannot import module '{PACKAGE}.nosuch': No module named '{PACKAGE}.nosuch'"),
    (f"{PACKAGE}.broken:Builder",
     f"--agent: cannot import module '{PACKAGE}.broken': RuntimeError: boom on import"),
    (f"{PACKAGE}.agents:Missing", f"--agent: module '{PACKAGE}.agents' has no attribute 'Missing'"),
    (f"{PACKAGE}.agents:TinyBuilder.missing",
     f"--agent: '{PACKAGE}.agents:TinyBuilder' has no attribute 'missing'"),
    (f"{PACKAGE}.agents:", f"--agent: '{PACKAGE}.agents:' is not of the form package.module:Factory"),
    (f"{PACKAGE}.agents:NOT_A_BUILDER",
     f"--agent: '{PACKAGE}.agents:NOT_A_BUILDER' is an int (42), {NOT_BUILDER}"),
    (f"{PACKAGE}.agents:TinyConfig",
     f"--agent: '{PACKAGE}.agents:TinyConfig' is the class TinyConfig, {NOT_BUILDER}"),
    (f"{PACKAGE}.agents:dataclasses",
     f"--agent: '{PACKAGE}.agents:dataclasses' is the module dataclasses, {NOT_BUILDER}"),
    (f"{PACKAGE}.agents:needs_args",
     f"--agent: '{PACKAGE}.agents:needs_args' is the function needs_args, which needs arguments; "
     f"a factory takes none and returns an ActorLearnerBuilder subclass"),
    (f"{PACKAGE}.agents:make_nothing",
     f"--agent: '{PACKAGE}.agents:make_nothing()' returned an int (3), not an ActorLearnerBuilder "
     f"subclass"),
    (f"{PACKAGE}.agents:make_instance",
     f"--agent: '{PACKAGE}.agents:make_instance()' returned an instance of TinyBuilder (return the "
     f"class, not an instance), not an ActorLearnerBuilder subclass"),
    (f"{PACKAGE}.agents:NoConfig",
     f"--agent: builder class NoConfig ('{PACKAGE}.agents:NoConfig') sets no config_class"),
    (f"{PACKAGE}.agents:DictConfig",
     f"--agent: DictConfig.config_class ('{PACKAGE}.agents:DictConfig') is the class dict, "
     f"not a dataclass"),
    (f"{PACKAGE}.agents:Abstract",
     f"--agent: builder class Abstract ('{PACKAGE}.agents:Abstract') is abstract: it does not "
     f"define {ABSTRACT}"),
    (f"{PACKAGE}.agents:ClashBuilder",
     "--agent: ClashConfig.seed clashes with the run, program or ray flag --seed; rename the field"),
])
def test_a_bad_agent_fails_with_one_exact_line(external, agent, message, capsys, tmp_path):
    code = run.main([f"--agent={agent}", f"--logdir={tmp_path}/run"])
    assert code == 2
    assert capsys.readouterr().err == f"error: {message}\n"
    assert not os.path.exists(tmp_path / "run")  # Nothing started, nothing written.


def test_registry_errors_are_value_errors_naming_the_flag(external):
    with pytest.raises(registry.AgentError, match=r"^--agent: module '.*' has no attribute 'X'$"):
        registry.get_agent(f"{PACKAGE}.agents:X")
    with pytest.raises(run.UsageError, match=r"^--agent: unknown agent 'x'"):
        run.parse(["--agent=x"])


def test_an_entry_point_is_found_by_name(external, monkeypatch):
    _fake_entry_points(monkeypatch, tiny=f"{PACKAGE}.agents:TinyBuilder",
                       factory=f"{PACKAGE}.agents:make_builder")
    assert registry.get_agent("tiny") is external.TinyBuilder
    assert registry.get_agent("factory") is external.TinyBuilder
    spec = run.parse(["--agent=tiny", "--period=5"])
    assert spec.agent_config == external.TinyConfig(period=5)
    assert spec.agent == "tiny"


def test_a_builtin_name_wins_over_an_entry_point(external, monkeypatch):
    _fake_entry_points(monkeypatch, dqn=f"{PACKAGE}.agents:TinyBuilder")
    assert registry.get_agent("dqn").__name__ == "DQNBuilder"


def test_unknown_name_lists_builtins_then_entry_points(external, monkeypatch):
    _fake_entry_points(monkeypatch, tiny=f"{PACKAGE}.agents:TinyBuilder",
                       dqn=f"{PACKAGE}.agents:TinyBuilder")
    with pytest.raises(registry.AgentError) as raised:
        registry.get_agent("tinny")
    assert str(raised.value) == (f"--agent: unknown agent 'tinny'; allowed: {BUILTINS}, tiny, or "
                                 f"package.module:Factory for an agent outside this repository")


def test_a_broken_entry_point_says_where_it_came_from(external, monkeypatch, capsys):
    _fake_entry_points(monkeypatch, broken=f"{PACKAGE}.agents:Missing")
    assert run.main(["--agent=broken"]) == 2
    assert capsys.readouterr().err == (
        f"error: --agent: module '{PACKAGE}.agents' has no attribute 'Missing' "
        f"(--agent=broken: entry point in group agentkit.agents)\n")


def test_help_of_an_external_agent_shows_its_comments_and_defaults(external, capsys):
    assert run.main([f"--agent={PACKAGE}.agents:TinyBuilder", "--help"]) == 0
    out = capsys.readouterr().out
    # Titled by its class, as a built-in agent is by its name: not by the module path.
    assert "\nTinyBuilder flags (TinyConfig):" in out and f"{PACKAGE}.agents:" not in out
    assert help_entry(out, "--width") == "--width INT Units of the only layer. (default: 7)"
    assert help_entry(out, "--period") == ("--period INT Steps between two looks at the weights, "
                                            "written as a block above the field. (default: 3)")
    assert help_entry(out, "--greedy") == (
        "--greedy [BOOL] Never explore (50% of the time: %s is not a format). (default: false)")
    assert help_entry(out, "--sizes") == "--sizes INTS Layers. (default: 4,2)"


def test_a_config_built_at_run_time_has_flags_without_help_text(external, capsys, tmp_path):
    builder = external.DynamicBuilder
    assert field_comments(builder.config_class) == {}
    assert run.main([f"--agent={PACKAGE}.agents:DynamicBuilder", "--help"]) == 0
    assert help_entry(capsys.readouterr().out, "--depth") == "--depth INT (default: 5)"
    spec = run.parse([f"--agent={PACKAGE}.agents:DynamicBuilder", "--depth=2"])
    assert spec.agent_config.depth == 2


def test_a_field_without_default_is_a_required_flag(external, capsys):
    agent = f"--agent={PACKAGE}.agents:RequiredBuilder"
    assert run.main([agent, "--help"]) == 0
    out = capsys.readouterr().out
    assert help_entry(out, "--label") == "--label VALUE What to call the run. (required)"
    assert run.main([agent]) == 2
    assert capsys.readouterr().err == "error: the following arguments are required: --label\n"
    assert run.parse([agent, "--label=x"]).agent_config == external.RequiredConfig(label="x", size=2)


def test_field_comments_follow_the_class_hierarchy():
    @dataclasses.dataclass
    class Base:
        a: int = 1  # Base's a.
        b: int = 2  # Base's b.

    @dataclasses.dataclass
    class Child(Base):
        b: int = 3  # Child's b.

        c: str = ""  # A string.
        d: int = 4

    assert field_comments(Child) == {"a": "Base's a.", "b": "Child's b.", "c": "A string."}
    assert flag_help("A string.", "") == 'A string. (default: "")'
    assert flag_help("", (1, 2)) == "(default: 1,2)"
    assert flag_help("50% off", True) == "50%% off (default: true)"
    assert flag_help("", dataclasses.MISSING) == "(required)"


EXAMPLE = os.path.join(ROOT, "examples", "external_agent")


@pytest.fixture
def example(monkeypatch):
    """examples/external_agent on sys.path, as the README's PYTHONPATH puts it."""
    monkeypatch.syspath_prepend(EXAMPLE)
    yield
    for name in [m for m in sys.modules if m == "my_agents" or m.startswith("my_agents.")]:
        del sys.modules[name]


def test_the_example_external_agent_runs_end_to_end(example, tmp_path, capsys):
    agent = "my_agents.greedy_dqn:GreedyDQNBuilder"
    budget = 300
    code = run.main([f"--agent={agent}", "--env=gym:CartPole-v1", f"--max_actor_steps={budget}",
                     "--num_actors=1", "--num_envs_per_actor=2", "--eval_episodes=0",
                     "--min_replay_size=64", "--batch_size=32", "--samples_per_insert=2",
                     "--hidden_sizes=16", "--head_hidden_size=16", "--epsilon=0.2",
                     "--print_every_s=0", f"--logdir={tmp_path}/run"])
    assert code == 0, capsys.readouterr().err[-2000:]
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["agent"] == agent and summary["status"] == "completed"
    assert summary["actor_steps"] >= budget
    assert summary["learner_steps"] > 0
    assert summary["config"]["epsilon"] == 0.2 and summary["config"]["hidden_sizes"] == [16]


def test_the_example_readme_command_names_a_real_agent(example):
    with open(os.path.join(EXAMPLE, "README.md")) as f:
        command = " ".join(f.read().replace("\\\n", " ").split())
    assert ("PYTHONPATH=examples/external_agent .venv/bin/python -m launch_programs.run "
            "--agent=my_agents.greedy_dqn:GreedyDQNBuilder --env=gym:CartPole-v1") in command
    entry = registry.get_agent("my_agents.greedy_dqn:make_builder")
    assert entry.__name__ == "GreedyDQNBuilder"
    assert {f.name for f in dataclasses.fields(entry.config_class)} >= {"epsilon", "batch_size"}


def test_the_example_qr_dqn_brings_its_own_network_and_loss_and_learns(tmp_path):
    """QR-DQN outside the repository, through the public hooks only (make_networks, and a
    DQNLearner whose loss reads its public inputs), run as a user runs it: it learns
    CartPole (random play: about 22)."""
    out = run_module("launch_programs.run", "--agent=my_agents.qr_dqn:QRDQNBuilder",
                     "--env=gym:CartPole-v1", "--max_actor_steps=20000", "--num_quantiles=16",
                     f"--logdir={tmp_path}/run", "--print_every_s=0", timeout=300,
                     PYTHONPATH=EXAMPLE)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["status"] == "completed" and summary["config"]["num_quantiles"] == 16
    assert summary["learner_steps"] > 1000
    assert summary["eval_return_mean_last10"] >= 100, summary["eval_return_mean_last10"]


def test_a_network_hook_that_builds_other_networks_each_call_fails_before_launch(
        example, tmp_path, capsys):
    """The learner's target is a second call of make_networks: one that does not give the
    same networks fails in one line naming the hook, before anything starts."""
    from my_agents import qr_dqn

    sizes = iter([(8,), (16,)] * 4)

    class Drifting(qr_dqn.QRDQNBuilder):
        def make_networks(self, *, spec):
            network = qr_dqn.QuantileNetwork(spec.actions.num_values, 4, next(sizes))
            network(tf.zeros((1,) + tuple(spec.observations.shape), spec.observations.dtype))
            return {"q": network}

    qr_dqn.Drifting = Drifting
    try:
        code = run.main(["--agent=my_agents.qr_dqn:Drifting", f"--logdir={tmp_path}/run"])
    finally:
        del qr_dqn.Drifting
    err = capsys.readouterr().err.strip()
    assert code == 2 and "\n" not in err, err
    assert err.startswith("error: --agent=my_agents.qr_dqn:Drifting: make_networks: the "
                          "target 'q' made by a second call does not match the online network")
    assert not (tmp_path / "run").exists()
