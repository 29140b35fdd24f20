"""Presets by environment family: the command line applies an agent's presets as defaults,
names the values in effect, and a flag given always wins."""

from __future__ import annotations

import pytest

from agentkit.presets import environment_family
from agents.dqn import DQNBuilder
from launch_programs import run


@pytest.mark.parametrize("env,family", [
    ("gym:CartPole-v1", "classic_control"), ("gym:Pendulum-v1", "classic_control"),
    ("gym:MountainCarContinuous-v0", "classic_control"), ("gym:LunarLander-v2", "other"),
    ("atari:Pong", "atari"), ("minatar:breakout", "minatar"),
    ("control:cartpole:swingup", "control"), ("memory:10", "other"),
])
def test_environment_families(env, family):
    assert environment_family(env) == family


def test_the_classic_control_preset_is_applied_and_named():
    spec = run.parse(["--agent=dqn", "--env=gym:CartPole-v1", "--logdir=/tmp/unused"])
    assert spec.program_config.num_actors == 1 and spec.program_config.num_envs_per_actor == 16
    assert spec.agent_config.n_step == 7 and spec.agent_config.batches_per_call == 8
    assert spec.preset["family"] == "classic_control"
    assert spec.preset["program"] == {"num_actors": 1, "num_envs_per_actor": 16,
                                      "eval_at_start": False}
    assert spec.preset["config"]["learning_rate"] == 4e-3
    line = run.describe_preset("dqn", spec.preset)
    assert line.startswith("preset: dqn for classic_control environments: n_step=7 ")
    assert "num_envs_per_actor=16" in line and "\n" not in line


def test_the_minatar_preset_is_the_papers_network_and_replay():
    spec = run.parse(["--agent=dqn", "--env=minatar:breakout", "--logdir=/tmp/unused"])
    config = spec.agent_config
    assert spec.preset["family"] == "minatar"
    assert (config.torso, config.head_hidden_size) == ("minatar", 128)
    assert (config.max_replay_size, config.min_replay_size) == (100_000, 5_000)
    assert (config.epsilon_final, config.epsilon_decay_steps) == (0.1, 100_000)
    assert spec.program_config.num_envs_per_actor == 16
    assert spec.program_config.eval_every == 25_000
    assert spec.program_config.checkpoint_replay  # A resumed run keeps its replay.
    for agent in ("impala", "appo"):  # APPO inherits IMPALA's.
        spec = run.parse([f"--agent={agent}", "--env=minatar:breakout", "--logdir=/tmp/unused"])
        config = spec.agent_config
        assert (config.torso, config.head_hidden_size, config.shared_torso) == (
            "minatar", 128, True)
        assert config.batch_size == spec.program_config.num_envs_per_actor == 16
    spec = run.parse(["--agent=ppo", "--env=minatar:breakout", "--logdir=/tmp/unused"])
    config = spec.agent_config
    assert (config.torso, config.head_hidden_size, config.shared_torso) == ("minatar", 128, True)
    assert (config.rollout_length, config.num_epochs, config.num_minibatches) == (32, 4, 4)
    assert spec.program_config.num_envs_per_actor == 16
    spec = run.parse(["--agent=a2c", "--env=minatar:breakout", "--logdir=/tmp/unused"])
    config = spec.agent_config  # A2C's own preset, not PPO's epochs inherited.
    assert (config.torso, config.rollout_length, config.num_epochs) == ("minatar", 5, 1)
    assert config.clip_epsilon == 0.0 and config.entropy_cost == 0.01


def test_program_presets_name_only_known_families():
    from agentkit.presets import family_program_preset

    class Config:
        program_presets = {"classic_control": {"num_actors": 1}}

    class Misspelt:
        program_presets = {"minatr": {}}

    assert family_program_preset(Config, "gym:CartPole-v1") == {"num_actors": 1}
    assert family_program_preset(Config, "minatar:breakout") == {}
    family_program_preset(Config, "gym:CartPole-v1")["num_actors"] = 9  # A copy.
    assert Config.program_presets["classic_control"] == {"num_actors": 1}
    with pytest.raises(ValueError, match="unknown families \\['minatr'\\]"):
        family_program_preset(Misspelt, "minatar:breakout")


