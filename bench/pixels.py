"""Pixel learning runs (MinAtar, Atari Pong): each run's curve, resumable when stopped.

Each run is the command line with the presets the environment picks (threads
launcher), in its own logdir under --logroot. Started again after a stop
(Ctrl-C or SIGTERM to this script, a killed session), a run resumes from its logdir's checkpoint and
its curve goes on; a run that took its budget is not run again. After each
run (finished or not) its curve is written to
bench/results/pixels/<run>-s<seed>.json (evaluation rounds: actor steps,
wall time, mean and standard deviation of the round's returns; the first
round whose mean reached the target) and drawn with launch_programs.plot to
bench/results/pixels/<run>-s<seed>.png.

    python bench/pixels.py --runs=dqn-minatar-breakout            # one run, seed 0
    python bench/pixels.py --runs=dqn-minatar-breakout,dqn-minatar-space_invaders
    python bench/pixels.py --runs=dqn-minatar-breakout --report_only   # curve of what ran
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import numpy as np  # noqa: E402
from names import names_from  # noqa: E402

from components.environments.atari import STICKY_ACTION_PROBABILITY  # noqa: E402
from launch_programs import plot  # noqa: E402
from launch_programs.references import load_reference  # noqa: E402
from launch_programs.summary import evaluation_stats  # noqa: E402

# run -> (agent, environment, actor-step budget, target evaluation mean, extra flags).
# Budgets in agent steps: MinAtar has no frame skip (1M frames = 1M steps), Atari repeats
# each action 4 times (3M steps = 12M frames). Targets: the pixels issue's.
RUNS = {
    "dqn-minatar-breakout": ("dqn", "minatar:breakout", 1_000_000, 8.0, []),
    "dqn-minatar-space_invaders": ("dqn", "minatar:space_invaders", 1_000_000, 30.0, []),
    "impala-minatar-breakout": ("impala", "minatar:breakout", 1_000_000, 8.0, []),
    "impala-minatar-space_invaders": ("impala", "minatar:space_invaders", 1_000_000, 30.0, []),
    "rainbow-minatar-breakout": ("rainbow", "minatar:breakout", 1_000_000, 8.0, []),
    "ppo-minatar-breakout": ("ppo", "minatar:breakout", 1_000_000, 8.0, []),
    # IMPALA's Atari preset (issue 36: the 16/32 network, 16 unrolls a batch, Cleanba's
    # RMSProp epsilon and clip rescaled to the mean loss, the rate annealed over 50M steps,
    # normalised observations) on the default protocol (sticky 0.25): its 2026-12-05 run.
    "impala-atari-pong": ("impala", "atari:Pong", 3_000_000, 18.0, []),
    # The morning's preset before it: the paper's epsilon (0.01 inside the root, on a summed
    # loss) rescaled, 100 times Cleanba's floor, and the rate annealed to 0 over 3M steps.
    # Best +4.2 at 2.75M; the logged gradients (per weight about 1.5e-4 RMS) sat below the
    # floor of 3.1e-4, so most weights stepped as in plain SGD.
    "impala-atari-pong-eps-floor": ("impala", "atari:Pong", 3_000_000, 18.0, [
        "--adam_epsilon=9.765625e-08", "--learning_rate_decay_steps=9375"]),
    # The preset before 2026-12-05 (4 unrolls a batch at a constant rate, the Nature CNN,
    # pixels / 255): its 2026-12-02 run, best -4.2 at 2.25M, then back to -14.
    "impala-atari-pong-batch4": ("impala", "atari:Pong", 3_000_000, 18.0, [
        "--torso=atari", "--batch_size=4", "--adam_epsilon=1.5625e-06",
        "--max_gradient_norm=0.5", "--learning_rate_decay_steps=0",
        "--normalize_observations=false"]),
    # The 2026-12-02 trial: the preset's run above learned only after 1.3M steps, its policy
    # lagging the learner's by 10-14 updates. Here the rate decays to 0 over the 37,500
    # updates of 3M steps, as A2C's, Cleanba's and TorchBeast's do, and the actor fetches
    # weights every 5 batched steps, in a queue of 4 batches. The lag stayed at 12-16: the
    # actors were never held by the queue, so its size was not the cause; an unroll of 20
    # steps lasts about 4 updates here, and the updates go on while it is written.
    "impala-atari-pong-lag": ("impala", "atari:Pong", 3_000_000, 18.0, [
        "--max_queue_size=16", "--variable_update_period=5",
        "--learning_rate_decay_steps=37500"]),
    # The second 2026-12-02 trial: the preset with TorchBeast's entropy cost for Atari
    # (0.0006 against IMPALA's 0.01, with the same weights relative to the other losses): in
    # both runs above the policy stayed near uniform (entropy 1.75-1.78 of 1.79) for over
    # 1.3M steps, where the bonus pulls towards uniform against small advantages.
    "impala-atari-pong-ent": ("impala", "atari:Pong", 3_000_000, 18.0,
                              ["--entropy_cost=0.0006"]),
    # DQN: learner-bound (one update of 32 per 4 steps), so a Pong run spans sessions; a
    # rerun resumes it with its checkpointed replay.
    "dqn-atari-pong": ("dqn", "atari:Pong", 2_000_000, 18.0, []),
    # The same with bfloat16 convolutions on any CPU (the preset's "auto" picks them where
    # AMX or AVX-512 BF16 exist: 1.2x the learner at batch 32) and checkpoints every 20
    # minutes (the replay's is about 2 GB at 1M steps): the 2026-12-02 run.
    "dqn-atari-pong-bf16": ("dqn", "atari:Pong", 2_000_000, 18.0,
                            ["--compute_dtype=bfloat16", "--checkpoint_every_s=1200"]),
    # Issue 36's first PPO Pong trial, on the references' protocol (no sticky actions): the
    # IMPALA paper's 16/32 network with a 256 head (273 against 219 agent steps/s for the
    # Nature CNN on 2 cores), the rate annealed to 0 over the 2M steps' 31,250 SGD steps as
    # CleanRL's, 10 evaluation episodes every 200k steps.
    "ppo-atari-pong-nosticky-shallow": ("ppo", "atari:Pong", 2_000_000, 18.0, [
        "--sticky_actions=0", "--torso=atari_shallow", "--head_hidden_size=256",
        "--learning_rate_decay_steps=31250", "--eval_episodes=10", "--eval_every=200000"]),
    # Issue 36's PPO preset (rl_games' large-batch layout, the KL-adaptive rate, normalised
    # observations, the 16/32 network) on the references' protocol: no sticky actions.
    "ppo-atari-pong-nosticky": ("ppo", "atari:Pong", 2_000_000, 18.0, ["--sticky_actions=0"]),
    # The 2026-12-05 trial of that preset before it normalised observations (x / 255): the
    # rate sat at the adaptive schedule's cap of 1e-2 with a KL of 0.001-0.006 a step, and
    # the training return stayed at -20.5 through 700k steps (RL Zoo's PPO: -16 at 600k);
    # stopped at 708,760 steps (705 s, 1,006 steps/s).
    "ppo-atari-pong-nosticky-rawinputs": ("ppo", "atari:Pong", 2_000_000, 18.0, [
        "--sticky_actions=0", "--normalize_observations=false"]),
    # Issue 36's APPO preset (RLlib's Pong APPO on the 16/32 network), no sticky actions.
    "appo-atari-pong-nosticky": ("appo", "atari:Pong", 3_000_000, 18.0, ["--sticky_actions=0"]),
    # R2D2's Atari preset sized for 2 cores (issue 43): a 90-minute curve (stop it then:
    # Ctrl-C or SIGTERM; a rerun resumes it), drawn beside DQN's preset and Dopamine's.
    "r2d2-atari-pong": ("r2d2", "atari:Pong", 3_000_000, 18.0, []),
    # The preset before it, the paper's (64 sequences of 80 on the Nature CNN, a 512-unit
    # LSTM, 0.4 samples per sequence): its 2026-12-02 run, 204 updates in 60 min, -21.
    "r2d2-atari-pong-paper": ("r2d2", "atari:Pong", 3_000_000, 18.0, [
        "--sequence_length=80", "--period=40", "--burn_in=40", "--discount=0.997",
        "--target_update_period=2500", "--torso=atari", "--compute_dtype=float32",
        "--torso_features=0", "--lstm_size=512", "--head_hidden_size=512", "--batch_size=64",
        "--learning_rate=1e-4", "--adam_epsilon=1e-3", "--samples_per_insert=0.4",
        "--min_replay_size=6250", "--epsilon_per_environment=false", "--eval_every=50000"]),
}

# Published curves drawn beside a run's (same protocol): files under bench/references/.
STICKY_PONG = ["dopamine-pong-dqn.json", "dopamine-pong-rainbow.json"]
NO_STICKY_PONG = ["rlzoo-pong-ppo-nosticky.json", "rlzoo-pong-ppo-nosticky-training.json"]
REFERENCES = {
    "dqn-atari-pong": STICKY_PONG, "dqn-atari-pong-bf16": STICKY_PONG,
    "impala-atari-pong": STICKY_PONG, "impala-atari-pong-batch4": STICKY_PONG,
    "impala-atari-pong-eps-floor": STICKY_PONG,
    "ppo-atari-pong-nosticky": NO_STICKY_PONG, "ppo-atari-pong-nosticky-shallow": NO_STICKY_PONG,
    "ppo-atari-pong-nosticky-rawinputs": NO_STICKY_PONG,
    "appo-atari-pong-nosticky": NO_STICKY_PONG,
    "r2d2-atari-pong": STICKY_PONG, "r2d2-atari-pong-paper": STICKY_PONG,
}
# Runs of the same protocol whose written curves are drawn beside a run's.
COMPANIONS = {"r2d2-atari-pong": ["dqn-atari-pong-bf16"]}


def references_of(run: str) -> list:
    """The reference curves drawn beside `run` (launch_programs.references)."""
    return [load_reference(os.path.join(ROOT, "bench", "references", name))
            for name in REFERENCES.get(run, [])]


def companions_of(run: str, seed: int, out_dir: str) -> list:
    """The written curves of `run`'s companions (COMPANIONS) that exist in `out_dir`."""
    paths = [os.path.join(out_dir, f"{other}-s{seed}.json") for other in COMPANIONS.get(run, [])]
    return [curves_of_result(json.load(open(p))) for p in paths if os.path.exists(p)]


