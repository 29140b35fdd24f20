"""The fast tier as it was seen to die: a fresh clone's `make test` as a background job
under nohup, from a bash with job control, beside a CPU-heavy process at `nice -n 19`
(and, with --taskset, the runner held to one core), repeated --runs times.

Each run: `git clone` of this checkout's HEAD into a new folder, the spinner started,
`bash -m -c 'nohup make test > log 2>&1 & wait'` (make builds the clone's .venv first),
then the spinner stopped. Per run it records make's exit code, pytest's summary line (or
that there was none: the runner vanished), the counts, the minutes, the failures, and the
processes left on the machine afterwards that carry the run's mark (every process the
suite started inherits it, orphans included).
Appends to bench/results/suite_under_load.json.

    python bench/suite_under_load.py --runs=3
    python bench/suite_under_load.py --runs=1 --taskset=0
    python bench/suite_under_load.py --runs=1 --commit=0920af2   # the code before the fixes
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import uuid

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from launch_programs.processes import command_line, marked  # noqa: E402

OUT = os.path.join(ROOT, "bench", "results", "suite_under_load.json")
SPINNER = "while True: pass  # suite_under_load spinner"
MARK_ENV = "AGENTKIT_TEST_SUITE"  # The suite's own mark (tests/conftest.py keeps one given).
TIMEOUT_S = 90 * 60  # CI's limit.


def counts_of(log: str) -> dict:
    """pytest's last summary line in `log`: its counts, or summary None (no such line)."""
    lines = [line for line in log.splitlines() if re.search(r"\d+ (passed|failed)", line)
             and " in " in line]
    if not lines:
        return {"summary": None}
    line = lines[-1].strip("= ")
    found = {kind: int(n) for n, kind in re.findall(r"(\d+) (passed|failed|skipped|deselected|"
                                                     r"errors?|warnings?)", line)}
    return {"summary": line, **found}


def failures_of(log: str) -> list[str]:
    return sorted({m for m in re.findall(r"^(?:FAILED|ERROR) (\S+)", log, re.M)})


def one_run(index: int, taskset: str, keep: bool, at: str = "") -> dict:
    clone = tempfile.mkdtemp(prefix=f"suite-load-{index}-", dir="/tmp")
    subprocess.run(["git", "clone", "-q", ROOT, clone], check=True)
    if at:  # An earlier commit: the reproduction on the code before a fix.
        subprocess.run(["git", "checkout", "-q", at], cwd=clone, check=True)
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=clone, capture_output=True,
                            text=True).stdout.strip()
    pin = ["taskset", "-c", taskset] if taskset else []  # The spinner shares the runner's core.
    spinner = subprocess.Popen([*pin, "nice", "-n", "19", sys.executable, "-c", SPINNER],
                               start_new_session=True)
    make = "make test" if not taskset else f"taskset -c {taskset} make test"
    mark = uuid.uuid4().hex
    start = time.monotonic()
    try:
        code = subprocess.run(["bash", "-m", "-c", f"nohup {make} > log 2>&1 & wait $!"],
                              cwd=clone, start_new_session=True, timeout=TIMEOUT_S,
                              env=dict(os.environ, **{MARK_ENV: mark})).returncode
    except subprocess.TimeoutExpired:
        code = "timeout"
    minutes = (time.monotonic() - start) / 60
    spinner.kill()
    spinner.wait()
    with open(os.path.join(clone, "log"), errors="replace") as f:
        log = f.read()
    time.sleep(5.0)  # What is still running after the run's own 15 s checks is left.
    left = [f"{pid} {command_line(pid)[:120]}" for pid in marked(mark, MARK_ENV)]
    result = {"run": index, "commit": commit, "taskset": taskset or None,
              "make_exit_code": code, "minutes": round(minutes, 1),
              **counts_of(log), "failures": failures_of(log), "left_running": left,
              "log_tail": log.strip().splitlines()[-3:]}
    if keep:
        result["clone"] = clone
    else:
        shutil.rmtree(clone, ignore_errors=True)
    return result


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--taskset", default="", help="CPU list for the runner, e.g. 0")
    parser.add_argument("--keep", action="store_true", help="keep each clone and its log")
    parser.add_argument("--commit", default="", help="run this commit's suite, not HEAD's")
    parser.add_argument("--out", default=OUT)
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs must be >= 1")
    report = json.load(open(args.out)) if os.path.exists(args.out) else {"runs": []}
    for _ in range(args.runs):
        result = one_run(len(report["runs"]), args.taskset, args.keep, args.commit)
        report["runs"].append(result | {"date": time.strftime("%Y-%m-%d %H:%M")})
        print(json.dumps({k: result[k] for k in ("run", "make_exit_code", "minutes", "summary",
                                                  "failures", "left_running")}), flush=True)
        os.makedirs(os.path.dirname(args.out), exist_ok=True)
        with open(args.out, "w") as f:
            json.dump(report, f, indent=1)
    return 0 if all(r["make_exit_code"] == 0 for r in report["runs"][-args.runs:]) else 1


if __name__ == "__main__":
    sys.exit(main())