def test_each_agents_presets_live_in_its_config_class_and_no_builder_overrides_the_lookup():
    """One place per agent: its config class's family classmethods and program_presets; the
    builder base reads them (no builder redefines preset or program_preset)."""
    from agentkit.builders import ActorLearnerBuilder
    from launch_programs.registry import AGENTS, get_agent

    for name in AGENTS:
        builder_class = get_agent(name)
        for method in ("preset", "program_preset"):
            owner = next(c for c in builder_class.__mro__ if method in vars(c))
            assert owner is ActorLearnerBuilder, (name, method, owner)
        assert "program_presets" not in vars(builder_class), name
    control = get_agent("d4pg").preset("control:cartpole:swingup")
    assert (control["v_min"], control["v_max"]) == (-150.0, 150.0)
    assert get_agent("a2c").program_preset("atari:Pong")["num_envs_per_actor"] == 8
    assert get_agent("ppo").program_preset("atari:Pong")["num_envs_per_actor"] == 64
    assert get_agent("appo").program_preset("atari:Pong") == get_agent("impala").program_preset(
        "atari:Pong")


def test_a_flag_given_wins_over_the_preset_and_leaves_the_list():
    spec = run.parse(["--agent=dqn", "--env=gym:CartPole-v1", "--num_actors=2", "--n_step=3",
                      "--logdir=/tmp/unused"])
    assert spec.program_config.num_actors == 2 and spec.agent_config.n_step == 3
    assert spec.program_config.num_envs_per_actor == 16  # The rest of the preset stays.
    assert "num_actors" not in spec.preset["program"] and "n_step" not in spec.preset["config"]


def test_other_families_keep_the_defaults_and_name_no_preset():
    spec = run.parse(["--agent=dqn", "--env=memory:10", "--logdir=/tmp/unused"])
    assert spec.program_config.num_actors == 2 and spec.agent_config.n_step == 3
    assert spec.preset == {"family": "other", "config": {}, "program": {}}
    assert run.describe_preset("dqn", spec.preset) is None


class BadPresetBuilder(DQNBuilder):
    """A program preset naming a flag that is no program flag."""

    @classmethod
    def program_preset(cls, env):
        return {"num_actorz": 3}


def test_a_program_preset_naming_no_program_flag_fails_in_one_line(capsys):
    assert run.main([f"--agent={__name__}:BadPresetBuilder", "--env=gym:CartPole-v1",
                     "--logdir=/nonexistent/never"]) == 2
    err = capsys.readouterr().err
    assert err == (f"error: --agent={__name__}:BadPresetBuilder: its program preset for "
                   f"gym:CartPole-v1 names num_actorz, which are no program flags\n")


def test_help_shows_the_preset_values_as_defaults(capsys):
    from tests.launch_programs.help_text import help_entry

    assert run.main(["--agent=dqn", "--env=gym:CartPole-v1", "--help"]) == 0
    out = capsys.readouterr().out
    assert "program flags (nodes, budget, evaluation, checkpoints; dqn's gym:CartPole-v1 " \
           "preset applied):" in out
    assert help_entry(out, "--num_actors") == "--num_actors INT Actor nodes. (default: 1)"
    assert help_entry(out, "--n_step").endswith("(default: 7)")


def test_the_atari_presets_of_the_policy_gradient_agents():
    """PPO: rl_games' large-batch layout; A2C keeps 8 games; APPO: RLlib's Pong APPO; both
    normalise observations, and IMPALA's: the paper's 16/32 network in batches of 320 steps,
    Cleanba's epsilon, clip and annealing scaled to the batch."""
    def parse(agent):
        spec = run.parse([f"--agent={agent}", "--env=atari:Pong", "--logdir=/tmp/unused"])
        return spec.agent_config, spec.program_config

    config, program = parse("ppo")
    assert (config.torso, config.head_hidden_size, config.kl_target) == ("atari_shallow", 256, 0.01)
    assert config.normalize_observations and config.learning_rate_decay_steps == 0
    assert (program.num_envs_per_actor, config.rollout_length, config.num_minibatches) == (
        64, 128, 4)  # Minibatches of 2,048 steps.
    assert program.atari_vector_env and program.atari_life_loss  # The references' lives.
    config, program = parse("a2c")
    assert program.num_envs_per_actor == 8 and config.kl_target == 0.0
    assert not program.atari_life_loss  # Not measured for A2C.
    assert not config.normalize_observations
    config, program = parse("appo")
    assert (config.unroll_length, config.batch_size, config.num_epochs) == (50, 15, 2)
    assert (config.clip_epsilon, config.learning_rate, config.max_gradient_norm) == (0.3, 5e-4, 10.0)
    assert config.normalize_observations and not config.normalize_advantages
    config, program = parse("impala")
    assert (config.unroll_length, config.batch_size, config.torso) == (20, 16, "atari_shallow")
    # Cleanba's optimiser on a mean loss: its epsilon 0.01 outside the root of a summed loss,
    # (0.01 / 320)^2 inside it here; its 50M steps of annealing.
    assert config.learning_rate_decay_steps == 50_000_000 // 320 and config.normalize_observations
    assert config.adam_epsilon == pytest.approx((0.01 / 320) ** 2)
    assert config.max_gradient_norm == pytest.approx(40 / 320)
