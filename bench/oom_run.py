"""A run whose replay outgrows its memory, in a memory cgroup of its own (as a container or
a batch job caps a run): does it end in the kernel's OOM kill (kill -9: no summary, what
the learner did since its last checkpoint lost) or stop cleanly in one line?

Needs root and a writable cgroup memory hierarchy (v1 or v2). Makes a child cgroup of this
process's with `--limit_mb`, starts the command line in it (DQN on Atari Pong, its replay
of `--replay_items` frames-once items filled before learning starts, so that it grows at
the actors' rate: the check before launch passes, its lower bound being under the limit,
but the replay's real size is not: about 2.6 KB an item here), waits for its end, and
reports the exit code, the last lines, summary.json's status and `stopped_by`, and the
cgroup's OOM kills. `--checkout` runs another checkout's code (an older commit, in a
worktree) with this Python.
Appends to bench/results/oom_run.json.

    python bench/oom_run.py --limit_mb=1200
    python bench/oom_run.py --limit_mb=1200 --checkout=/tmp/old-tree
"""

from __future__ import annotations

import argparse
import contextlib
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

from launch_programs.memory import memory_cgroup_folders  # noqa: E402

OUT = os.path.join(ROOT, "bench", "results", "oom_run.json")


def make_cgroup(limit_bytes: int) -> tuple[str, str]:
    """A new child of this process's memory cgroup with the limit; (folder, kind)."""
    folders = memory_cgroup_folders("/proc/self")
    if not folders:
        raise SystemExit("oom_run: no memory cgroup hierarchy is mounted here")
    own, kind = folders[0]
    folder = os.path.join(own, f"agentkit-oom-{os.getpid()}")
    try:
        os.mkdir(folder)
        limit_file = "memory.max" if kind == "cgroup2" else "memory.limit_in_bytes"
        with open(os.path.join(folder, limit_file), "w") as f:
            f.write(str(limit_bytes))
    except OSError as e:
        raise SystemExit(f"oom_run: cannot make a memory cgroup in {own}: {e.strerror} "
                         f"(root and a writable hierarchy are needed)") from None
    return folder, kind


def oom_kills(folder: str, kind: str) -> int | None:
    """How many processes the kernel's OOM killer ended in the cgroup."""
    name = "memory.events" if kind == "cgroup2" else "memory.oom_control"
    try:
        with open(os.path.join(folder, name)) as f:
            for line in f:
                key, _, value = line.partition(" ")
                if key == "oom_kill":
                    return int(value)
    except (OSError, ValueError):
        pass
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit_mb", type=float, default=1200.0)
    parser.add_argument("--replay_items", type=int, default=400_000,
                        help="the replay's size, filled before learning starts")
    parser.add_argument("--checkout", default=ROOT, help="the code to run (default: this one)")
    parser.add_argument("--timeout_s", type=float, default=1200.0)
    args = parser.parse_args()
    folder, kind = make_cgroup(int(args.limit_mb * 1e6))
    logdir = tempfile.mkdtemp(prefix="oom-run-")
    cmd = [sys.executable, "-m", "launch_programs.run", "--agent=dqn", "--env=atari:Pong",
           "--atari_vector_env=true", "--num_actors=2", "--num_envs_per_actor=16",
           f"--min_replay_size={args.replay_items}", f"--max_replay_size={args.replay_items}",
           "--eval_at_start=false", "--max_actor_steps=5000000", "--checkpoint_every_s=60",
           f"--logdir={logdir}"]

    def enter() -> None:  # In the child, before exec: into the cgroup.
        with open(os.path.join(folder, "cgroup.procs"), "w") as f:
            f.write(str(os.getpid()))

    print(f"[oom_run] {args.checkout}: {' '.join(cmd[1:])} in {folder} "
          f"(limit {args.limit_mb:,.0f} MB)", flush=True)
    start = time.monotonic()
    try:
        done = subprocess.run(cmd, cwd=args.checkout, preexec_fn=enter, capture_output=True,
                              text=True, timeout=args.timeout_s,
                              env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
        code, out, err = done.returncode, done.stdout, done.stderr
    except subprocess.TimeoutExpired as e:
        code, out, err = None, e.stdout or "", e.stderr or ""
    wall = round(time.monotonic() - start, 1)
    kills = oom_kills(folder, kind)
    summary_path = os.path.join(logdir, "summary.json")
    summary = json.load(open(summary_path)) if os.path.exists(summary_path) else None
    progress = [line for line in (out or "").splitlines() if line.startswith("[progress]")]
    errors = [line for line in (err or "").splitlines() if line.startswith("error")]
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=args.checkout,
                            capture_output=True, text=True).stdout.strip()
    result = {
        "checkout": args.checkout, "commit": commit, "limit_mb": args.limit_mb,
        "command": " ".join(cmd[1:]), "exit_code": code, "wall_s": wall, "oom_kills": kills,
        "last_progress": progress[-1] if progress else None, "error_lines": errors,
        "summary": None if summary is None else {
            k: summary.get(k) for k in ("status", "actor_steps", "stopped_by", "memory")},
        "learner_checkpoint": os.path.exists(os.path.join(logdir, "checkpoints", "learner.npz")),
        "machine": f"{platform.node()}, {os.cpu_count()} cpus, {time.strftime('%Y-%m-%d')}",
    }
    results = json.load(open(OUT)) if os.path.exists(OUT) else []
    with open(OUT, "w") as f:
        json.dump(results + [result], f, indent=1)
    print(f"[oom_run] {commit}: exit {code} after {wall} s, OOM kills {kills}, summary "
          f"{'none' if summary is None else summary.get('status')}, errors {errors} -> {OUT}",
          flush=True)
    with contextlib.suppress(OSError):  # Empty now: its processes are gone.
        os.rmdir(folder)
    if summary is not None and summary.get("stopped_by"):
        shutil.rmtree(logdir, ignore_errors=True)
    else:  # Kept to see what happened: its CSVs, monitor.csv's memory.
        print(f"[oom_run] kept {logdir}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
