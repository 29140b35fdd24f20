"""launch_programs.plot: the curves read from run directories, grouped, and drawn to a PNG."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from launch_programs import plot


def _run(path, agent="dqn", env="minatar:breakout", rounds=((0, [1, 3]), (100, [4, 6, 8])),
         training=((10, 1.0), (60, 2.0), (90, 4.0)), wall_per_step=0.5):
    os.makedirs(path)
    with open(os.path.join(path, "run.json"), "w") as f:
        json.dump({"agent": agent, "env": env}, f)
    with open(os.path.join(path, "evaluator.csv"), "w") as f:
        f.write("wall_time_s,actor_steps,learner_steps,episode_return,episode_length\n")
        for steps, returns in rounds:
            for i, r in enumerate(returns):
                f.write(f"{steps * wall_per_step + i},{steps},0,{r},10\n")
    with open(os.path.join(path, "actor.csv"), "w") as f:
        f.write("wall_time_s,actor_steps,learner_steps,actor_episodes,episode_return\n")
        for steps, r in training:
            f.write(f"{steps * wall_per_step},{steps},0,1,{r}\n")
    return str(path)


def test_a_run_gives_its_rounds_means_and_spread(tmp_path):
    curves = plot.load_run(_run(tmp_path / "a"))
    assert curves.label == "dqn on minatar:breakout"
    np.testing.assert_array_equal(curves.eval_steps, [0, 100])
    np.testing.assert_allclose(curves.eval_mean, [2.0, 6.0])
    np.testing.assert_allclose(curves.eval_std, [1.0, np.std([4, 6, 8])])
    np.testing.assert_array_equal(curves.eval_wall, [0.0, 50.0])  # The round's first episode.
    line = plot.evaluation_line([curves])
    np.testing.assert_allclose(line.low, [1.0, 6.0 - np.std([4, 6, 8])])
    wall = plot.evaluation_line([curves], x="wall_time_s")
    np.testing.assert_array_equal(wall.x, [0.0, 50.0])


def test_runs_of_one_agent_and_env_make_one_line_over_their_common_rounds(tmp_path):
    a = plot.load_run(_run(tmp_path / "a"))
    b = plot.load_run(_run(tmp_path / "b", rounds=((2, [0]), (104, [10]), (200, [12]))))
    c = plot.load_run(_run(tmp_path / "c", agent="impala"))
    groups = plot.group_runs([a, c, b])
    assert [[r.label for r in g] for g in groups] == [["dqn on minatar:breakout"] * 2,
                                                      ["impala on minatar:breakout"]]
    line = plot.evaluation_line(groups[0])
    assert line.label == "dqn on minatar:breakout (2 runs)"
    np.testing.assert_allclose(line.x, [1.0, 102.0])  # Two rounds: the shorter run's.
    np.testing.assert_allclose(line.centre, [1.0, 8.0])
    np.testing.assert_allclose(line.low, [0.0, 6.0])
    np.testing.assert_allclose(line.high, [2.0, 10.0])


def test_training_returns_are_averaged_in_bins_of_x(tmp_path):
    curves = plot.load_run(_run(tmp_path / "a", training=((0, 1.0), (1, 3.0), (99, 5.0),
                                                          (100, 7.0))))
    line = plot.training_line([curves], bins=2)
    np.testing.assert_allclose(line.x, [0.5, 99.5])
    np.testing.assert_allclose(line.centre, [2.0, 6.0])
    np.testing.assert_allclose(line.high - line.centre, [1.0, 1.0])


def test_the_command_writes_a_png_and_names_each_line(tmp_path, capsys):
    runs = [_run(tmp_path / "a"), _run(tmp_path / "b", agent="impala")]
    out = tmp_path / "figs" / "curves.png"
    assert plot.main([*runs, f"--out={out}", "--x=wall_time_s"]) == 0
    with open(out, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    assert os.path.getsize(out) < 200_000  # Small enough to commit.
    printed = capsys.readouterr().out
    assert "dqn on minatar:breakout: 2 evaluation rounds, last mean 6.00" in printed
    assert "impala on minatar:breakout" in printed


@pytest.mark.parametrize("case", ["missing", "not_a_run", "empty"])
def test_a_missing_or_empty_run_directory_fails_in_one_line_naming_it(tmp_path, capsys, case):
    path = tmp_path / "run"
    if case == "not_a_run":
        path.mkdir()
    if case == "empty":
        _run(path, rounds=(), training=())
    assert plot.main([str(path), f"--out={tmp_path / 'x.png'}"]) == 2
    error = capsys.readouterr().err.strip()
    assert error.startswith(f"plot: {path}: ") and "\n" not in error
    assert not (tmp_path / "x.png").exists()
