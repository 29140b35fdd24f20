"""A full run under --launch=ray that loses an actor, the learner, the counter and then the
driver itself to kill -9, and is finished by running the same command again.

Runs the command line (DQN on CartPole by default) with checkpoints every
`--checkpoint_every_s`, reads the node pids from the launcher's "[ray] nodes
up" line (pids inside the run's private pid namespace: they are mapped to
this machine's pids through /proc's NSpid), and kills each node's process
once the counter passes its `--kill_*_at` step; then kill -9 of the launched
process itself. It measures how long the run's processes outlive the driver,
what the counter lost at each kill (the actor steps logged just before the
kill against those the counter holds after it), and runs the same command
again, which must resume the counts, reach the target and count every
life. Writes bench/results/kill_run.json.

    python bench/kill_run.py --kill_actor_at=20000 --kill_learner_at=40000 \\
        --kill_counter_at=55000 --kill_driver_at=70000
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
sys.path.insert(0, ROOT)

from launch_programs.processes import alive, descendants, outer_pid  # noqa: E402


def last_actor_steps(logdir: str) -> int:
    path = os.path.join(logdir, "actor.csv")
    if not os.path.exists(path):
        return 0
    with open(path) as f:
        rows = [r for r in csv.DictReader(f) if r.get("actor_steps")]
    return int(float(rows[-1]["actor_steps"])) if rows else 0


class Run:
    """One life: the command line in a subprocess, its output echoed and scanned for node pids."""

    def __init__(self, cmd: list[str]):
        print("[kill_run]", " ".join(cmd[1:]), flush=True)
        self.proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True, start_new_session=True)
        self.lines: list[str] = []
        self.pids: dict[str, int] = {}
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.lines.append(line)
            if "reverb/cc" not in line:
                sys.stdout.write(line)
            match = re.search(r"\[ray\] nodes up: (.*)", line)
            if match:  # One line per wave of nodes the launcher builds.
                self.pids.update({k: int(v) for k, v in
                                  (item.split("=") for item in match.group(1).split(", "))})

    def node_pid(self, name: str) -> int:
        inner = self.pids[name]
        try:
            return outer_pid(self.proc.pid, inner)
        except LookupError:
            return inner  # Not isolated (--private_network=false, or refused): pids are ours.

    def wait(self) -> int:
        code = self.proc.wait()
        self._reader.join(10)
        return code


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agent", default="dqn")
    parser.add_argument("--env", default="gym:CartPole-v1")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max_actor_steps", type=int, default=100_000)
    parser.add_argument("--kill_actor_at", type=int, default=20_000)
    parser.add_argument("--kill_learner_at", type=int, default=40_000)
    parser.add_argument("--kill_counter_at", type=int, default=55_000)
    parser.add_argument("--kill_driver_at", type=int, default=70_000)
    parser.add_argument("--checkpoint_every_s", type=float, default=10.0)
    parser.add_argument("--logdir", default=None)
    args = parser.parse_args()
    logdir = args.logdir or tempfile.mkdtemp(prefix="kill-run-")
    cmd = [sys.executable, "-m", "launch_programs.run", f"--agent={args.agent}",
           f"--env={args.env}", "--launch=ray", "--num_actors=2", f"--seed={args.seed}",
           f"--max_actor_steps={args.max_actor_steps}",
           f"--checkpoint_every_s={args.checkpoint_every_s}", f"--logdir={logdir}"]
    first = Run(cmd + ["--fresh"])
    kills = []
    plan = [("actor_1", args.kill_actor_at), ("learner", args.kill_learner_at),
            ("counter", args.kill_counter_at), ("driver", args.kill_driver_at)]
    start = time.time()
    while first.proc.poll() is None and plan:
        name, at = plan[0]
        steps = last_actor_steps(logdir)
        if first.pids and steps >= at:
            kill = {"node": name, "actor_steps_logged": steps,
                    "wall_time_s": round(time.time() - start, 1)}
            if name == "driver":
                processes = descendants(first.proc.pid)
                os.kill(first.proc.pid, signal.SIGKILL)
                killed = time.monotonic()
                while _any_alive(processes) and time.monotonic() - killed < 300:
                    time.sleep(0.05)
                kill.update(processes=len(processes),
                            last_process_gone_after_s=round(time.monotonic() - killed, 2))
            else:
                pid = first.node_pid(name)
                os.kill(pid, signal.SIGKILL)
                kill["pid"] = pid
                if name == "counter":  # What the rebuilt counter holds, against what was logged.
                    before = steps
                    while last_actor_steps(logdir) == before and first.proc.poll() is None:
                        time.sleep(0.1)
                    kill["counter_lost_actor_steps"] = max(0, before - _first_row_after(logdir, before))
            kills.append(kill)
            print(f"[kill_run] kill -9 {name} at {steps} actor steps: {kill}", flush=True)
            plan.pop(0)
        time.sleep(0.2)
    first_code = first.wait()
    logged_at_kill = last_actor_steps(logdir)
    second = Run(cmd)  # The same command again: it resumes.
    second_code = second.wait()
    resumed = [int(m.group(1)) for m in
               (re.search(r"resuming from .*: actor_steps=(\d+)", x) for x in second.lines) if m]
    summary = json.load(open(os.path.join(logdir, "summary.json")))
    restored = [int(m.group(1)) for m in (re.search(r"\[learner\] restored from .* at step (\d+)", x)
                                          for x in first.lines + second.lines) if m]
    restarts: dict[str, int] = {}  # Seen in the first life's output (it never wrote its own end).
    for m in (re.search(r"\[ray\] node (\S+)'s process died; restarted", x) for x in first.lines):
        if m:
            restarts[m.group(1)] = restarts.get(m.group(1), 0) + 1
    result = {
        "command": " ".join(cmd[1:]), "exit_codes": [first_code, second_code], "kills": kills,
        "restarts_seen": restarts,
        "learner_restored_at_step": restored,
        "driver_kill": {"actor_steps_logged_last": logged_at_kill,
                        "actor_steps_resumed": resumed[0] if resumed else None},
        "summary": {k: summary.get(k) for k in (
            "status", "actor_steps", "learner_steps", "wall_time_s", "actor_steps_per_s",
            "eval_return_mean_last10", "first_reached", "node_restarts", "network")},
        "lives": summary.get("lives"),
        "machine": f"{platform.node()}, {os.cpu_count()} cpus",
    }
    out = os.path.join(ROOT, "bench", "results", "kill_run.json")
    with open(out, "w") as f:
        json.dump(result, f, indent=1)
    s = result["summary"]
    print(f"[kill_run] exit codes {result['exit_codes']}, status {s['status']}, kills {kills}, "
          f"driver kill: {result['driver_kill']}, restarts {restarts}, learner restored "
          f"at {restored}, actor_steps {s['actor_steps']}, learner_steps {s['learner_steps']}, "
          f"eval {s['eval_return_mean_last10']}, first reached {s['first_reached']} -> {out}",
          flush=True)
    driver = kills[-1] if kills and kills[-1]["node"] == "driver" else {}
    ok = (first_code == -signal.SIGKILL and second_code == 0 and len(kills) == 4
          and restarts == {"actor_1": 1, "learner": 1, "counter": 1}
          and s["status"] == "completed" and s["actor_steps"] >= args.max_actor_steps
          and driver.get("last_process_gone_after_s", 999) < 15
          and bool(resumed) and resumed[0] >= logged_at_kill - 2000)
    return 0 if ok else 1


def _any_alive(processes: dict[int, tuple[str, str]]) -> bool:
    return any(alive(pid, start) for pid, (start, _) in processes.items())


def _first_row_after(logdir: str, before: int) -> int:
    """The first actor_steps logged after the row that read `before` (the rebuilt counter's count)."""
    path = os.path.join(logdir, "actor.csv")
    with open(path) as f:
        steps = [int(float(r["actor_steps"])) for r in csv.DictReader(f) if r.get("actor_steps")]
    later = steps[steps.index(before) + 1:] if before in steps else steps[-1:]
    return later[0] if later else before


if __name__ == "__main__":
    sys.exit(main())
