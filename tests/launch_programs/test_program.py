"""The program graph: the shutdown order every launcher follows."""

from __future__ import annotations

import pytest

from launch_programs.program import Handle, Program, Stage


def _nothing():
    return None


def _fake_program() -> Program:
    program = Program("fake")
    store = program.add_node("store", "store", _nothing)
    clock = program.add_node("clock", "clock", _nothing, store)
    trainer = program.add_node("trainer", "trainer", _nothing, store=store, clock=clock)
    for i in range(3):
        program.add_node(f"worker_{i}", "worker", _nothing, store, trainer, ends_program=True)
    program.add_node("judge", "judge", _nothing, trainer)
    program.add_node("late", "late", _nothing, store)
    return program


def test_enders_then_other_runners_then_the_rest_in_reverse_order_of_construction():
    program = _fake_program()
    # worker_2 and `late` were never built (a launch stopped during start-up).
    built = ["store", "clock", "trainer", "worker_0", "worker_1", "judge"]
    stages = program.shutdown_stages(built, running={"trainer", "worker_0", "worker_1", "judge"})
    assert stages == [
        Stage(("worker_0", "worker_1"), wait_for_run=True),  # Flush while the trainer samples.
        Stage(("trainer", "judge"), wait_for_run=True),
        Stage(("clock",), wait_for_run=False),
        Stage(("store",), wait_for_run=False),  # Everything else uses it: last.
    ]


def test_stages_follow_construction_order_not_the_order_built_is_given_in():
    program = _fake_program()
    built = ["judge", "worker_1", "store", "trainer", "worker_0", "clock", "late", "worker_2"]
    stages = program.shutdown_stages(built, running={"judge", "trainer"})
    assert stages == [
        # An ender is stopped first and waited for even if its run() never started.
        Stage(("worker_0", "worker_1", "worker_2"), wait_for_run=True),
        Stage(("trainer", "judge"), wait_for_run=True),
        Stage(("late",), wait_for_run=False),
        Stage(("clock",), wait_for_run=False),
        Stage(("store",), wait_for_run=False),
    ]


def test_a_runner_whose_run_is_gone_is_stopped_with_the_rest_and_empty_stages_are_left_out():
    program = _fake_program()
    stages = program.shutdown_stages(["store", "clock", "trainer"], running=set())
    assert stages == [Stage(("trainer",), False), Stage(("clock",), False), Stage(("store",), False)]
    assert program.shutdown_stages([], running=set()) == []


def test_the_agent_program_stops_actors_and_evaluator_then_learner_then_counter_then_replay():
    """The evaluator ends the program with the actors (its round at the budget comes after
    theirs), so an interrupted program stops it with them."""
    from agentkit.specs import make_environment_spec
    from agents.dqn import DQNBuilder, DQNConfig
    from launch_programs.agent_program import ProgramConfig, make_agent_program
    from tests import fakes

    spec = make_environment_spec(fakes.match_the_sign())
    config = ProgramConfig(num_actors=2, eval_episodes=1)
    program = make_agent_program(DQNBuilder(DQNConfig(), config.layout), fakes.match_the_sign,
                                 spec, config)
    running = {"learner", "actor_0", "actor_1", "evaluator"}
    assert program.shutdown_stages(program.nodes, running) == [
        Stage(("actor_0", "actor_1", "evaluator"), True),
        Stage(("learner",), True),
        Stage(("counter",), False),
        Stage(("replay",), False),
    ]


def test_a_node_may_only_use_earlier_nodes_so_reverse_construction_order_is_safe():
    program = Program("fake")
    with pytest.raises(ValueError, match="'store', which is not defined yet"):
        program.add_node("clock", "clock", _nothing, store=Handle("store"))
