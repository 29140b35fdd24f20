"""Where a second of our Pong PPO run's wall-clock goes, thread by thread, and what an agent
step costs against the CPU's measured arithmetic rate.

1. FLOPs (counted from the graphs' convolutions and products, components/networks/flops.py):
   an agent step of the preset is one acting forward pass and, in each of its 4 epochs, one
   forward and backward pass; set beside TensorFlow's float32 2048x2048 matmul rate and the
   network's own forward and forward+backward rates at the learner's minibatch, measured in
   the same run. The same for the Nature CNN with 512 units (rl_games' and CleanRL's).
2. A sampling profile: the preset's run (`--agent=ppo --env=atari:Pong --sticky_actions=0`,
   threads) after --warmup_s, sampled by py-spy at 100 Hz for --seconds, idle threads
   included: each sample is sorted by its thread (actor, learner, evaluator) and its stack
   into env stepping, inference, adding, fetching weights or waiting for them, the learner's
   SGD step, reading data (which holds waiting for the actor's round), evaluation: where each
   thread's wall-clock goes. Beside it the process's CPU seconds over the same seconds (all
   its threads: TensorFlow's pools and ale-py's run outside the Python threads, and a
   Python thread waiting on them looks idle, so py-spy's own idle flag cannot tell CPU).

3. rl_games' own split of its agent step (simulators, policy, learning), read from its
   timing lines in bench/peers_pong.py's output, for the side by side.

Writes bench/results/profile_pong.json and prints the table. `--pid=P` profiles a run that is
already going (its process with the "learner" thread) and skips the FLOPs part.

    python bench/profile_pong.py                     # nothing else running
    python bench/profile_pong.py --pid=12345 --seconds=20
    python bench/profile_pong.py --run_flags=--max_policy_lag=1 --out=/tmp/lag1.json
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "bench"))

from peers_pong import OUT as PEERS_OUT  # noqa: E402
from peers_pong import CsvTail, rl_games_split, stop  # noqa: E402

OUT = os.path.join(ROOT, "bench", "results", "profile_pong.json")
RATE_HZ = 100

# Per thread kind, (category, stack fragment) in order: a sample takes the first category
# whose fragment is in its stack ("" matches every stack).
RULES = {
    "actor": [("fetching weights or waiting for them", "variable_client.py"),
              ("env stepping", "environments/atari_vector.py"),
              ("inference", "select_action"),
              ("adding to replay", "components/adders/"),
              ("loop and bookkeeping", "")],
    "learner": [("SGD step (forward, backward, Adam)", "components/compiled.py"),
                ("reading data (and waiting for the round)", "components/datasets/"),
                ("loop and bookkeeping", "")],
    "evaluator": [("waiting for its next round", "wait (threading.py"),
                  ("evaluating", "")],
}


def thread_kind(name: str) -> str | None:
    """"actor" for actor_0, actor_1, ... (not their helpers, as actor_0-budget)."""
    kind = re.sub(r"_\d+$", "", name)
    return kind if kind in RULES else None


def classify(raw: str) -> dict[str, collections.Counter]:
    """py-spy's raw output (`thread (tid): name;frame;... count` a line) as sample counts a
    category, per thread kind; threads of other kinds are left out."""
    counts: dict[str, collections.Counter] = {k: collections.Counter() for k in RULES}
    for line in raw.splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        head, _, frames = stack.partition(";")
        kind = thread_kind(head.split(": ", 1)[-1])
        if kind is None:
            continue
        category = next(c for c, fragment in RULES[kind] if fragment in frames)
        counts[kind][category] += int(count)
    return counts


def record(pid: int, seconds: float) -> str:
    """py-spy's raw samples of `pid`'s threads over `seconds`, idle ones included."""
    spy = os.path.join(os.path.dirname(sys.executable), "py-spy")
    if not os.path.exists(spy):
        raise SystemExit("error: py-spy is missing: pip install -e '.[bench]'")
    out = tempfile.mktemp(suffix=".txt")
    try:
        subprocess.run([spy, "record", "--pid", str(pid), "--duration", str(int(seconds)),
                        "--rate", str(RATE_HZ), "--threads", "--format", "raw", "--nonblocking",
                        "--output", out, "--idle"],
                       check=True, capture_output=True)
        with open(out) as f:
            return f.read()
    finally:
        if os.path.exists(out):
            os.remove(out)


def table(wall: dict[str, collections.Counter]) -> list[dict]:
    """Per thread kind and category: its share of the thread's wall-clock (several actors:
    of all of theirs)."""
    rows = []
    for kind, counter in wall.items():
        total = sum(counter.values())
        rows += [{"thread": kind, "category": category, "wall_fraction": round(count / total, 3)}
                 for category, count in counter.most_common()]
    return rows


def cpu_seconds(pid: int) -> float:
    """The process's user and system CPU seconds so far, all threads."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_process(pid: int) -> int:
    """The process of a run that steps it: the deepest of `pid` and its descendants running
    launch_programs.run (the command supervises a child that holds the nodes)."""
    found, level = None, [pid]
    while level:
        below = []
        for p in level:
            try:
                if b"launch_programs.run" in open(f"/proc/{p}/cmdline", "rb").read():
                    found = p
                for t in os.listdir(f"/proc/{p}/task"):
                    below += [int(c) for c in open(f"/proc/{p}/task/{t}/children").read().split()]
            except OSError:
                continue
        level = below
    if found is None:
        raise SystemExit(f"error: neither {pid} nor a process under it runs launch_programs.run")
    return found


