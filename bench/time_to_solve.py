"""Wall-clock seconds and actor steps for each agent to reach its target return, 3 seeds.

Runs the command line (threads launcher; each agent's defaults and the
presets it picks for the environment, as a user gets them; see TASKS) for
each agent and seed, one run at a time, and reads
`first_reached` from its summary.json: the wall time and actor steps of the
first evaluation round whose mean return reached the target. Reports the
median over seeds (a run that never reaches the target counts as not solved).
Writes bench/results/time_to_solve.json.

    python bench/time_to_solve.py --agents=dqn,impala,d4pg --seeds=0,1,2
    python bench/time_to_solve.py --agents=dqn,sb3_dqn   # against stable-baselines3
    python bench/time_to_solve.py --agents=appo,impala,sb3_ppo
    python bench/time_to_solve.py --agents=ppo,a2c,sb3_ppo --out=bench/results/time_to_solve_ppo.json
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

from names import names_from

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# agent -> (environment, target return, actor-step budget of each run, extra flags)
TASKS = {
    # Every agent with its defaults and the presets the command line picks for the
    # environment's family (DQN's classic-control preset: agents/dqn/config.py).
    "dqn": ("gym:CartPole-v1", 475.0, 60_000, []),
    "rainbow": ("gym:CartPole-v1", 475.0, 60_000, []),
    "impala": ("gym:CartPole-v1", 475.0, 100_000, []),
    "appo": ("gym:CartPole-v1", 475.0, 100_000, []),
    "ppo": ("gym:CartPole-v1", 475.0, 60_000, []),
    "a2c": ("gym:CartPole-v1", 475.0, 60_000, []),
    "d4pg": ("gym:Pendulum-v1", -250.0, 60_000, []),
    # SAC beside stable-baselines3's (sb3_sac): both evaluated every 2,000 steps.
    "sac": ("gym:Pendulum-v1", -250.0, 20_000, ["--eval_every=2000"]),
    # The performance issue's user command: DQN's preset with two actors (2 x 16 envs).
    "dqn_2actors": ("gym:CartPole-v1", 475.0, 60_000, ["--num_actors=2"]),
}
# A task named agent_<variant> runs that agent.
AGENT_OF = {"dqn_2actors": "dqn"}


def one_run(agent: str, seed: int, workdir: str) -> dict:
    env, target, budget, extra = TASKS[agent]
    logdir = os.path.join(workdir, f"{agent}-s{seed}")
    cmd = [sys.executable, "-m", "launch_programs.run", f"--agent={AGENT_OF.get(agent, agent)}",
           f"--env={env}",
           "--launch=threads", f"--seed={seed}", f"--max_actor_steps={budget}",
           f"--logdir={logdir}", "--fresh", "--print_every_s=0", *extra]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    summary = json.load(open(os.path.join(logdir, "summary.json")))
    reached = summary.get("first_reached")
    return {
        "agent": agent, "env": env, "target": target, "seed": seed, "exit_code": done.returncode,
        "solved": reached is not None, "preset": summary.get("preset"),
        "wall_time_s": reached and reached["wall_time_s"],
        # The same less the start-up (node builds): what a ray run's figure is set beside.
        "wall_time_s_after_startup": reached and reached.get("wall_time_s_after_startup"),
        "actor_steps": reached and reached["actor_steps"],
        "run_wall_time_s": summary["wall_time_s"],
        "eval_return_mean_last10": summary["eval_return_mean_last10"],
        "command": " ".join(cmd[1:]),
    }


SB3_VENV = os.path.join(ROOT, ".venv-sb3")
# torch pinned to its CPU build (unpinned, pip takes a CUDA build of several GB).
SB3_PACKAGES = ["stable-baselines3==2.4.1", "gymnasium>=0.29,<1.1", "torch==2.13.0"]


def ensure_sb3_venv() -> None:
    """stable-baselines3 and PyTorch in a virtual environment of their own (made once)."""
    python = os.path.join(SB3_VENV, "bin", "python")
    if not os.path.exists(python):
        subprocess.run([sys.executable, "-m", "venv", SB3_VENV], check=True)
    if subprocess.run([python, "-c", "import stable_baselines3"], capture_output=True).returncode:
        subprocess.run([python, "-m", "pip", "install", "-q", *SB3_PACKAGES], check=True)


# -> the task whose environment, target and budget they share.
SB3_AGENTS = {"sb3_dqn": "dqn", "sb3_ppo": "impala", "sb3_sac": "sac"}


def one_sb3_run(agent: str, seed: int) -> dict:
    """stable-baselines3's tuned DQN or PPO on CartPole, or SAC on Pendulum (bench/sb3_dqn.py,
    sb3_ppo.py, sb3_sac.py), one seed."""
    env, target, _, _ = TASKS[SB3_AGENTS[agent]]
    cmd = [os.path.join(SB3_VENV, "bin", "python"), os.path.join(ROOT, "bench", f"{agent}.py"),
           f"--seed={seed}"]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=True)
    result = json.loads(done.stdout.strip().splitlines()[-1])
    reached = result["first_reached"]
    rounds = result["rounds"]
    return {
        "agent": agent, "env": env, "target": target, "seed": seed,
        "exit_code": done.returncode, "solved": reached is not None,
        "wall_time_s": reached and reached["wall_time_s"],
        "actor_steps": reached and reached["actor_steps"],
        "run_wall_time_s": rounds[-1][1] if rounds else None,
        "eval_return_mean_last10": rounds[-1][2] if rounds else None,
        "command": " ".join(cmd[1:]), "torch": result["torch"],
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", default="dqn,impala,d4pg",
                        help="any of dqn, rainbow, impala, appo, ppo, a2c, d4pg, dqn_2actors (DQN with "
                             "--num_actors=2), sac, and sb3_dqn, sb3_ppo or sb3_sac "
                             "(stable-baselines3's DQN or PPO on CartPole, SAC on Pendulum, in "
                             ".venv-sb3, made on first use)")
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--out", default=os.path.join(ROOT, "bench", "results",
                                                      "time_to_solve.json"))
    args = parser.parse_args(argv)
    workdir = tempfile.mkdtemp(prefix="time-to-solve-")
    seeds = [int(s) for s in args.seeds.split(",")]
    report = {"machine": f"{platform.node()}, {os.cpu_count()} cpus", "agents": {}}
    agents = names_from(parser, "--agents", args.agents, [*TASKS, *SB3_AGENTS])
    if any(a in SB3_AGENTS for a in agents):
        ensure_sb3_venv()
    # Seeds outside, agents inside: each agent's runs are spread over the same
    # stretch of time, so a noisy neighbour on a shared machine hits them alike.
    all_runs = {agent: [] for agent in agents}
    for seed in seeds:
        for agent in agents:
            run = (one_sb3_run(agent, seed) if agent in SB3_AGENTS
                   else one_run(agent, seed, workdir))
            all_runs[agent].append(run)
    for agent in agents:
        runs = all_runs[agent]
        task = TASKS[SB3_AGENTS.get(agent, agent)]
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
        report["agents"][agent] = {"task": task[0], "target": task[1],
                                   "solved": f"{len(solved)}/{len(runs)}", "median": median,
                                   "runs": runs}
        print(f"[time_to_solve] {agent} on {task[0]} to {task[1]}: "
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
