"""bench/peers_pong.py: how a run's games are read and when it stops, against a fake peer
(a process that prints games as CleanRL does), and a one-line refusal of an unknown run."""

from __future__ import annotations

import json
import os
import sys
import types

import pytest

from tests.commands import ROOT

sys.path.insert(0, os.path.join(ROOT, "bench"))
try:
    import peers_pong
finally:
    sys.path.pop(0)


def test_the_mean_counts_only_a_full_window_and_keeps_the_first_crossing():
    window = peers_pong.GameWindow(size=3, target=18.0)
    window.add(1.0, 100, 21.0)
    window.add(2.0, 200, 21.0)  # Two games of 21: a mean >= 18, but not yet 3 games.
    assert window.reached is None
    window.add(3.0, 300, 12.0)  # (21 + 21 + 12) / 3 = 18.
    assert window.reached == {"wall_time_s": 3.0, "agent_steps": 300, "mean": 18.0,
                              "games_so_far": 3}
    window.add(4.0, 400, -21.0)
    window.add(5.0, 500, 21.0)
    assert window.reached["agent_steps"] == 300 and window.count == 5


def test_a_peers_output_lines_are_read_as_games():
    assert peers_pong.game_of_line("cleanrl", "global_step=13080, episodic_return=-21.0\n") \
        == (13080, -21.0)
    assert peers_pong.game_of_line("cleanrl", "global_step=8, episodic_return=[19.]") == (8, 19.0)
    assert peers_pong.game_of_line("cleanrl", "SPS: 57") is None
    assert peers_pong.game_of_line("rl_games", '{"agent_steps": 64, "game_return": -20.0}') \
        == (64, -20.0)
    assert peers_pong.game_of_line("rl_games", "fps step: 2183 frames: 8192") is None


def test_a_growing_csv_gives_each_whole_row_once(tmp_path):
    path = tmp_path / "actor.csv"
    tail = peers_pong.CsvTail(str(path))
    assert list(tail.rows()) == []  # Not written yet.
    path.write_text("actor_steps,episode_return\n10,-21\n20,-2")  # The last row half written.
    assert list(tail.rows()) == [{"actor_steps": "10", "episode_return": "-21"}]
    with open(path, "a") as f:
        f.write("0\n30,\n")
    assert list(tail.rows()) == [{"actor_steps": "20", "episode_return": "-20"},
                                 {"actor_steps": "30", "episode_return": ""}]
    assert list(tail.rows()) == []


FAKE_PEER = """
import sys, time
for game in range(1, 1000):
    print(f"global_step={game * 10}, episodic_return={-21.0 if game <= 50 else 20.0}",
          flush=True)
    time.sleep(0.002)
time.sleep(600)  # A peer that would go on: the benchmark must stop it.
"""


def test_a_run_stops_at_the_target_and_leaves_no_process(tmp_path, monkeypatch):
    """Games 1-50 score -21, then 20. A window of 100 holding k games of -21 has the mean
    (2000 - 41k) / 100 >= 18 for k <= 4: game 146, step 1460. One of 20 games: (400 - 41k) /
    20 >= 18 for k = 0 only: game 70, step 700."""
    script = tmp_path / "fake_peer.py"
    script.write_text(FAKE_PEER)
    monkeypatch.setattr(peers_pong, "ensure_venv", lambda peer: sys.executable)
    monkeypatch.setattr(peers_pong, "command_of",
                        lambda *a: ([sys.executable, str(script)], {}))
    args = types.SimpleNamespace(seed=1, max_steps=10**6, max_minutes=5.0, target=18.0,
                                 our_flags="")
    result = peers_pong.run_peer(peers_pong.PEERS["cleanrl"], args, str(tmp_path))
    assert result["reached"] and result["stopped_by"] == "target"
    assert result["agent_steps_to_target"] == 1460
    assert result["own_report"]["first_at_target"]["agent_steps"] == 700  # Its 20-game mean.
    assert 0 < result["wall_time_s_to_target"] < 60
    assert result["exit_code"] < 0  # Stopped by a signal, not left to sleep.
    # The whole group is gone: no process of the fake peer is left.
    left = [p for p in os.listdir("/proc") if p.isdigit()
            and str(script) in open(f"/proc/{p}/cmdline", "rb").read().decode(errors="ignore")]
    assert left == []


