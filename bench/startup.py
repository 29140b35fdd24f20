"""Seconds from the command to the learner's first step, per launcher.

Runs `python -m launch_programs.run --agent=dqn --env=gym:CartPole-v1
--launch=L` (the CartPole preset with its evaluator, 2 actors, a short budget) `--repeats`
times per launcher, one run at a time, and reads from each run's
summary.json `startup`: the seconds from the command's start to Ray being up,
to every node built and to the learner's first step. Prints one line per run
and writes bench/results/startup.json with the medians.

    python bench/startup.py --launches=ray,threads --repeats=3
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PHASES = ("ray_up_s", "nodes_up_s", "first_learner_step_s")


def measure(launch: str, max_actor_steps: int) -> dict:
    logdir = tempfile.mkdtemp(prefix=f"bench-startup-{launch}-")
    command = [sys.executable, "-m", "launch_programs.run", "--agent=dqn",
               "--env=gym:CartPole-v1", f"--launch={launch}", "--num_actors=2",
               f"--max_actor_steps={max_actor_steps}",
               f"--logdir={logdir}", "--print_every_s=0"]
    start = time.time()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    wall = time.time() - start
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} exited {done.returncode}: {done.stderr[-2000:]}")
    with open(os.path.join(logdir, "summary.json")) as f:
        summary = json.load(f)
    return {"launch": launch, **summary.get("startup", {}), "command_wall_s": round(wall, 2)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--launches", default="ray,threads")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--max_actor_steps", type=int, default=3000)
    parser.add_argument("--out", default=os.path.join(ROOT, "bench", "results", "startup.json"))
    args = parser.parse_args(argv)
    launches = [x for x in args.launches.split(",") if x]
    unknown = sorted(set(launches) - {"ray", "threads"})
    if unknown:
        parser.error(f"--launches: unknown {unknown}; allowed: ray, threads")
    if args.repeats < 1:
        parser.error(f"--repeats: must be >= 1, got {args.repeats}")
    runs, medians = [], {}
    for launch in launches:
        mine = []
        for _ in range(args.repeats):
            run = measure(launch, args.max_actor_steps)
            mine.append(run)
            print("[startup] " + " ".join(f"{k}={v}" for k, v in run.items()), flush=True)
        runs += mine
        medians[launch] = {p: statistics.median(r[p] for r in mine) for p in PHASES
                           if all(p in r for r in mine)}
    report = {"benchmark": "startup", "agent": "dqn", "env": "gym:CartPole-v1",
              "num_actors": 2, "max_actor_steps": args.max_actor_steps,
              "cpus": os.cpu_count(), "python": platform.python_version(),
              "date": time.strftime("%Y-%m-%d"), "medians": medians, "runs": runs}
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(report, f, indent=1)
    for launch, phases in medians.items():
        print(f"[startup] {launch} medians: " + " ".join(f"{k}={v}" for k, v in phases.items()))
    print(f"[startup] -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
