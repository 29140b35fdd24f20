"""The generic program under the threads launcher: DQN learns; counts, CSVs, and the ratio hold."""

from __future__ import annotations

import os
import threading
import time

import pytest

from agentkit.loggers import read_csv
from agentkit.specs import make_environment_spec
from agents.dqn import DQNBuilder, DQNConfig
from launch_programs.agent_program import ProgramConfig, make_agent_program
from launch_programs.program import Program
from launch_programs.summary import evaluation_stats
from launch_programs.threads import launch_threads
from tests import fakes


def test_dqn_learns_match_the_sign_through_threads(tmp_path):
    config = DQNConfig(
        hidden_sizes=(32,), head_hidden_size=32, batch_size=32, min_replay_size=200,
        samples_per_insert=4.0, n_step=1, discount=0.9, epsilon_decay_steps=1000,
        learning_rate=3e-3, target_update_period=50, variable_update_period=50,
    )
    # Alternating groups: each actor steps one environment while it infers for the other.
    program_config = ProgramConfig(num_actors=2, num_envs_per_actor=2, env_groups=2,
                                   max_actor_steps=5000, eval_every=1000, eval_episodes=10,
                                   print_every_s=0)
    spec = make_environment_spec(fakes.match_the_sign(0, False))
    logdir = str(tmp_path)
    program = make_agent_program(DQNBuilder(config, program_config.layout), fakes.match_the_sign,
                                 spec, program_config, logdir)
    result = launch_threads(program)
    assert result.status == "completed", result.error and result.error.formatted
    counts = result.objects["counter"].get_counts()
    # Overshoot: one count_every per actor, plus up to 0.1 s (the actors'
    # counter sync period) of the other actor's steps.
    assert 5000 <= counts["actor_steps"] < 5000 + 2 * 100 + 400
    # The rate limiter fixed the learn/act ratio: samples ~ spi * (inserts - min size).
    info = result.objects["replay"].info()[DQNBuilder.table_name]
    expected = config.samples_per_insert * (info["num_inserts"] - config.min_replay_size)
    assert abs(info["num_samples"] - expected) <= 0.15 * expected
    assert counts["learner_steps"] * config.batch_size <= info["num_samples"]
    # Every transition an actor took reached the table (adders flushed at the end).
    assert info["num_inserts"] == counts["actor_steps"]
    stats = evaluation_stats(logdir)
    assert stats["eval_return_mean_last10"] >= 9.0  # Random scores 5, perfect 10.
    rows = read_csv(os.path.join(logdir, "evaluator.csv"))
    evaluated_at = {int(float(r["actor_steps"])) for r in rows}
    assert min(evaluated_at) == 0  # The untrained baseline round (eval_at_start's default).
    for label in ("actor", "learner", "evaluator"):
        rows = read_csv(os.path.join(logdir, f"{label}.csv"))
        assert rows and {"wall_time_s", "actor_steps", "learner_steps"} <= set(rows[0])
    # Both actors write one actor.csv; each row says whose episode it was.
    actor_ids = [r["actor_id"] for r in read_csv(os.path.join(logdir, "actor.csv"))]
    assert set(actor_ids) == {"0", "1"} and min(actor_ids.count("0"), actor_ids.count("1")) >= 20
    assert not [t for t in threading.enumerate() if t.name.startswith(("actor_", "learner"))]


@pytest.mark.parametrize("frames_once", [False, True])
def test_dqn_acts_and_learns_on_atari_frames(tmp_path, frames_once):
    config = DQNConfig(torso="atari", batch_size=8, min_replay_size=64, samples_per_insert=2.0,
                       max_replay_size=1000, head_hidden_size=32, store_frames_once=frames_once)
    # No step-0 evaluation: the first round comes after eval_every steps.
    program_config = ProgramConfig(num_actors=1, num_envs_per_actor=2, max_actor_steps=300,
                                   eval_every=100, eval_episodes=1, eval_at_start=False,
                                   print_every_s=0)

    def factory(seed, evaluation):
        if frames_once:  # Its observations stack frames, as Atari's do.
            return fakes.FrameStackAtari(episode_length=20, seed=seed)
        return fakes.fake_atari(episode_length=20, seed=seed)

    spec = make_environment_spec(factory(0, False))
    result = launch_threads(make_agent_program(DQNBuilder(config, program_config.layout), factory, spec,
                                               program_config, str(tmp_path)))
    assert result.status == "completed", result.error and result.error.formatted
    counts = result.objects["counter"].get_counts()
    assert counts["actor_steps"] >= 300 and counts["learner_steps"] > 0
    evaluated_at = [int(float(r["actor_steps"]))
                    for r in read_csv(os.path.join(tmp_path, "evaluator.csv"))]
    assert evaluated_at and min(evaluated_at) >= 100


