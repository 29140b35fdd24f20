"""Seconds from the command to the learner's first step, per launcher.

Runs `python -m launch_programs.run --agent=dqn --env=gym:CartPole-v1
--launch=L` (the CartPole preset with its evaluator, 2 actors, a short budget) `--repeats`
times per launcher, one run at a time, and reads from each run's
summary.json `startup`: the seconds from the command's start to Ray being up,
to every node built and to the learner's first step. While a run goes, it
samples the CPU time of the command's whole process tree (driver, Ray's GCS
and raylet, every node process) every 0.1 s, and reports how much CPU the
machine had spent when the learner first stepped, by process kind: divided
by the cores, that is the floor under the start-up time on this machine.
Prints one line per run and writes bench/results/startup.json with the
medians.

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
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from launch_programs import processes  # noqa: E402

PHASES = ("ray_up_s", "nodes_up_s", "first_learner_step_s", "cpu_s_to_first_learner_step")


class TreeCPU:
    """Samples the CPU seconds of a process tree every `every_s`, per process, so that what
    a process spent is kept after it exits."""

    def __init__(self, root: int, every_s: float = 0.1):
        self._root, self._every_s = root, every_s
        self._start = time.time()
        self._last: dict[int, tuple[str, float]] = {}  # pid -> (kind, CPU s seen last).
        self._samples: list[tuple[float, dict[str, float]]] = []  # (s since start, per kind).
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            for pid in (self._root, *processes.descendants(self._root)):
                used = processes.cpu_seconds(pid)
                if used > 0:
                    kind = processes.process_kind(processes.command_line(pid))
                    self._last[pid] = (kind, used)
            per_kind: dict[str, float] = {}
            for kind, used in self._last.values():
                per_kind[kind] = per_kind.get(kind, 0.0) + used
            self._samples.append((time.time() - self._start, per_kind))
            self._stop.wait(self._every_s)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def at(self, t: float) -> tuple[float, dict[str, float]]:
        """CPU seconds spent by `t` seconds after the start, in all and per kind."""
        before = [kinds for when, kinds in self._samples if when <= t]
        kinds = before[-1] if before else {}
        return (round(sum(kinds.values()), 2),
                {k: round(v, 2) for k, v in sorted(kinds.items())})


def measure(launch: str, max_actor_steps: int) -> dict:
    logdir = tempfile.mkdtemp(prefix=f"bench-startup-{launch}-")
    command = [sys.executable, "-m", "launch_programs.run", "--agent=dqn",
               "--env=gym:CartPole-v1", f"--launch={launch}", "--num_actors=2",
               f"--max_actor_steps={max_actor_steps}",
               f"--logdir={logdir}", "--print_every_s=0"]
    start = time.time()
    proc = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True)
    cpu = TreeCPU(proc.pid)
    _, err = proc.communicate()
    wall = time.time() - start
    cpu.stop()
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} exited {proc.returncode}: {err[-2000:]}")
    with open(os.path.join(logdir, "summary.json")) as f:
        summary = json.load(f)
    run = {"launch": launch, **summary.get("startup", {}), "command_wall_s": round(wall, 2)}
    if "first_learner_step_s" in run:
        # The summary counts from the command's own start, a few hundredths of a second after
        # the Popen above: the CPU figure is read at the same moment, slightly early.
        total, kinds = cpu.at(run["first_learner_step_s"])
        run["cpu_s_to_first_learner_step"] = total
        run["cpu_floor_s"] = round(total / os.cpu_count(), 2)
        run["cpu_s_by_kind"] = kinds
    return run


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
