"""summary.json's time figures: what wall_time_s counts from, and time-to-target without the
start-ups (Ray's start, node builds), the same point under threads and Ray."""

from __future__ import annotations

import pytest

from launch_programs.summary import WALL_TIME_ORIGIN, evaluation_stats, time_after_startup, write_summary


def _evaluator_csv(logdir, rounds):
    """evaluator.csv with one row per (actor_steps, wall_time_s, return)."""
    lines = ["wall_time_s,actor_steps,learner_steps,episode_return"]
    lines += [f"{t},{steps},0,{ret}" for steps, t, ret in rounds]
    (logdir / "evaluator.csv").write_text("\n".join(lines) + "\n")


def test_one_life_leaves_out_its_start_up():
    lives = [{"wall_time_s_before": 0.0, "startup_s": 4.5, "wall_time_s": 60.0}]
    assert time_after_startup(20.0, lives) == 15.5
    assert time_after_startup(3.0, lives) == 0.0  # Never below the start of acting.


def test_a_resumed_run_leaves_out_each_start_up_before_the_time():
    lives = [{"wall_time_s_before": 0.0, "startup_s": 2.0, "wall_time_s": 30.0},
             {"wall_time_s_before": 30.0, "startup_s": 9.0, "wall_time_s": 40.0}]
    assert time_after_startup(25.0, lives) == 23.0  # In the first life: its start-up only.
    assert time_after_startup(50.0, lives) == 39.0  # In the second: both.
    assert time_after_startup(33.0, lives) == 28.0  # Inside the second start-up: 3 s of it.


def test_a_life_that_recorded_no_start_up_gives_none():
    lives = [{"wall_time_s_before": 0.0, "wall_time_s": 30.0},  # Killed: nothing recorded.
             {"wall_time_s_before": 30.0, "startup_s": 2.0, "wall_time_s": 10.0}]
    assert time_after_startup(35.0, lives) is None


def test_first_reached_says_both_times_and_the_summary_its_origin(tmp_path):
    _evaluator_csv(tmp_path, [(0, 3.0, 10.0), (0, 3.1, 12.0), (5000, 21.0, 480.0),
                              (5000, 21.4, 490.0), (10000, 40.0, 500.0)])
    lives = [{"wall_time_s_before": 0.0, "startup_s": 6.25, "wall_time_s": 45.0}]
    reached = evaluation_stats(str(tmp_path), 475.0, lives)["first_reached"]
    assert reached["actor_steps"] == 5000 and reached["eval_return_mean"] == 485.0
    assert reached["wall_time_s"] == 21.0
    assert reached["wall_time_s_after_startup"] == pytest.approx(14.75)
    assert "wall_time_s_after_startup" not in evaluation_stats(str(tmp_path), 475.0)[
        "first_reached"]  # Without the lives, no claim.
    summary = write_summary(str(tmp_path), "dqn", "gym:CartPole-v1", "threads", "completed",
                            {"actor_steps": 10000}, 45.0, {}, {}, 475.0, {"lives": lives})
    assert summary["wall_time_origin"] == WALL_TIME_ORIGIN
    assert summary["first_reached"]["wall_time_s_after_startup"] == pytest.approx(14.75)