def test_the_last_evaluation_round_is_of_the_agent_at_its_budget(tmp_path):
    """Rounds every 400 steps of a 1,000-step budget: 0, 400, 800, and one when the actors
    have taken their 1,000, after which the evaluator ends (the program waits for it)."""
    config = DQNConfig(hidden_sizes=(16,), head_hidden_size=0, batch_size=16, min_replay_size=50)
    program_config = ProgramConfig(num_actors=1, num_envs_per_actor=2, max_actor_steps=1000,
                                   eval_every=400, eval_episodes=3, print_every_s=0)
    spec = make_environment_spec(fakes.match_the_sign(0, False))
    program = make_agent_program(DQNBuilder(config, program_config.layout), fakes.match_the_sign,
                                 spec, program_config, str(tmp_path))
    result = launch_threads(program)
    assert result.status == "completed", result.error and result.error.formatted
    rows = read_csv(os.path.join(tmp_path, "evaluator.csv"))
    rounds = sorted({int(float(r["actor_steps"])) for r in rows})
    assert len(rounds) == 4 and rounds[0] == 0 and rounds[-1] >= 1000, rounds
    assert 400 <= rounds[1] < 800 <= rounds[2] < 1000, rounds  # One round per period.
    assert [int(float(r["actor_steps"])) for r in rows].count(rounds[-1]) == 3  # One round.
    final = result.objects["counter"].get_counts()["actor_steps"]
    assert rounds[-1] <= final  # Taken after the actors stopped: no step came after it.


def test_a_failing_node_stops_the_program_with_its_error(tmp_path):
    def broken(seed, evaluation):
        env = fakes.discrete_environment(episode_length=5, seed=seed)
        if not evaluation and seed % 2 == 1:
            env.step = lambda action: (_ for _ in ()).throw(RuntimeError("simulator crashed"))
        return env

    config = DQNConfig(hidden_sizes=(8,), head_hidden_size=0, batch_size=8, min_replay_size=16)
    program_config = ProgramConfig(num_actors=2, max_actor_steps=100_000, eval_episodes=0,
                                   print_every_s=0)
    spec = make_environment_spec(broken(0, True))
    result = launch_threads(make_agent_program(DQNBuilder(config, program_config.layout), broken,
                                               spec, program_config),
                            join_timeout_s=20)
    assert result.status == "failed"
    assert "simulator crashed" in str(result.error)
    assert result.error.node.startswith("actor_")


@pytest.mark.slow
def test_dqn_solves_cartpole_through_threads(tmp_path):
    from launch_programs import run

    assert run.main(["--env=gym:CartPole-v1", "--num_actors=2", "--num_envs_per_actor=4",
                     "--max_actor_steps=100000", f"--logdir={tmp_path}", "--print_every_s=0"]) == 0
    assert evaluation_stats(str(tmp_path))["eval_return_mean_last10"] >= 475


def _small_dqn():
    return DQNConfig(hidden_sizes=(16,), head_hidden_size=16, batch_size=16, min_replay_size=100,
                     samples_per_insert=2.0, n_step=2, variable_update_period=50)


@pytest.mark.parametrize("env_groups", [1, 2])
def test_crashing_simulators_are_reset_counted_and_lose_no_transition(tmp_path, env_groups):
    program_config = ProgramConfig(num_actors=2, num_envs_per_actor=2, max_actor_steps=2000,
                                   eval_episodes=0, print_every_s=0, env_groups=env_groups)
    spec = make_environment_spec(fakes.match_the_sign())
    simulators = []

    def flaky(seed: int = 0, evaluation: bool = False):
        env = fakes.flaky_match_the_sign(seed, evaluation)
        simulators.append(env)
        return env

    result = launch_threads(make_agent_program(
        DQNBuilder(_small_dqn(), program_config.layout), flaky, spec, program_config,
        str(tmp_path)))
    assert result.status == "completed", result.error and result.error.formatted
    counts = result.objects["counter"].get_counts()
    # Every crash counted: how far each simulator got depends on how the threads were
    # scheduled (one actor may take most of the budget), the count of crashes does not.
    crashes = [sum(step <= env.steps for step in (15, 40)) for env in simulators
               if isinstance(env, fakes.FlakyEnvironment)]
    assert len(crashes) == 4 and max(crashes) == 2  # Some simulator crashed twice.
    assert counts["actor_failed_episodes"] == sum(crashes)
    info = result.objects["replay"].info()[DQNBuilder.table_name]
    assert info["num_inserts"] == counts["actor_steps"]  # Cut episodes written as truncated.


