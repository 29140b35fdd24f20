"""A run frozen with SIGSTOP for longer than Ray's health checks, then let go with SIGCONT:
it must go on and complete as if nothing happened (no node rebuilt, no count gone back or
doubled, no process left).

Runs the command line (DQN on CartPole by default) and, once the counter passes
`--stop_at` actor steps, sends SIGSTOP to one node's process (`--stop=actor_1`,
`learner`, `counter`: Ray only) or to every process of the run (`--stop=all`, as a
suspended laptop or a cgroup freezer stops it, both launchers; Ctrl-Z is ignored by an
isolated run, docs/launchers.md), holds it `--stop_s` seconds, and sends SIGCONT. It
records how long the stopped part took to move again after SIGCONT, checks that each
actor's counts in actor.csv never go back, that the summary counts the budget once, and
that the launcher rebuilt no node. Appends to bench/results/stop_run.json.

    python bench/stop_run.py --launch=ray --stop=learner --stop_s=60
    python bench/stop_run.py --launch=threads --stop=all --stop_s=30
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import shutil
import signal
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from kill_run import Run, last_actor_steps  # noqa: E402

from launch_programs.processes import alive, descendants  # noqa: E402
from launch_programs.progress import ProgressReader  # noqa: E402

OUT = os.path.join(ROOT, "bench", "results", "stop_run.json")
NODES = ("actor_1", "learner", "counter")


def actor_counts(logdir: str) -> dict[str, list[int]]:
    """actor.csv's actor_steps column per actor_id, in the order written (each actor counts
    from its own view of the counter, so only an actor's own rows must never go back)."""
    path = os.path.join(logdir, "actor.csv")
    counts: dict[str, list[int]] = {}
    if os.path.exists(path):
        with open(path) as f:
            for row in csv.DictReader(f):
                if row.get("actor_steps"):
                    counts.setdefault(row.get("actor_id", ""), []).append(
                        int(float(row["actor_steps"])))
    return counts


def progress_of(logdir: str, part: str) -> int:
    """How far the stopped part has got: an actor's own count (its rows in actor.csv), the
    learner's updates (learner.csv), or for the counter and the whole run the actors'."""
    if part.startswith("actor_"):
        return max(actor_counts(logdir).get(part.split("_", 1)[1], [0]))
    if part == "learner":
        return int(ProgressReader(logdir).read().learner_steps)
    return last_actor_steps(logdir)


def went_back(counts: dict[str, list[int]]) -> list[tuple[str, int, int]]:
    """Each pair of an actor's consecutive rows where its count fell."""
    return [(actor, a, b) for actor, seq in sorted(counts.items())
            for a, b in zip(seq, seq[1:]) if b < a]