def actor_steps(logdir: str) -> int:
    """The run's actor steps: the largest of the last whole rows of actor.csv (a row per
    game, so none for minutes when the 64 games end together) and learner.csv (a row about
    each second); 0 before any."""
    steps = 0
    for name in ("actor.csv", "learner.csv"):
        rows = list(CsvTail(os.path.join(logdir, name)).rows())
        if rows:
            steps = max(steps, int(float(rows[-1]["actor_steps"])))
    return steps


def flops_part(minibatch: int, epochs: int) -> dict:
    """FLOPs of an agent step of the preset's network and of the Nature CNN, and the rates."""
    import tensorflow as tf
    from dm_env import specs

    from agentkit.specs import EnvironmentSpec
    from components.networks.actor_critic import make_policy_value_network
    from components.networks.flops import forward_flops, matmul_rate

    spec = EnvironmentSpec(
        observations=specs.BoundedArray((84, 84, 4), "uint8", 0, 255, "observation"),
        actions=specs.DiscreteArray(6, name="action"),
        rewards=specs.Array((), "float32"), discounts=specs.BoundedArray((), "float32", 0, 1))
    result = {"matmul_gflop_per_s": round(matmul_rate() / 1e9, 1)}
    for name, torso, hidden in (("preset_16_32", "atari_shallow", 256),
                                ("nature_cnn_512", "atari", 512)):
        network = make_policy_value_network(spec, torso=torso, hidden_sizes=(),
                                            head_hidden_size=hidden, shared_torso=True,
                                            compute_dtype="float32", init="orthogonal",
                                            activation="relu", normalize_observations=False)
        one = forward_flops(network, tf.TensorSpec((1, 84, 84, 4), tf.uint8))
        step = one.total + epochs * (3 * one.total - one.first)  # Acting, then each epoch.
        x = tf.random.uniform((minibatch, 84, 84, 4), 0, 255, tf.int32)
        x = tf.cast(x, tf.uint8)
        forward = tf.function(lambda o, net=network: tf.nest.flatten(net(o))[0])

        @tf.function
        def train(o, net=network):
            with tf.GradientTape() as tape:
                loss = sum(tf.reduce_sum(tf.cast(t, tf.float32))
                           for t in tf.nest.flatten(net(o)) if t.dtype.is_floating)
            return tape.gradient(loss, net.trainable_variables)

        rates = {}
        for label, fn, flops in (("forward", forward, one.total * minibatch),
                                 ("forward_backward", train,
                                  (3 * one.total - one.first) * minibatch)):
            fn(x)
            count, start = 0, time.perf_counter()
            while count < 3 or time.perf_counter() - start < 3.0:
                tf.nest.map_structure(lambda t: t.numpy(), fn(x))
                count += 1
            rates[label] = round(flops * count / (time.perf_counter() - start) / 1e9, 1)
        result[name] = {"forward_mflop_per_frame": round(one.total / 1e6, 2),
                        "agent_step_mflop": round(step / 1e6, 1),
                        f"gflop_per_s_at_minibatch_{minibatch}": rates}
    return result