def test_an_unknown_run_is_refused_in_one_line(tmp_path, capsys):
    code = peers_pong.main(["--runs=ours,stable_baselines", f"--out={tmp_path / 'out.json'}",
                            f"--keep={tmp_path / 'runs'}"])
    lines = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and "'stable_baselines'" in lines[0]
    assert not (tmp_path / "out.json").exists() and not (tmp_path / "runs").exists()


@pytest.mark.parametrize("flag", ["--max_steps=0", "--max_minutes=0"])
def test_an_empty_budget_is_refused(tmp_path, flag, capsys):
    code = peers_pong.main(["--runs=ours", flag, f"--out={tmp_path / 'out.json'}",
                            f"--keep={tmp_path / 'runs'}"])
    assert code == 2 and "must be > 0" in capsys.readouterr().err


def test_the_plan_names_each_run_in_order_without_installing(tmp_path, capsys):
    code = peers_pong.main(["--runs=cleanrl,ours,rl_games", "--plan", "--seed=3",
                            f"--out={tmp_path / 'out.json'}", f"--keep={tmp_path / 'runs'}"])
    plan = json.loads(capsys.readouterr().out)
    assert code == 0 and [run["name"] for run in plan] == ["cleanrl", "ours", "rl_games"]
    assert "--launch=threads" in plan[1]["command"]
    assert "cleanrl==1.2.0" in plan[0]["command"] and "--seed=3" in plan[0]["command"]
    assert "--agent=ppo --env=atari:Pong --sticky_actions=0" in plan[1]["command"]
    assert plan[1]["packages"] == [] and "rl-games==1.6.5" in plan[2]["packages"]
    assert all(run["protocol"]["sticky_actions"] == 0.0 for run in plan)
    assert plan[2]["stops_at"] == {"target": 18.0, "window_games": 100,
                                   "max_steps": 3_000_000, "max_minutes": 90.0}
    assert not (tmp_path / "out.json").exists() and not (tmp_path / "runs").exists()


def test_a_peer_stopped_by_its_budget_bounds_the_ratio_and_a_crash_gives_none():
    def run(to_target, stopped_by, whole):
        return {"wall_time_s_to_target": to_target, "stopped_by": stopped_by,
                "run_wall_time_s": whole}
    results = {"ours": run(600.0, "target", 601.0), "rl_games": run(1500.0, "target", 1500.0),
               "cleanrl": run(None, "max_minutes", 3600.0), "other": run(None, "exited", 50.0)}
    ratios, bounds = peers_pong.wall_clock_ratios(results)
    assert ratios == {"rl_games": 0.4} and bounds == {"cleanrl": round(600 / 3600, 3)}
    results["ours"] = run(None, "max_minutes", 3600.0)  # Ours short of it: no ratio at all.
    assert peers_pong.wall_clock_ratios(results) == ({}, {})


def test_a_peer_that_cannot_be_installed_is_one_line(tmp_path, capsys, monkeypatch):
    """A venv is made, pip cannot find the package: one line naming the peer, exit 2."""
    broken = peers_pong.Peer("rl_games", str(tmp_path / "venv"),
                             ("no-such-package-of-the-bench==0.0.1",),
                             "import no_such_package_of_the_bench", 100, {})
    monkeypatch.setitem(peers_pong.PEERS, "rl_games", broken)
    monkeypatch.setenv("PIP_NO_INDEX", "1")  # As offline: pip fails at once, no retries.
    code = peers_pong.main(["--runs=rl_games", f"--out={tmp_path / 'out.json'}",
                            f"--keep={tmp_path / 'runs'}"])
    lines = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(lines) == 1
    assert lines[0].startswith("error: rl_games: pip install failed")
    assert not (tmp_path / "out.json").exists()


