"""A full run under --launch=ray that loses an actor and then the learner to kill -9.

Runs the command line (DQN on CartPole by default) with the learner
checkpointed every `--checkpoint_every_s`, reads the node pids from the
launcher's "[ray] nodes up" line, kills actor_1's process once the counter
passes `--kill_actor_at` actor steps and the learner's once it passes
`--kill_learner_at`. The run must finish on its own, reach its target and
count the steps of both lives. Writes bench/results/kill_run.json.

    python bench/kill_run.py --kill_actor_at=30000 --kill_learner_at=60000
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def last_actor_steps(logdir: str) -> int:
    path = os.path.join(logdir, "actor.csv")
    if not os.path.exists(path):
        return 0
    with open(path) as f:
        rows = list(csv.DictReader(f))
    return int(float(rows[-1]["actor_steps"])) if rows else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agent", default="dqn")
    parser.add_argument("--env", default="gym:CartPole-v1")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--kill_actor_at", type=int, default=30_000)
    parser.add_argument("--kill_learner_at", type=int, default=60_000)
    parser.add_argument("--checkpoint_every_s", type=float, default=10.0)
    parser.add_argument("--logdir", default=None)
    args = parser.parse_args()
    logdir = args.logdir or tempfile.mkdtemp(prefix="kill-run-")
    cmd = [sys.executable, "-m", "launch_programs.run", f"--agent={args.agent}",
           f"--env={args.env}", "--launch=ray", "--num_actors=2", f"--seed={args.seed}",
           f"--checkpoint_every_s={args.checkpoint_every_s}", f"--logdir={logdir}", "--fresh"]
    print("[kill_run]", " ".join(cmd[1:]), flush=True)
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, start_new_session=True)
    lines: list[str] = []
    pids: dict[str, int] = {}

    def read_output():
        for line in proc.stdout:
            lines.append(line)
            if "reverb/cc" in line:
                continue
            sys.stdout.write(line)
            match = re.search(r"\[ray\] nodes up: (.*)", line)
            if match:
                pids.update({k: int(v) for k, v in
                             (item.split("=") for item in match.group(1).split(", "))})

    reader = threading.Thread(target=read_output, daemon=True)
    reader.start()
    kills = []
    plan = [("actor_1", args.kill_actor_at), ("learner", args.kill_learner_at)]
    start = time.time()
    while proc.poll() is None and plan:
        name, at = plan[0]
        steps = last_actor_steps(logdir)
        if pids and steps >= at:
            os.kill(pids[name], signal.SIGKILL)
            kills.append({"node": name, "pid": pids[name], "actor_steps": steps,
                          "wall_time_s": round(time.time() - start, 1)})
            print(f"[kill_run] kill -9 {name} (pid {pids[name]}) at {steps} actor steps",
                  flush=True)
            plan.pop(0)
        time.sleep(0.5)
    code = proc.wait()
    reader.join(10)
    summary = json.load(open(os.path.join(logdir, "summary.json")))
    restored = [int(m.group(1)) for m in
                (re.search(r"\[learner\] restored from .* at step (\d+)", x) for x in lines) if m]
    result = {
        "command": " ".join(cmd[1:]), "exit_code": code, "kills": kills,
        "learner_restored_at_step": restored,
        "summary": {k: summary.get(k) for k in (
            "status", "actor_steps", "learner_steps", "wall_time_s", "eval_return_mean_last10",
            "first_reached", "node_restarts")},
        "machine": f"{platform.node()}, {os.cpu_count()} cpus",
    }
    out = os.path.join(ROOT, "bench", "results", "kill_run.json")
    with open(out, "w") as f:
        json.dump(result, f, indent=1)
    s = result["summary"]
    print(f"[kill_run] exit {code}, status {s['status']}, {len(kills)} kills, restarts "
          f"{s['node_restarts']}, learner restored at {restored}, actor_steps {s['actor_steps']}, "
          f"learner_steps {s['learner_steps']}, eval {s['eval_return_mean_last10']}, first reached "
          f"{s['first_reached']} -> {out}", flush=True)
    ok = code == 0 and len(kills) == 2 and s["node_restarts"] == {"actor_1": 1, "learner": 1}
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