def kept_rl_games_split() -> dict | None:
    """rl_games' split as bench/peers_pong.py kept it in its results, when its log is gone."""
    try:
        with open(PEERS_OUT) as f:
            return json.load(f)["runs"]["rl_games"].get("timing_split")
    except (OSError, KeyError, ValueError):
        return None


def arithmetic_fraction(agent_steps_per_s: float, agent_step_mflop: float,
                        matmul_gflop_per_s: float) -> float:
    """The FLOPs an agent step needs at the run's rate, over the CPU's measured matmul rate."""
    return round(agent_steps_per_s * agent_step_mflop / 1e3 / matmul_gflop_per_s, 3)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pid", type=int, default=0, help="profile this running run instead")
    parser.add_argument("--warmup_s", type=float, default=150.0,
                        help="seconds after launch before sampling (tracing and the first "
                             "rounds are past)")
    parser.add_argument("--seconds", type=float, default=60.0, help="each recording's length")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--run_flags", default="",
                        help="flags added to the run's command, space-separated (for example "
                             "--max_policy_lag=1)")
    parser.add_argument("--rl_games_log",
                        default=os.path.join(ROOT, "runs", "peers_pong", "rl_games", "output.log"),
                        help="rl_games' output from bench/peers_pong.py: its own timing split")
    parser.add_argument("--out", default=OUT)
    args = parser.parse_args(argv)
    if args.seconds < 1 or args.warmup_s < 0:
        parser.error("--seconds must be >= 1 and --warmup_s >= 0")
    report: dict = {"benchmark": "profile_pong", "rate_hz": RATE_HZ, "seconds": args.seconds,
                    "date": time.strftime("%Y-%m-%d")}
    proc, logdir = None, None
    try:
        if args.pid:
            pid = run_process(args.pid)
        else:
            report["flops"] = flops_part(minibatch=2048, epochs=4)
            logdir = tempfile.mkdtemp(prefix="profile-pong-")
            cmd = [sys.executable, "-m", "launch_programs.run", "--agent=ppo",
                   "--env=atari:Pong", "--sticky_actions=0", "--launch=threads",
                   f"--seed={args.seed}", "--max_actor_steps=100000000",
                   f"--logdir={logdir}", "--print_every_s=0", *args.run_flags.split()]
            report["command"] = " ".join(cmd[1:]).replace(logdir, "LOGDIR")
            proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL,
                                    start_new_session=True)
            time.sleep(args.warmup_s)
            pid = run_process(proc.pid)
        steps_before = actor_steps(logdir) if logdir else None
        cpu_before, start = cpu_seconds(pid), time.monotonic()
        wall = classify(record(pid, args.seconds))
        elapsed = time.monotonic() - start
        report["cores_busy"] = round((cpu_seconds(pid) - cpu_before) / elapsed, 2)
        if logdir:
            report["agent_steps_per_s"] = round((actor_steps(logdir) - steps_before) / elapsed, 1)
    finally:
        if proc is not None:
            stop(proc, graceful=True)
        if logdir:
            shutil.rmtree(logdir, ignore_errors=True)
    report["profile"] = table(wall)
    if logdir:
        preset = report["flops"]["preset_16_32"]
        report["arithmetic_fraction"] = arithmetic_fraction(
            report["agent_steps_per_s"], preset["agent_step_mflop"],
            report["flops"]["matmul_gflop_per_s"])
    report["rl_games"] = rl_games_split(args.rl_games_log) or kept_rl_games_split()
    for row in report["profile"]:
        print(f"{row['thread']:>9}  {row['category']:<45} {row['wall_fraction']:>6.1%}")
    print(f"the process kept {report['cores_busy']} of {os.cpu_count()} cores busy"
          + (f", {report['agent_steps_per_s']} agent steps/s, "
             f"{report['arithmetic_fraction']:.1%} of the matmul rate" if logdir else ""))
    if not args.pid:
        os.makedirs(os.path.dirname(args.out), exist_ok=True)
        with open(args.out, "w") as f:
            json.dump(report, f, indent=1)
    else:
        print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
