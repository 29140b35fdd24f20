"""Stops at random moments: every run must exit in time, write its summary, leave nothing.

Starts N short DQN CartPole runs of the command line, one after another, each
in its own session (as a terminal would), and sends the signal to the whole
process group (as Ctrl-C in a terminal does) at a random moment between
`--min_delay_s` and `--max_delay_s` after the start, which covers start-up,
replay filling and learning. For each run it records how long the exit took,
the exit code, `summary.json`'s status and steps, and the processes left
behind: any in the run's process group, and any Ray process (raylet, GCS,
`ray::` workers). Writes bench/results/interrupts_<launch>_<signal>.json.

    python bench/interrupts.py --launch=threads --runs=20
    python bench/interrupts.py --launch=ray --runs=20 --signal=TERM --to=process
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from launch_programs.processes import RAY_PROCESS_MARKS, process_table  # noqa: E402


def leftovers(pgid: int) -> list[str]:
    """Processes still in the run's group, and any Ray process on the machine."""
    return [f"{pid} {group} {args}" for pid, group, args in process_table()
            if group == pgid or any(m in args for m in RAY_PROCESS_MARKS)]


def one_run(launch: str, signum: int, to_group: bool, delay_s: float, logdir: str,
            exit_limit_s: float) -> dict:
    cmd = [sys.executable, "-m", "launch_programs.run", "--agent=dqn", "--env=gym:CartPole-v1",
           f"--launch={launch}", "--num_actors=2", "--max_actor_steps=60000",
           f"--logdir={logdir}", "--fresh", "--print_every_s=0", "--eval_every=5000",
           "--cpus_per_actor=0.5", "--learner_cpus=0.5"]
    log = open(os.path.join(os.path.dirname(logdir), os.path.basename(logdir) + ".out"), "w")
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)
    started = time.time()
    finished_first = False
    try:
        proc.wait(timeout=delay_s)
        finished_first = True  # It ended before the signal: still checked below.
    except subprocess.TimeoutExpired:
        pass
    sent = time.time()
    if not finished_first:
        if to_group:
            os.killpg(proc.pid, signum)
        else:
            os.kill(proc.pid, signum)
    try:
        code = proc.wait(timeout=exit_limit_s + 30)
    except subprocess.TimeoutExpired:
        code = None
    exit_s = time.time() - sent
    # Processes in teardown (Ray's agents notice their raylet is gone within
    # seconds; zombies wait to be reaped) are not left behind: poll up to 10 s.
    gone_at = time.time()
    left = leftovers(proc.pid)
    while left and time.time() - gone_at < 10.0:
        time.sleep(0.5)
        left = leftovers(proc.pid)
    lingered_s = time.time() - gone_at
    if code is None or left:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    log.close()
    summary_path = os.path.join(logdir, "summary.json")
    summary = json.load(open(summary_path)) if os.path.exists(summary_path) else None
    return {
        "delay_s": round(sent - started, 2),
        "finished_before_signal": finished_first,
        "exit_code": code,
        "exit_s": round(exit_s, 2),
        "summary_status": summary and summary["status"],
        "actor_steps": summary and summary["actor_steps"],
        "learner_steps": summary and summary["learner_steps"],
        "learner_checkpoint": os.path.exists(os.path.join(logdir, "checkpoints", "learner.npz")),
        "left_behind": left,
        "others_gone_after_s": round(lingered_s, 1),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--launch", default="threads", choices=["threads", "ray"])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--signal", default="INT", choices=["INT", "TERM"])
    parser.add_argument("--to", default="group", choices=["group", "process"],
                        help="the whole process group (a terminal's Ctrl-C) or the main process")
    parser.add_argument("--min_delay_s", type=float, default=1.0)
    parser.add_argument("--max_delay_s", type=float, default=25.0)
    parser.add_argument("--exit_limit_s", type=float, default=30.0)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    signum = getattr(signal, f"SIG{args.signal}")
    rng = random.Random(args.seed)
    workdir = tempfile.mkdtemp(prefix="interrupts-")
    runs = []
    for i in range(args.runs):
        delay = rng.uniform(args.min_delay_s, args.max_delay_s)
        record = one_run(args.launch, signum, args.to == "group", delay,
                         os.path.join(workdir, f"run{i}"), args.exit_limit_s)
        record["ok"] = bool(
            record["exit_code"] in (0, 128 + signum) and record["exit_s"] < args.exit_limit_s
            and record["summary_status"] in ("interrupted", "completed")
            and not record["left_behind"])
        runs.append(record)
        print(f"[interrupts] run {i}: signal at {record['delay_s']:.1f} s -> exit "
              f"{record['exit_code']} after {record['exit_s']:.1f} s, summary "
              f"{record['summary_status']} ({record['actor_steps']} actor steps), "
              f"left behind {len(record['left_behind'])}: {'ok' if record['ok'] else 'FAILED'}",
              flush=True)
    exits = [r["exit_s"] for r in runs]
    result = {
        "launch": args.launch, "signal": f"SIG{args.signal}", "to": args.to,
        "runs": len(runs), "ok": sum(r["ok"] for r in runs),
        "max_exit_s": max(exits), "median_exit_s": sorted(exits)[len(exits) // 2],
        "machine": f"{platform.node()}, {os.cpu_count()} cpus", "workdir": workdir,
        "details": runs,
    }
    out = os.path.join(ROOT, "bench", "results", f"interrupts_{args.launch}_{args.signal}.json")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w") as f:
        json.dump(result, f, indent=1)
    print(f"[interrupts] {args.launch} SIG{args.signal} to {args.to}: {result['ok']}/{len(runs)} "
          f"ok, exit within {result['max_exit_s']:.1f} s (median {result['median_exit_s']:.1f}) "
          f"-> {out}", flush=True)
    return 0 if result["ok"] == len(runs) else 1


if __name__ == "__main__":
    sys.exit(main())