def test_too_many_simulator_failures_stop_the_program_with_the_error(tmp_path):
    program_config = ProgramConfig(num_actors=1, num_envs_per_actor=2, max_actor_steps=2000,
                                   eval_episodes=0, print_every_s=0, max_env_failures=1)
    spec = make_environment_spec(fakes.match_the_sign())
    result = launch_threads(make_agent_program(
        DQNBuilder(_small_dqn(), program_config.layout), fakes.flaky_match_the_sign, spec,
        program_config, str(tmp_path)))
    assert result.status == "failed"
    assert result.error.node == "actor_0"
    assert "EnvironmentFailure" in str(result.error) and "limit 1" in str(result.error)


def test_dqn_acts_on_ale_vector_environments_in_alternating_groups(tmp_path):
    """`--atari_vector_env --env_groups=2`: real Pong games in ale-py's C++ threads, two groups."""
    from components.environments import make_environment, make_vector_environment

    config = DQNConfig(torso="atari", batch_size=8, min_replay_size=64, samples_per_insert=2.0,
                       max_replay_size=1000, head_hidden_size=32)
    program_config = ProgramConfig(num_actors=1, num_envs_per_actor=4, env_groups=2,
                                   max_actor_steps=400, eval_episodes=0, print_every_s=0)
    spec = make_environment_spec(make_environment("atari:Pong", seed=0))
    program = make_agent_program(
        DQNBuilder(config, program_config.layout),
        lambda seed, evaluation: make_environment("atari:Pong", seed=seed),
        spec, program_config, str(tmp_path),
        batched_environment_factory=lambda seeds, evaluation: make_vector_environment(
            "atari:Pong", seeds, evaluation))
    result = launch_threads(program)
    assert result.status == "completed", result.error and result.error.formatted
    counts = result.objects["counter"].get_counts()
    assert counts["actor_steps"] >= 400 and counts["learner_steps"] > 0
    info = result.objects["replay"].info()[DQNBuilder.table_name]
    assert info["num_inserts"] == counts["actor_steps"]  # Both groups' streams reached replay.


class _Idle:
    """A node without run(): records its stop(); `uses` are the nodes it was given."""

    def __init__(self, name: str, events: list, *uses):
        self._name, self._events = name, events

    def stop(self) -> None:
        self._events.append(("stop", self._name))


class _Runner(_Idle):
    """Runs until stopped, then takes a while to flush; or raises, if told to."""

    def __init__(self, name: str, events: list, *uses, raise_after_s: float | None = None):
        super().__init__(name, events)
        self._stopped = threading.Event()
        self._raise_after_s = raise_after_s

    def run(self) -> None:
        if self._raise_after_s is not None:
            time.sleep(self._raise_after_s)
            raise RuntimeError("judge quits")
        self._stopped.wait(10.0)
        time.sleep(0.1)  # Flushing: the next stage must wait for it.
        self._events.append(("returned", self._name))

    def stop(self) -> None:
        super().stop()
        self._stopped.set()


def test_threads_launcher_stops_nodes_in_the_programs_stages():
    events: list = []
    program = Program("fake")
    store = program.add_node("store", "store", _Idle, "store", events)
    clock = program.add_node("clock", "clock", _Idle, "clock", events, store)
    program.add_node("trainer", "trainer", _Runner, "trainer", events)
    for i in range(2):
        program.add_node(f"worker_{i}", "worker", _Runner, f"worker_{i}", events, ends_program=True)
    # A failing node ends the run while every other runner still runs.
    program.add_node("judge", "judge", _Runner, "judge", events, clock, raise_after_s=0.2)
    result = launch_threads(program, join_timeout_s=5)
    assert result.status == "failed" and result.error.node == "judge"
    stages = program.shutdown_stages(program.nodes, running={"trainer", "worker_0", "worker_1",
                                                             "judge"})
    stops = [name for event, name in events if event == "stop"]
    assert stops == [name for stage in stages for name in stage.names]
    assert stops == ["worker_0", "worker_1", "trainer", "judge", "clock", "store"]
    # Each waiting stage's run() calls returned before the next stage was stopped.
    assert max(events.index(("returned", f"worker_{i}")) for i in range(2)) < events.index(
        ("stop", "trainer"))
    assert events.index(("returned", "trainer")) < events.index(("stop", "clock"))
    assert not [t for t in threading.enumerate() if t.name in program.nodes]