def curves_of_result(result: dict) -> plot.Curves:
    """A written result's curves (training episodes where the result kept them): for
    redrawing a run whose logdir is gone."""
    rounds = np.array(result["eval_rounds"], np.float64).reshape(-1, 4)
    episodes = np.array(result.get("train_episodes", []), np.float64).reshape(-1, 3)
    label = plot.run_label(result["agent"], result["env"], sticky_of(result.get("run")))
    return plot.Curves(label, rounds[:, 0], rounds[:, 1], rounds[:, 2], rounds[:, 3],
                       episodes[:, 0], episodes[:, 1], episodes[:, 2],
                       train_clipped=plot.training_rewards_clipped(result["env"]))


def sticky_of(run: str | None) -> float | None:
    """The sticky-action probability `run` plays with (its flag, else atari's default)."""
    if run not in RUNS or not RUNS[run][1].startswith("atari:"):
        return None
    flags = [f for f in RUNS[run][4] if f.startswith("--sticky_actions=")]
    return float(flags[-1].split("=", 1)[1]) if flags else STICKY_ACTION_PROBABILITY


def logdir_of(logroot: str, run: str, seed: int) -> str:
    return os.path.join(logroot, f"{run}-s{seed}")


def run_one(run: str, seed: int, logroot: str) -> int:
    """Runs (or resumes) `run`; returns the command's exit code."""
    agent, env, budget, _, extra = RUNS[run]
    cmd = [sys.executable, "-m", "launch_programs.run", f"--agent={agent}", f"--env={env}",
           "--launch=threads", f"--seed={seed}", f"--max_actor_steps={budget}",
           f"--logdir={logdir_of(logroot, run, seed)}", "--print_every_s=30", *extra]
    print(f"[pixels] {run} seed {seed}: {' '.join(cmd[1:])}", flush=True)
    return run_resumable(cmd)


