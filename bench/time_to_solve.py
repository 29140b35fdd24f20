"""Wall-clock seconds and actor steps for each agent to reach its target return, 3 seeds.

Runs the command line (threads launcher, default configs, 2 actors x 4
environments) for each agent and seed, one run at a time, and reads
`first_reached` from its summary.json: the wall time and actor steps of the
first evaluation round whose mean return reached the target. Reports the
median over seeds (a run that never reaches the target counts as not solved).
Writes bench/results/time_to_solve.json.

    python bench/time_to_solve.py --agents=dqn,impala,d4pg --seeds=0,1,2
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

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# agent -> (environment, target return, actor-step budget of each run)
TASKS = {
    "dqn": ("gym:CartPole-v1", 475.0, 100_000),
    "impala": ("gym:CartPole-v1", 475.0, 100_000),
    "d4pg": ("gym:Pendulum-v1", -250.0, 60_000),
}


def one_run(agent: str, seed: int, workdir: str) -> dict:
    env, target, budget = TASKS[agent]
    logdir = os.path.join(workdir, f"{agent}-s{seed}")
    cmd = [sys.executable, "-m", "launch_programs.run", f"--agent={agent}", f"--env={env}",
           "--launch=threads", f"--seed={seed}", f"--max_actor_steps={budget}",
           f"--logdir={logdir}", "--fresh", "--print_every_s=0"]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    summary = json.load(open(os.path.join(logdir, "summary.json")))
    reached = summary.get("first_reached")
    return {
        "agent": agent, "env": env, "target": target, "seed": seed, "exit_code": done.returncode,
        "solved": reached is not None,
        "wall_time_s": reached and reached["wall_time_s"],
        "actor_steps": reached and reached["actor_steps"],
        "run_wall_time_s": summary["wall_time_s"],
        "eval_return_mean_last10": summary["eval_return_mean_last10"],
        "command": " ".join(cmd[1:]),
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", default="dqn,impala,d4pg")
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--out", default=os.path.join(ROOT, "bench", "results",
                                                      "time_to_solve.json"))
    args = parser.parse_args(argv)
    workdir = tempfile.mkdtemp(prefix="time-to-solve-")
    seeds = [int(s) for s in args.seeds.split(",")]
    report = {"machine": f"{platform.node()}, {os.cpu_count()} cpus", "agents": {}}
    for agent in args.agents.split(","):
        runs = [one_run(agent, seed, workdir) for seed in seeds]
        for run in runs:
            print(f"[time_to_solve] {agent} seed {run['seed']}: "
                  + (f"{run['wall_time_s']:.1f} s, {run['actor_steps']} actor steps"
                     if run["solved"] else "not solved")
                  + f" (end {run['eval_return_mean_last10']})", flush=True)
        solved = [r for r in runs if r["solved"]]
        median = None
        if len(solved) * 2 > len(runs):  # A median needs most seeds to have solved it.
            unsolved = [float("inf")] * (len(runs) - len(solved))
            times = sorted([r["wall_time_s"] for r in solved] + unsolved)
            steps = sorted([r["actor_steps"] for r in solved] + unsolved)
            median = {"wall_time_s": statistics.median(times),
                      "actor_steps": statistics.median(steps)}
        report["agents"][agent] = {"task": TASKS[agent][0], "target": TASKS[agent][1],
                                   "solved": f"{len(solved)}/{len(runs)}", "median": median,
                                   "runs": runs}
        print(f"[time_to_solve] {agent} on {TASKS[agent][0]} to {TASKS[agent][1]}: "
              f"{len(solved)}/{len(runs)} solved, median {median}", flush=True)
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    if os.path.exists(args.out):  # Agents not run this time keep their last figures.
        with open(args.out) as f:
            previous = json.load(f).get("agents", {})
        report["agents"] = {**previous, **report["agents"]}
    with open(args.out, "w") as f:
        json.dump(report, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
