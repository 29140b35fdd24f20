"""Agent steps per second of our PPO on Pong against stable-baselines3's PPO, same settings.

Both learn PongNoFrameskip-style Pong (no sticky actions) for the same number of agent
steps with the same layout: games stepped together, rollout length, SGD minibatch, epochs
(by default our Atari preset's: 64 games x 128 steps, minibatches of 2,048, 4 epochs), on
this machine, one after the other in one run, nothing else running:

- ours: `python -m launch_programs.run --agent=ppo --env=atari:Pong --sticky_actions=0`
  with those flags, evaluation off; its rate is summary.json's actor_steps / wall_time_s
  (from launch: start-up and tracing included). Twice: on SB3's network (the Nature CNN
  with 512 units, `--torso=atari --head_hidden_size=512`: like for like) and on the
  preset's 16/32 network;
- stable-baselines3: bench/sb3_atari_ppo.py in `.venv-sb3` (CnnPolicy, its Atari wrappers,
  DummyVecEnv, torch on 2 threads; from the model's construction).

Prints one JSON line, `"ratio"` = ours on the same network over SB3's, `"ratio_preset"` =
ours with the preset's network over SB3's, and writes bench/results/atari_throughput.json.

    python bench/atari_throughput.py                 # 65,536 agent steps each
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from bench.time_to_solve import SB3_VENV, ensure_sb3_venv  # noqa: E402

SB3_ATARI_PACKAGES = ["ale-py==0.10.2", "opencv-python-headless<4.12"]
OUT = os.path.join(ROOT, "bench", "results", "atari_throughput.json")


def ensure_sb3_atari() -> None:
    """`.venv-sb3` with ale-py and OpenCV for SB3's Atari wrappers (installed once)."""
    ensure_sb3_venv()
    python = os.path.join(SB3_VENV, "bin", "python")
    if subprocess.run([python, "-c", "import ale_py, cv2"], capture_output=True).returncode:
        subprocess.run([python, "-m", "pip", "install", "-q", *SB3_ATARI_PACKAGES], check=True)


def ours(args, network: list[str]) -> dict:
    """One run of our PPO; its summary's rate and the command."""
    logdir = tempfile.mkdtemp(prefix="atari-throughput-")
    cmd = [sys.executable, "-m", "launch_programs.run", "--agent=ppo", "--env=atari:Pong",
           "--sticky_actions=0", "--launch=threads", f"--seed={args.seed}",
           f"--num_envs_per_actor={args.envs}", f"--rollout_length={args.rollout_length}",
           f"--num_minibatches={args.envs * args.rollout_length // args.batch_size}",
           f"--num_epochs={args.epochs}", f"--max_actor_steps={args.steps}",
           "--eval_at_start=false", f"--eval_every={10 * args.steps}", *network,
           f"--logdir={logdir}", "--print_every_s=60"]
    try:
        start = time.time()
        subprocess.run(cmd, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
        command_s = time.time() - start
        summary = json.load(open(os.path.join(logdir, "summary.json")))
    finally:
        shutil.rmtree(logdir, ignore_errors=True)
    return {"agent_steps": summary["actor_steps"], "wall_time_s": summary["wall_time_s"],
            "agent_steps_per_s": round(summary["actor_steps"] / summary["wall_time_s"], 1),
            "command_wall_time_s": round(command_s, 1),
            "command": " ".join(cmd[1:]).replace(logdir, "LOGDIR")}


def sb3(args) -> dict:
    cmd = [os.path.join(SB3_VENV, "bin", "python"), os.path.join(ROOT, "bench", "sb3_atari_ppo.py"),
           f"--envs={args.envs}", f"--rollout_length={args.rollout_length}",
           f"--batch_size={args.batch_size}", f"--epochs={args.epochs}",
           f"--steps={args.steps}", f"--seed={args.seed}"]
    done = subprocess.run(cmd, cwd=ROOT, check=True, capture_output=True, text=True)
    result = json.loads(done.stdout.strip().splitlines()[-1])
    result["command"] = " ".join(cmd[1:]).replace(ROOT + "/", "")
    return result


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--envs", type=int, default=64, help="games stepped together")
    parser.add_argument("--rollout_length", type=int, default=128)
    parser.add_argument("--batch_size", type=int, default=2048, help="SGD minibatch (steps)")
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--steps", type=int, default=65_536, help="agent steps of each run")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=OUT)
    args = parser.parse_args(argv)
    round_steps = args.envs * args.rollout_length
    if round_steps % args.batch_size:
        parser.error(f"--batch_size: must divide a round's {round_steps} steps "
                     f"(--envs x --rollout_length), got {args.batch_size}")
    ensure_sb3_atari()
    same = ours(args, ["--torso=atari", "--head_hidden_size=512"])
    print(f"[atari_throughput] ours, Nature CNN: {same['agent_steps_per_s']} agent steps/s",
          flush=True)
    preset = ours(args, [])
    print(f"[atari_throughput] ours, preset's 16/32: {preset['agent_steps_per_s']} agent steps/s",
          flush=True)
    theirs = sb3(args)
    print(f"[atari_throughput] stable-baselines3: {theirs['agent_steps_per_s']} agent steps/s",
          flush=True)
    result = {
        "benchmark": "atari_throughput", "env": "Pong, no sticky actions",
        "settings": {"games": args.envs, "rollout_length": args.rollout_length,
                     "minibatch": args.batch_size, "epochs": args.epochs,
                     "agent_steps": args.steps, "seed": args.seed},
        "ours_same_network": same, "ours_preset": preset, "sb3": theirs,
        "ratio": round(same["agent_steps_per_s"] / theirs["agent_steps_per_s"], 2),
        "ratio_preset": round(preset["agent_steps_per_s"] / theirs["agent_steps_per_s"], 2),
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cpus",
        "date": time.strftime("%Y-%m-%d"),
    }
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)
    print(json.dumps({k: result[k] for k in ("ratio", "ratio_preset")}
                     | {"ours_same_network": same["agent_steps_per_s"],
                        "ours_preset": preset["agent_steps_per_s"],
                        "sb3": theirs["agent_steps_per_s"]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
