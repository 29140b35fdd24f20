"""bench/atari_suite.py: the Atari-5 estimate against its check points, a one-line refusal of an
unknown game, and a real (tiny) game run as a user runs it: its table, figure and resumption."""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
import time

import numpy as np
import pytest

from tests.commands import ROOT, shell_signals, user_env

sys.path.insert(0, os.path.join(ROOT, "bench"))
try:
    import atari_suite
finally:
    sys.path.pop(0)

SUITE = os.path.join(ROOT, "bench", "atari_suite.py")


def _suite(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, SUITE, *args], cwd=ROOT, env=user_env(),
                          capture_output=True, text=True, timeout=timeout,
                          preexec_fn=shell_signals)


def test_the_atari5_estimate_matches_its_check_points():
    model = atari_suite.load_json("atari5.json")
    scores = atari_suite.load_json("atari_scores.json")
    assert model["check_points"]
    for point in model["check_points"]:
        hns = {g: atari_suite.human_normalised(s, g, scores) for g, s in point["scores"].items()}
        assert atari_suite.atari5_median(hns, model) == pytest.approx(
            point["expected_median"], abs=1e-9), point["name"]
    # Human level on each game is 100 %; below random counts as random (clipped at 0).
    assert atari_suite.human_normalised(30.5, "Breakout", scores) == pytest.approx(100.0)
    worse = {g: -50.0 for g in atari_suite.ATARI5_GAMES}
    assert atari_suite.atari5_median(worse, model) == 0.0
    assert atari_suite.atari5_median(dict(worse, Qbert=None), model) is None


def test_a_curve_reference_is_read_at_the_suites_steps():
    ref = atari_suite.reference_score("dopamine-{game}-dqn.json", "Pong", 375_000)
    # Dopamine's DQN on Pong: -20.349 at 250k, -19.125 at 500k; halfway between.
    assert ref["mean"] == pytest.approx((-20.349 - 19.125) / 2, abs=1e-3)
    assert ref["agent_steps"] == 375_000
    assert atari_suite.reference_score("dopamine-{game}-dqn.json", "Pong", 10**9) is None
    assert atari_suite.reference_score("dopamine-{game}-dqn.json", "Tennis", 500_000) is None


def test_an_unknown_game_is_refused_in_one_line_before_anything_runs(tmp_path):
    result = _suite("--agent=ppo", "--games=Pong,NotAGame", f"--logroot={tmp_path / 'runs'}",
                    f"--out_dir={tmp_path / 'out'}", timeout=60)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "--games" in lines[0] and "'NotAGame'" in lines[0]
    assert not (tmp_path / "runs").exists() and not (tmp_path / "out").exists()


def test_a_rerun_of_a_game_outside_the_suite_is_refused_in_one_line(tmp_path, capsys):
    """It was ignored: the user waited hours for a suite that never ran the game."""
    code = atari_suite.main(["--agent=ppo", "--games=Pong,Breakout", "--rerun=Qbert", "--report_only",
                             f"--logroot={tmp_path / 'runs'}", f"--out_dir={tmp_path / 'out'}"])
    lines = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(lines) == 1
    assert "--rerun" in lines[0] and "'Qbert'" in lines[0] and "Pong,Breakout" in lines[0]
    assert not (tmp_path / "runs").exists() and not (tmp_path / "out").exists()


def test_games_are_named_with_or_without_the_atari_prefix():
    assert atari_suite.check_games(["atari:Breakout", "NameThisGame"]) == ["Breakout",
                                                                          "NameThisGame"]
    with pytest.raises(atari_suite.SuiteError, match="named twice"):
        atari_suite.check_games(["Pong", "atari:Pong"])
    with pytest.raises(atari_suite.SuiteError, match="'atari_Pong'"):
        atari_suite.check_games(["atari_Pong"])


def test_suites_of_other_flags_have_files_of_their_own():
    """A suite run with --run_flags writes beside the preset's, never over it."""
    assert atari_suite.flags_slug("") == ""
    assert atari_suite.flags_slug("--atari_life_loss --discount=0.995") == \
        "atari_life_loss-discount0.995"
    assert atari_suite.suite_name("ppo", 0.0) == "ppo"
    assert atari_suite.suite_name("ppo", 0.0, "--atari_life_loss") == "ppo-atari_life_loss"
    assert atari_suite.suite_name("ppo", 0.25, "--atari_life_loss") == \
        "ppo-sticky0.25-atari_life_loss"
    assert atari_suite.logdir_of("r", "ppo", 0.0, "Qbert", 1, "--atari_life_loss") == \
        os.path.join("r", "ppo-sticky0-atari_life_loss", "Qbert-s1")
    assert atari_suite.logdir_of("r", "ppo", 0.0, "Qbert", 1) == \
        os.path.join("r", "ppo-sticky0", "Qbert-s1")


def _episodes(logdir) -> list[tuple[int, float]]:
    with open(os.path.join(logdir, "evaluator.csv")) as f:
        return [(int(float(r["actor_steps"])), float(r["episode_return"]))
                for r in csv.DictReader(f)]