def test_the_scaling_run_is_ours_under_ray_with_the_same_games_and_no_ratio_to_itself(
        tmp_path, capsys):
    peers_pong.main(["--runs=ours_ray", "--plan", "--our_flags=--max_policy_lag=1 --a=b",
                     f"--out={tmp_path / 'out.json'}"])
    [plan] = json.loads(capsys.readouterr().out)
    assert "--launch=ray --num_actors=2 --num_envs_per_actor=32" in plan["command"]
    assert plan["command"].endswith("--print_every_s=60 --max_policy_lag=1 --a=b")
    results = {name: {"wall_time_s_to_target": 600.0, "stopped_by": "target",
                      "run_wall_time_s": 600.0} for name in ("ours", "ours_ray")}
    assert peers_pong.wall_clock_ratios(results) == ({}, {})


def test_rl_games_own_timing_lines_split_its_agent_step(tmp_path):
    log = tmp_path / "output.log"
    lines = ["fps step: 9 fps step and policy inference: 9 fps total: 9 epoch: 1/250 frames: 0"]
    lines += [f"fps step: {env} fps step and policy inference: {policy} fps total: {total} "
              f"epoch: {i + 2}/250 frames: 8192" for i, (env, policy, total) in enumerate(
                  [(4000, 2000, 250), (5000, 2500, 200), (4000, 2000, 250)])]
    log.write_text("\n".join(["{\"agent_steps\": 64, \"game_return\": -21.0}", *lines]) + "\n")
    split = peers_pong.rl_games_split(str(log), skip=1)  # The first epoch's line is left out.
    assert split == {"epochs": 3, "agent_steps_per_s": 250.0, "us_per_agent_step": {
        "env stepping": 250.0, "inference": 250.0, "learning and the rest": 3500.0}}
    assert peers_pong.rl_games_split(str(tmp_path / "missing.log")) is None


FAKE_OURS = """
import json, os, time
os.makedirs("run", exist_ok=True)
open("run/actor.csv", "w").write("wall_time_s,actor_steps,episode_return\\n")  # No game ended.
with open("run/learner.csv", "w") as f:
    f.write("wall_time_s,actor_steps,learner_steps\\n1.0,8192,16\\n2.0,16384,32\\n")
time.sleep(2.5)  # Read by the benchmark's 1 s loop.
json.dump({"actor_steps": 20000, "config": {"rollout_length": 128}}, open("run/summary.json", "w"))
"""


def test_our_steps_are_read_while_no_game_has_ended_and_rays_cpu_is_not_claimed(
        tmp_path, monkeypatch):
    """Under ray a 6-minute run ended before its first 64 games did: actor.csv had no row,
    and the benchmark reported 0 steps. The learner's rows and the summary count them."""
    script = tmp_path / "fake_ours.py"
    script.write_text(FAKE_OURS)
    monkeypatch.setattr(peers_pong, "ensure_venv", lambda peer: sys.executable)
    monkeypatch.setattr(peers_pong, "command_of", lambda *a: ([sys.executable, str(script)], {}))
    args = types.SimpleNamespace(seed=1, max_steps=10**6, max_minutes=5.0, target=18.0,
                                 our_flags="")
    result = peers_pong.run_peer(peers_pong.PEERS["ours_ray"], args, str(tmp_path))
    assert result["stopped_by"] == "exited" and not result["reached"]
    assert result["run_agent_steps"] == 20000 and result["config"] == {"rollout_length": 128}
    assert result["cpu_seconds"] is None and "Ray" in result["cpu_seconds_note"]
    threads = peers_pong.run_peer(peers_pong.PEERS["ours"], args, str(tmp_path))
    assert threads["cpu_seconds"] is not None and "cpu_seconds_note" not in threads
