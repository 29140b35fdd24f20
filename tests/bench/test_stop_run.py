"""bench/stop_run.py: a run frozen with SIGSTOP and let go with SIGCONT completes as if
nothing happened; how the probe reads a run and judges it."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.commands import ROOT, shell_signals, user_env

sys.path.insert(0, os.path.join(ROOT, "bench"))
try:
    import stop_run
finally:
    sys.path.pop(0)

ACTOR_CSV = """wall_time_s,actor_steps,learner_steps,actor_episodes,actor_id,episode_return
14.0,304,0,1,1,12
14.1,208,0,2,0,13
14.2,351,0,3,1,15
15.0,340,0,4,0,9
16.0,330,0,5,1,9
"""


def _passing() -> dict:
    return {"exit_code": 0, "stopped": {"at_actor_steps": 15_000}, "restarts_seen": [],
            "counts_went_back": [], "moved_again_after_s": 2.0, "left_running": [],
            "summary": {"status": "completed", "actor_steps": 60_010, "node_restarts": {}}}


def test_only_an_actors_own_rows_must_never_go_back(tmp_path):
    (tmp_path / "actor.csv").write_text(ACTOR_CSV)
    counts = stop_run.actor_counts(str(tmp_path))
    assert counts == {"1": [304, 351, 330], "0": [208, 340]}
    assert stop_run.went_back(counts) == [("1", 351, 330)]  # 304 -> 208 is two actors.
    assert stop_run.progress_of(str(tmp_path), "actor_0") == 340
    (tmp_path / "learner.csv").write_text("wall_time_s,actor_steps,learner_steps\n1,5,7\n2,9,12\n")
    assert stop_run.progress_of(str(tmp_path), "learner") == 12


def test_the_verdict_names_each_thing_a_run_got_wrong():
    assert stop_run.verdict(_passing(), 60_000) == []
    wrong = _passing()
    wrong.update(exit_code=-9, stopped=None, restarts_seen=["learner"], moved_again_after_s=None,
                 counts_went_back=[("0", 9, 3)], left_running=["raylet"])
    wrong["summary"].update(status="failed", actor_steps=120_000)
    said = stop_run.verdict(wrong, 60_000)
    assert said == ["exit code -9", "status failed", "never stopped (the run ended before "
                    "--stop_at)", "nodes rebuilt: ['learner']", "actor.csv's count went back: "
                    "[('0', 9, 3)]", "actor_steps 120000 for a budget of 60000",
                    "no count moved after SIGCONT", "left running: ['raylet']"]


def test_a_threads_run_stopped_and_continued_completes_its_budget_once(tmp_path):
    """SIGSTOP of every process of the run (a suspended laptop) for 4 s, then SIGCONT: the run goes
    on within seconds, completes, rebuilds nothing and counts its budget once."""
    out = tmp_path / "stop_run.json"
    done = subprocess.run(
        [sys.executable, "bench/stop_run.py", "--launch=threads", "--stop=all", "--stop_s=4",
         "--stop_at=1500", "--max_actor_steps=6000", f"--out={out}"],
        cwd=ROOT, env=user_env(), capture_output=True, text=True, timeout=240,
        preexec_fn=shell_signals)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    [result] = json.loads(out.read_text())
    assert result["wrong"] == [] and result["stopped"]["held_s"] >= 4.0
    assert result["stopped"]["actor_steps_while_held"] == 0  # Frozen means frozen.
    assert 0 <= result["moved_again_after_s"] < 30
    assert result["summary"]["status"] == "completed"
    assert 6000 <= result["summary"]["actor_steps"] < 6000 + 1500