def test_a_game_runs_to_its_budget_writes_its_row_and_is_not_run_again(tmp_path):
    runs, out = tmp_path / "runs", tmp_path / "out"
    args = ["--agent=ppo", "--games=Breakout", "--steps=64", f"--logroot={runs}",
            f"--out_dir={out}", "--final_rounds=1",
            "--run_flags=--num_envs_per_actor=2 --rollout_length=16 --eval_episodes=2"]
    first = _suite(*args)
    assert first.returncode == 0, first.stdout[-2000:] + first.stderr[-2000:]
    # PPO's reference protocol (no sticky actions), and the extra flags in the names.
    name = "ppo-num_envs_per_actor2-rollout_length16-eval_episodes2"
    logdir = runs / "ppo-sticky0-num_envs_per_actor2-rollout_length16-eval_episodes2" / \
        "Breakout-s0"
    result = json.loads((out / f"{name}.json").read_text())
    (row,) = result["games"]
    assert row["status"] == "completed" and row["actor_steps"] >= 64
    episodes = _episodes(logdir)
    last = [r for s, r in episodes if s == max(s for s, _ in episodes)]
    assert row["final_score"] == pytest.approx(np.mean(last), abs=1e-3)
    assert row["final_episodes"] == len(last) == 2
    reference = atari_suite.load_json("ppo-atari-10M.json")["games"]["Breakout"]
    assert row["reference"]["mean"] == reference["mean"]
    assert row["reference_at_same_steps"] is False  # Its 2.5M steps, not the suite's 64.
    assert row["hns"] == pytest.approx(100 * (row["final_score"] - 1.72) / (30.5 - 1.72),
                                       abs=1e-3)
    assert result["sticky_actions"] == 0.0 and result["atari5_median_hns"] is None
    table = (out / f"{name}.md").read_text()
    assert "| Breakout | completed |" in table and f"{reference['mean']:g}" in table
    for figure in (f"{name}-Breakout.png", f"{name}.png"):  # The game's, and the suite's panels.
        assert (out / figure).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # Started again: the game took its budget, so nothing runs and the table is rewritten.
    summary = (logdir / "summary.json").stat().st_mtime_ns
    start = time.monotonic()
    again = _suite(*args)
    assert again.returncode == 0, again.stderr[-2000:]
    assert "[suite] Breakout: done" in again.stdout
    assert (logdir / "summary.json").stat().st_mtime_ns == summary
    assert time.monotonic() - start < 30  # No training run (one takes its TF start-up alone).
    assert json.loads((out / f"{name}.json").read_text())["games"][0]["final_score"] == \
        row["final_score"]
    # Its logdir gone (a fresh checkout holds the results, not runs/): the recorded row stays.
    shutil.rmtree(runs)
    kept = _suite(*args, "--report_only")
    assert kept.returncode == 0, kept.stderr[-2000:]
    (kept_row,) = json.loads((out / f"{name}.json").read_text())["games"]
    assert kept_row["logdir_missing"] is True
    assert kept_row["final_score"] == row["final_score"]
    assert kept_row["eval_rounds"] == row["eval_rounds"]
    assert "| Breakout | completed |" in (out / f"{name}.md").read_text()
    # Started again with its run directory gone: the recorded result is not replaced by a new
    # run's partial one (nothing runs); --rerun would run it.
    again = _suite(*[a for a in args if not a.startswith("--games")], "--games=atari:Breakout")
    assert again.returncode == 0, again.stderr[-2000:]
    assert "[suite] Breakout: done (recorded in" in again.stdout and "--rerun=Breakout" in \
        again.stdout
    assert not runs.exists()
    (kept_row,) = json.loads((out / f"{name}.json").read_text())["games"]
    assert kept_row["final_score"] == row["final_score"] and kept_row["status"] == "completed"
    # A table of another game keeps the recorded one's row, first, as it was.
    other = _suite(*[a for a in args if not a.startswith("--games")], "--games=Pong",
                   "--report_only")
    assert other.returncode == 0, other.stderr[-2000:]
    games = json.loads((out / f"{name}.json").read_text())["games"]
    assert [g["game"] for g in games] == ["Breakout", "Pong"]
    assert games[0] == kept_row and games[1]["status"].startswith("not run")


def test_the_final_score_is_the_mean_of_the_last_rounds_games(tmp_path):
    logdir = tmp_path / "Pong-s0"
    logdir.mkdir()
    (logdir / "run.json").write_text(json.dumps({"agent": "dqn", "env": "atari:Pong"}))
    rows = [(0, -21.0), (0, -19.0), (100, -5.0), (100, -3.0), (100, -1.0), (200, 4.0)]
    (logdir / "evaluator.csv").write_text(
        "wall_time_s,actor_steps,learner_steps,episode_return,episode_length\n"
        + "".join(f"{i},{s},0,{r},10\n" for i, (s, r) in enumerate(rows)))
    scores = atari_suite.load_json("atari_scores.json")
    reference = {"mean": -8.0, "agent_steps": 200}
    row = atari_suite.game_result(str(logdir), "Pong", 200, 2, reference, scores)
    assert row["final_score"] == pytest.approx(-1.25)  # (-5 - 3 - 1 + 4) / 4 games.
    assert row["final_episodes"] == 4 and row["final_rounds_steps"] == [100, 200]
    assert row["reference_at_same_steps"] is True
    assert "ratio_to_reference" not in row  # A negative reference: no ratio of scores.
    assert row["hns"] == pytest.approx(100 * (-1.25 + 20.71) / (14.6 + 20.71), abs=1e-3)


def test_the_estimate_waits_for_every_atari5_game_to_take_its_budget():
    """A game still running has a score on the way (its last rounds): not counted."""
    model = atari_suite.load_json("atari5.json")
    rows = [{"game": g, "status": "completed", "actor_steps": 1000, "hns": 50.0}
            for g in atari_suite.ATARI5_GAMES]
    full = atari_suite.rows_atari5_median(rows, 1000, model)
    assert full == pytest.approx(atari_suite.atari5_median(
        dict.fromkeys(atari_suite.ATARI5_GAMES, 50.0), model))
    rows[-1] = dict(rows[-1], status="running or stopped")
    assert atari_suite.rows_atari5_median(rows, 1000, model) is None
    rows[-1] = dict(rows[-1], status="completed", actor_steps=999)
    assert atari_suite.rows_atari5_median(rows, 1000, model) is None