def run_resumable(cmd: list[str]) -> int:
    """Runs a training command to its end; Ctrl-C (or SIGTERM, see main) is passed on to it
    once and waited for, so that the run stops cleanly (checkpoint, summary) and a rerun
    resumes it. Returns its exit code."""
    # Its own session: Ctrl-C reaches this script alone, which passes it on once and waits
    # for the run to stop cleanly (checkpoint, summary). subprocess.run would kill it.
    proc = subprocess.Popen(cmd, cwd=ROOT, start_new_session=True)
    try:
        return proc.wait()
    except KeyboardInterrupt:
        proc.send_signal(signal.SIGINT)
        return proc.wait()


def report(run: str, seed: int, logroot: str, out_dir: str) -> dict | None:
    """Writes the run's curve (JSON and PNG); None when it has no evaluation yet."""
    agent, env, budget, target, _ = RUNS[run]
    logdir = logdir_of(logroot, run, seed)
    name = f"{run}-s{seed}"
    written = os.path.join(out_dir, f"{name}.json")
    try:
        curves = plot.load_run(logdir)
    except plot.RunDirError as e:
        if not os.path.exists(logdir) and os.path.exists(written):
            # The logdir is gone (another machine, a later session): the written result
            # stays as it is; its figure is drawn again, with the references.
            result = json.load(open(written))
            plot.draw([curves_of_result(result)] + companions_of(run, seed, out_dir),
                      os.path.join(out_dir, f"{name}.png"), references=references_of(run))
            print(f"[pixels] {name}: figure redrawn from {os.path.relpath(written, ROOT)} "
                  f"({len(result['eval_rounds'])} evaluation rounds)", flush=True)
            return result
        print(f"[pixels] {e}", flush=True)
        return None
    rounds = [[int(s), round(float(w), 1), round(float(m), 3), round(float(d), 3)]
              for s, w, m, d in zip(curves.eval_steps, curves.eval_wall, curves.eval_mean,
                                    curves.eval_std)]
    reached = evaluation_stats(logdir, target).get("first_reached")  # As summary.json's.
    summary_path = os.path.join(logdir, "summary.json")
    summary = json.load(open(summary_path)) if os.path.exists(summary_path) else {}
    result = {
        "run": run, "agent": agent, "env": env, "seed": seed, "budget": budget,
        "target": target, "first_reached": reached, "logdir": os.path.relpath(logdir, ROOT),
        "status": summary.get("status", "running or stopped"),
        "actor_steps": summary.get("actor_steps"), "wall_time_s": summary.get("wall_time_s"),
        "actor_steps_per_s": summary.get("actor_steps_per_s"),
        "learner_steps_per_s": summary.get("learner_steps_per_s"),
        "eval_rounds": rounds, "eval_round_fields": ["actor_steps", "wall_time_s", "mean", "std"],
        # Kept so that the figure can be drawn again once the logdir is gone.
        "train_episodes": [[int(s), round(float(w), 1), round(float(r), 2)] for s, w, r in
                           zip(curves.train_steps, curves.train_wall, curves.train_return)],
        "train_episode_fields": ["actor_steps", "wall_time_s", "episode_return"],
        "machine": f"{platform.node()}, {os.cpu_count()} cpus",
    }
    os.makedirs(out_dir, exist_ok=True)
    with open(written, "w") as f:
        json.dump(result, f, indent=1)
    plot.draw([curves] + companions_of(run, seed, out_dir), os.path.join(out_dir, f"{name}.png"),
              references=references_of(run))
    last = rounds[-1] if rounds else None
    print(f"[pixels] {name}: {len(rounds)} evaluation rounds"
          + (f", last {last[2]:.2f} at {last[0]} steps" if last else "")
          + (f"; {target} first at {reached['actor_steps']} steps, "
             f"{reached['wall_time_s']:.1f} s"
             if reached else f"; {target} not reached"), flush=True)
    return result


def _interrupt(signum, frame) -> None:
    raise KeyboardInterrupt


def stop_on_signals() -> None:
    """SIGTERM stops the run as Ctrl-C does, and so does a SIGINT that a background start
    (`nohup ... &` from a script) would otherwise ignore."""
    signal.signal(signal.SIGTERM, _interrupt)
    signal.signal(signal.SIGINT, signal.default_int_handler)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", default="dqn-minatar-breakout",
                        help="comma-separated, of: " + ", ".join(RUNS))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--logroot", default=os.path.join(ROOT, "runs", "pixels"))
    parser.add_argument("--out_dir", default=os.path.join(ROOT, "bench", "results", "pixels"))
    parser.add_argument("--report_only", action="store_true",
                        help="write the curves of what ran, without running anything")
    args = parser.parse_args(argv)
    runs = names_from(parser, "--runs", args.runs, RUNS)
    stop_on_signals()
    code = 0
    for run in runs:
        if not args.report_only:
            code = run_one(run, args.seed, args.logroot) or code
        report(run, args.seed, args.logroot, args.out_dir)
        if code == 128 + signal.SIGINT:  # Stopped: the runs after it wait for the next start.
            break
    return code


if __name__ == "__main__":
    sys.exit(main())
