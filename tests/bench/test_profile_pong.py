"""bench/profile_pong.py: py-spy's samples sorted into where each thread's wall-clock goes."""

from __future__ import annotations

import json
import os
import sys

from tests.commands import ROOT

sys.path.insert(0, os.path.join(ROOT, "bench"))
try:
    import profile_pong
finally:
    sys.path.pop(0)

BOOT = "_bootstrap (threading.py:1002);run (threading.py:982);_target (launch_programs/threads.py:51)"
RAW = "\n".join([
    f"thread (64): actor_0;{BOOT};run (agentkit/environment_loop.py:141);_observe (agentkit/"
    "environment_loop.py:211);update (components/variable_client.py:137);wait (threading.py:331) 60",
    f"thread (64): actor_0;{BOOT};run (agentkit/environment_loop.py:141);step (components/"
    "environments/atari_vector.py:115);recv (ale_py/vector_env.py:254) 30",
    f"thread (64): actor_0;{BOOT};run (agentkit/environment_loop.py:140);select_action (components/"
    "actors/feed_forward.py:101);__call__ (components/compiled.py:54) 10",
    # The actor's budget watcher is not the actor: its waiting counts nowhere.
    f"thread (73): actor_0-budget;{BOOT};_watch_budget (launch_programs/nodes.py:258);wait "
    "(threading.py:331) 100",
    f"thread (63): learner;{BOOT};step (components/learners/step_loop.py:123);__call__ "
    "(components/compiled.py:54) 75",
    f"thread (63): learner;{BOOT};__next__ (components/datasets/reverb_dataset.py:119) 25",
    f"thread (65): evaluator;{BOOT};run (launch_programs/nodes.py:358);wait (threading.py:331) 100",
    "thread (13): monitor;_run (launch_programs/monitor.py:138);wait (threading.py:331) 100",
    "a line that is not a sample",
])


def test_samples_are_sorted_by_thread_and_stack_into_shares_of_wall_clock():
    rows = profile_pong.table(profile_pong.classify(RAW))
    shares = {(r["thread"], r["category"]): r["wall_fraction"] for r in rows}
    assert shares == {
        ("actor", "fetching weights or waiting for them"): 0.6,
        ("actor", "env stepping"): 0.3,
        ("actor", "inference"): 0.1,  # The policy call, although it runs a compiled function.
        ("learner", "SGD step (forward, backward, Adam)"): 0.75,
        ("learner", "reading data (and waiting for the round)"): 0.25,
        ("evaluator", "waiting for its next round"): 1.0,
    }
    assert [r["thread"] for r in rows][:3] == ["actor"] * 3  # Largest share first.


def test_only_node_threads_have_a_kind():
    assert profile_pong.thread_kind("actor_12") == "actor"
    assert profile_pong.thread_kind("actor_0-budget") is None
    assert profile_pong.thread_kind("learner") == "learner"
    assert profile_pong.thread_kind("MainThread") is None


def test_rl_games_split_comes_from_the_kept_results_when_its_log_is_gone(tmp_path, monkeypatch):
    kept = {"epochs": 119, "agent_steps_per_s": 307.0, "us_per_agent_step": {"env stepping": 1.0}}
    results = tmp_path / "peers_pong.json"
    results.write_text(json.dumps({"runs": {"rl_games": {"timing_split": kept}}}))
    monkeypatch.setattr(profile_pong, "PEERS_OUT", str(results))
    assert profile_pong.kept_rl_games_split() == kept
    results.write_text(json.dumps({"runs": {"ours": {}}}))  # No rl_games run kept: none.
    assert profile_pong.kept_rl_games_split() is None


def test_the_arithmetic_fraction_is_the_step_flops_over_the_matmul_rate():
    # 1,000 steps/s of 64 MFLOP is 64 GFLOP/s: 0.2 of a 320 GFLOP/s matmul rate.
    assert profile_pong.arithmetic_fraction(1000.0, 64.0, 320.0) == 0.2


def test_the_run_s_steps_come_from_learner_rows_while_no_game_has_ended(tmp_path):
    (tmp_path / "actor.csv").write_text("wall_time_s,actor_steps,episode_return\n")
    (tmp_path / "learner.csv").write_text(
        "wall_time_s,actor_steps,learner_steps\n1.0,8192,16\n2.0,16384,32\n")
    assert profile_pong.actor_steps(str(tmp_path)) == 16384
    with open(tmp_path / "actor.csv", "a") as f:  # A game ends later than the learner's row.
        f.write("3.0,20000,-21.0\n")
    assert profile_pong.actor_steps(str(tmp_path)) == 20000
    assert profile_pong.actor_steps(str(tmp_path / "none")) == 0