def verdict(result: dict, max_actor_steps: int) -> list[str]:
    """What the run got wrong, in words; [] is a pass."""
    wrong = []
    summary = result["summary"]
    if result["exit_code"] != 0:
        wrong.append(f"exit code {result['exit_code']}")
    if summary.get("status") != "completed":
        wrong.append(f"status {summary.get('status')}")
    if not result["stopped"]:
        wrong.append("never stopped (the run ended before --stop_at)")
    if result["restarts_seen"] or summary.get("node_restarts"):
        wrong.append(f"nodes rebuilt: {result['restarts_seen'] or summary.get('node_restarts')}")
    if result["counts_went_back"]:
        wrong.append(f"actor.csv's count went back: {result['counts_went_back'][:3]}")
    steps = summary.get("actor_steps") or 0
    if not max_actor_steps <= steps < 2 * max_actor_steps:
        wrong.append(f"actor_steps {steps} for a budget of {max_actor_steps}")
    if result["moved_again_after_s"] is None:
        wrong.append("no count moved after SIGCONT")
    if result["left_running"]:
        wrong.append(f"left running: {result['left_running']}")
    return wrong


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--launch", choices=("ray", "threads"), default="ray")
    parser.add_argument("--stop", choices=NODES + ("all",), default="learner")
    parser.add_argument("--stop_s", type=float, default=60.0)
    parser.add_argument("--stop_at", type=int, default=15_000)
    parser.add_argument("--agent", default="dqn")
    parser.add_argument("--env", default="gym:CartPole-v1")
    parser.add_argument("--max_actor_steps", type=int, default=60_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=OUT, help="the JSON list this run is appended to")
    args = parser.parse_args()
    if args.launch == "threads" and args.stop != "all":
        parser.error("--stop: under --launch=threads every node is one process: use all")
    logdir = tempfile.mkdtemp(prefix="stop-run-")
    cmd = [sys.executable, "-m", "launch_programs.run", f"--agent={args.agent}",
           f"--env={args.env}", f"--launch={args.launch}", "--num_actors=2",
           f"--seed={args.seed}", f"--max_actor_steps={args.max_actor_steps}",
           "--checkpoint_every_s=10", f"--logdir={logdir}"]
    run = Run(cmd)
    stopped, held = None, 0
    while run.proc.poll() is None and stopped is None:
        steps = last_actor_steps(logdir)
        if steps >= args.stop_at and (args.launch == "threads" or run.pids):
            stopped = {"at_actor_steps": steps}
            pids = ([run.proc.pid, *descendants(run.proc.pid)] if args.stop == "all"
                    else [run.node_pid(args.stop)])
            _signal(pids, signal.SIGSTOP)
            frozen_at = time.monotonic()
            time.sleep(args.stop_s)
            held = progress_of(logdir, args.stop)  # Where the stopped part was left.
            logged = last_actor_steps(logdir)
            _signal(pids, signal.SIGCONT)
            stopped.update(held_s=round(time.monotonic() - frozen_at, 1),
                           actor_steps_while_held=logged - steps)
            print(f"[stop_run] SIGSTOP {args.stop} at {steps} actor steps, SIGCONT after "
                  f"{stopped['held_s']} s ({logged - steps} steps logged meanwhile)", flush=True)
        time.sleep(0.2)
    moved = None
    if stopped:  # The stopped part's own progress moving again.
        resumed_at = time.monotonic()
        while run.proc.poll() is None and progress_of(logdir, args.stop) <= held:
            time.sleep(0.1)
        if progress_of(logdir, args.stop) > held:
            moved = round(time.monotonic() - resumed_at, 1)
    tree = descendants(run.proc.pid)
    code = run.wait()
    time.sleep(1.0)
    left = sorted(name for pid, (start, name) in tree.items() if alive(pid, start))
    summary_path = os.path.join(logdir, "summary.json")
    summary = json.load(open(summary_path)) if os.path.exists(summary_path) else {}
    restarts = sorted(line.split("node ")[1].split("'")[0] for line in run.lines
                      if "process died; restarted" in line)
    result = {
        "command": " ".join(cmd[1:]), "stop": args.stop, "stop_s": args.stop_s,
        "exit_code": code, "stopped": stopped, "moved_again_after_s": moved,
        "restarts_seen": restarts, "counts_went_back": went_back(actor_counts(logdir)),
        "left_running": left,
        "summary": {k: summary.get(k) for k in ("status", "actor_steps", "learner_steps",
                                                "wall_time_s", "node_restarts")},
        "machine": f"{platform.node()}, {os.cpu_count()} cpus, {time.strftime('%Y-%m-%d')}",
    }
    result["wrong"] = verdict(result, args.max_actor_steps)
    results = json.load(open(args.out)) if os.path.exists(args.out) else []
    with open(args.out, "w") as f:
        json.dump(results + [result], f, indent=1)
    print(f"[stop_run] {args.launch} --stop={args.stop} {args.stop_s:.0f} s: exit {code}, "
          f"status {summary.get('status')}, actor_steps {summary.get('actor_steps')}, moved "
          f"again {moved} s after SIGCONT, rebuilt {restarts or 'none'}, "
          f"{'PASS' if not result['wrong'] else 'FAIL: ' + '; '.join(result['wrong'])} -> {args.out}",
          flush=True)
    if not result["wrong"]:
        shutil.rmtree(logdir, ignore_errors=True)
    return 0 if not result["wrong"] else 1


def _signal(pids: list[int], signum: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, signum)
        except ProcessLookupError:
            pass


if __name__ == "__main__":
    sys.exit(main())
