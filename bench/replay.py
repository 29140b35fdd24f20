"""Replay throughput and memory: the project's adders and dataset vs bare Reverb, on Pong frames.

A Reverb server runs in a process of its own (as the `replay` node does),
with the tables of `DQNConfig.atari()` (n-step transitions) and
`R2D2Config.atari()` (sequences of 80 steps, period 40, with a 512-unit LSTM
state), without rate limiters. In one run:

1. memory: 100,000 real Pong transitions (ale-py's vector environment, random
   actions, 16 games) go through the project's batched n-step adder (as DQN's
   batched actors write them), once into the Atari preset's table (each frame
   stored once: a step holds its newest 84x84 frame, items reference the
   four of o_t and of o_t+n) and once into a table of whole stacks (each
   step's 84x84x4 stack stored once and referenced by items: every frame four
   times); the server's resident memory before and after each gives bytes per
   stored transition, extrapolated to the 1,000,000 that DQN on Atari keeps.
   Copying stacks into every item would hold two stacks per transition (56 GB
   per million, before compression).
2. inserts/s: a recorded stream of real frames (stacks slid on by one frame
   each step) is written (a) through the project's `NStepTransitionAdder`
   (whole stacks), (a') in 16 slots at once through its
   `BatchedNStepTransitionAdder`, with whole stacks and with frames once, and
   (b) through a bare trajectory writer creating one-step transition items of
   whole stacks; the same for sequences through (c) `SequenceAdder` and (d) a
   bare writer creating an item every 40 steps.
3. samples/s: batches of 32 transitions through (e) the project's dataset
   iterator (`make_batch_iterator`, prefetched) from each filled table (frames
   once: the stacks gathered and moved back to [84, 84, 4]) and (f) a bare
   `reverb.TrajectoryDataset` batched by tf.data, from the whole-stack table.

Prints one line per figure and a summary line, and writes bench/results/replay.json.

    python bench/replay.py --transitions=100000 --window_s=10
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import dm_env  # noqa: E402
import numpy as np  # noqa: E402
import reverb  # noqa: E402
import tensorflow as tf  # noqa: E402

from agentkit.specs import make_environment_spec  # noqa: E402
from agentkit.types import Transition  # noqa: E402
from agents.dqn import DQNBuilder, DQNConfig  # noqa: E402
from agents.r2d2 import R2D2Builder, R2D2Config  # noqa: E402
from components.adders import NStepTransitionAdder  # noqa: E402
from components.environments import make_environment, make_vector_environment  # noqa: E402
from components.environments.batched import stack_timesteps  # noqa: E402

GAME = "atari:Pong"
STACK_BYTES = 84 * 84 * 4


class SequenceBuilder(R2D2Builder):
    """R2D2's builder with a table name of its own, beside DQN's in one server."""

    table_name = "sequence_table"


class WholeStackBuilder(DQNBuilder):
    """DQN's builder storing whole stacks, in a table of its own beside the preset's."""

    table_name = "whole_stack_table"


def builders() -> tuple[DQNBuilder, DQNBuilder, R2D2Builder]:
    """The Atari configs (DQN's storing frames once, as its preset does, and whole stacks),
    with no rate limit (samples_per_insert 0) and priorities of 1."""
    settings = dict(samples_per_insert=0.0, min_replay_size=64, actor_priorities=False)
    dqn = DQNBuilder(DQNConfig.atari(**settings))
    whole = WholeStackBuilder(DQNConfig.atari(store_frames_once=False, **settings))
    r2d2 = SequenceBuilder(R2D2Config.atari(samples_per_insert=0.0, min_replay_size=64,
                                        max_replay_size=20_000))
    return dqn, whole, r2d2


def serve() -> None:
    """The server process: both tables, the port on stdout, alive until stdin closes."""
    from components.replay import ReplayServer

    spec = make_environment_spec(make_environment(GAME, seed=0))
    tables = [t for builder in builders() for t in builder.make_replay_tables(spec=spec)]
    server = ReplayServer(tables)
    print(server.port, flush=True)
    sys.stdin.read()
    server.stop()


def resident_bytes(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for pid {pid}")


def table_size(client: reverb.Client, table: str) -> int:
    return client.server_info()[table].current_size


def fill_with_pong(client: reverb.Client, builder: DQNBuilder, count: int,
                   at_half=lambda: None) -> float:
    """Writes `count` real transitions of 16 games through one batched n-step adder, as
    DQN's batched actors write them (calling `at_half()` half-way); returns steps/s."""
    num_envs = 16
    env = make_vector_environment(GAME, list(range(num_envs)))
    spec = make_environment_spec(make_environment(GAME, seed=0))
    adder = builder.make_adder(replay_client=client, spec=spec, num_envs=num_envs)
    rng = np.random.default_rng(0)
    adder.add_first(env.reset())
    written, start, half = 0, time.perf_counter(), False
    while written < count:
        if not half and written >= count // 2:
            half = True
            at_half()
        actions = rng.integers(0, 6, num_envs).astype(np.int32)
        timestep = env.step(actions)
        adder.add(actions, timestep)
        written += int((timestep.step_type != dm_env.StepType.FIRST).sum())
    elapsed = time.perf_counter() - start
    adder.close()
    env.close()
    return written / elapsed


def record_frames(num_steps: int) -> np.ndarray:
    """The newest 84x84 frame of each of `num_steps` steps of Pong (random actions)."""
    env = make_environment(GAME, seed=1)
    frames = [env.reset().observation[..., -1]]
    rng = np.random.default_rng(1)
    while len(frames) < num_steps:
        timestep = env.step(np.int32(rng.integers(0, 6)))
        observation = timestep.observation if not timestep.last() else env.reset().observation
        frames.append(observation[..., -1])
    env.close()
    return np.stack(frames)


def timed(window_s: float, body) -> float:
    """Calls body() (which returns how many units it did) until the window is over; units/s."""
    units, start = 0, time.perf_counter()
    while time.perf_counter() - start < window_s:
        units += body()
    return units / (time.perf_counter() - start)


class StreamFeeder:
    """Feeds episodes of `episode_length` steps to something with add_first/add, whose
    observations are stacks of 4 recorded frames slid on by one frame each step."""

    def __init__(self, frames: np.ndarray, episode_length: int = 400):
        self._frames = frames
        self._episode_length = episode_length
        self._cursor = 0

    def _stack(self) -> np.ndarray:
        n, c = len(self._frames), self._cursor
        return np.stack([self._frames[(c - 3 + j) % n] for j in range(4)], axis=-1)

    def episode(self):
        """Yields (action, timestep) pairs; the first has action None."""
        yield None, dm_env.restart(self._stack())
        for t in range(self._episode_length):
            self._cursor += 1
            frame = self._stack()
            last = t == self._episode_length - 1
            step = dm_env.truncation if last else dm_env.transition
            yield np.int32(t % 6), step(np.float32(t % 3 - 1), frame)


def batched_adder_episode(feeders: list[StreamFeeder], adder) -> int:
    """One episode in each of K slots at once, through a batched adder; returns steps."""
    steps = 0
    for pairs in zip(*(feeder.episode() for feeder in feeders)):
        batched = stack_timesteps([timestep for _, timestep in pairs])
        if pairs[0][0] is None:
            adder.add_first(batched)
        else:
            adder.add(np.array([action for action, _ in pairs], np.int32), batched)
            steps += len(pairs)
    return steps


def adder_episode(feeder: StreamFeeder, adder, extras=None) -> int:
    steps = 0
    for action, timestep in feeder.episode():
        if action is None:
            adder.add_first(timestep)
        elif extras is None:
            adder.add(action, timestep)
            steps += 1
        else:
            adder.add(action, timestep, extras)
            steps += 1
    return steps


def bare_transition_episode(feeder: StreamFeeder, writer, table: str) -> int:
    """One item per step: (o_tm1, a_tm1, r_t, d_t, o_t) referencing two appended steps."""
    steps = 0
    for action, timestep in feeder.episode():
        if action is None:
            writer.append({"observation": timestep.observation}, partial_step=True)
            continue
        writer.append({"action": action, "reward": np.float32(timestep.reward),
                       "discount": np.float32(timestep.discount)})
        writer.append({"observation": timestep.observation}, partial_step=True)
        h = writer.history
        writer.create_item(table, 1.0, Transition(
            observation=h["observation"][-2], action=h["action"][-2], reward=h["reward"][-2],
            discount=h["discount"][-2], next_observation=h["observation"][-1]))
        writer.flush(8)
        steps += 1
    writer.append({"action": np.int32(0), "reward": np.float32(0), "discount": np.float32(0)})
    writer.end_episode(clear_buffers=True)
    return steps


def bare_sequence_episode(feeder: StreamFeeder, writer, table: str, length: int, period: int,
                          state) -> int:
    """An item of the last `length` steps every `period` steps."""
    steps = 0
    for action, timestep in feeder.episode():
        if action is None:
            continue
        writer.append({"observation": timestep.observation, "action": action,
                       "reward": np.float32(timestep.reward),
                       "discount": np.float32(timestep.discount),
                       "extras": {"core_state": state}, "mask": np.float32(1)})
        steps += 1
        if steps >= length and (steps - length) % period == 0:
            h = writer.history
            writer.create_item(table, 1.0, {k: _tail(h[k], length) for k in
                                            ("observation", "action", "reward", "discount",
                                             "extras", "mask")})
            writer.flush(8)
    writer.end_episode(clear_buffers=True)
    return steps


def _tail(column, length: int):
    return tf.nest.map_structure(lambda c: c[-length:], column)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--transitions", type=int, default=100_000)
    parser.add_argument("--window_s", type=float, default=10.0)
    parser.add_argument("--out", default=os.path.join(ROOT, "bench", "results", "replay.json"))
    args = parser.parse_args(argv)

    server = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--serve"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        port = int(server.stdout.readline())
        address = f"localhost:{port}"
        client = reverb.Client(address)
        dqn, whole, r2d2 = builders()
        spec = make_environment_spec(make_environment(GAME, seed=0))
        table = whole.table_name  # The bare writer and dataset: whole stacks.
        report = {"machine": f"{platform.node()}, {os.cpu_count()} cpus", "game": GAME}

        time.sleep(1.0)
        report["memory"] = {}
        for name, builder in (("frames_once", dqn), ("whole_stacks", whole)):
            before = resident_bytes(server.pid)
            halfway = []
            fill_rate = fill_with_pong(
                client, builder, args.transitions,
                lambda b=builder, h=halfway: h.append((resident_bytes(server.pid),
                                                  table_size(client, b.table_name))))
            time.sleep(2.0)  # Let the last chunks land.
            after = resident_bytes(server.pid)
            stored = table_size(client, builder.table_name)
            per = (after - before) / stored
            # The second half's growth: a table's cost per item, without what the server
            # allocates once (buffers) when writing starts.
            (mid, mid_stored), = halfway
            slope = (after - mid) / max(1, stored - mid_stored)
            base = report["memory"].get("frames_once", {}).get("server_rss_before_mb", 0) * 2**20
            report["memory"][name] = {
                "transitions": stored, "server_rss_before_mb": round(before / 2**20, 1),
                "server_rss_half_mb": round(mid / 2**20, 1),
                "server_rss_after_mb": round(after / 2**20, 1),
                "bytes_per_transition": round(per),
                "bytes_per_transition_second_half": round(slope),
                "fill_steps_per_s": round(fill_rate, 1),
                # The server's own memory (before any table held anything) plus a million.
                "gb_per_million": round(((base or before) + per * 1e6) / 1e9, 2),
            }
            print(f"[replay] memory, {name.replace('_', ' ')}: {stored} Pong transitions: "
                  f"{per:,.0f} bytes each ({slope:,.0f} in the second half) -> "
                  f"{report['memory'][name]['gb_per_million']} GB per million (server RSS "
                  f"{before / 2**20:.0f} -> {after / 2**20:.0f} MB; {fill_rate:,.0f} steps/s)",
                  flush=True)
        report["memory"]["gb_per_million_if_stacks_copied_uncompressed"] = round(
            2 * STACK_BYTES * 1e6 / 1e9, 1)

        frames = record_frames(2_000)
        feeder = StreamFeeder(frames)
        rates = {}
        w = whole.config  # One environment's n-step adder, as the per-environment baseline.
        adder = NStepTransitionAdder(client, whole.table_name, n_step=w.n_step,
                                     discount=w.discount,
                                     max_in_flight_items=w.max_in_flight_items)
        rates["nstep_adder_steps_per_s"] = timed(args.window_s, lambda: adder_episode(feeder, adder))
        adder.close()
        num_envs = 16
        feeders = [StreamFeeder(frames) for _ in range(num_envs)]
        for i, f in enumerate(feeders):
            f._cursor = 97 * i  # Different frames in each slot.
        for name, builder in (("batched_nstep_adder", whole),
                              ("batched_nstep_adder_frames_once", dqn)):
            batched_adder = builder.make_adder(replay_client=client, spec=spec,
                                               num_envs=num_envs)
            rates[f"{name}_steps_per_s"] = timed(
                args.window_s, lambda a=batched_adder: batched_adder_episode(feeders, a))
            batched_adder.close()
        writer = client.trajectory_writer(num_keep_alive_refs=2)
        rates["bare_transition_writer_steps_per_s"] = timed(
            args.window_s, lambda: bare_transition_episode(feeder, writer, table))
        writer.close()
        c = r2d2.config
        state = (np.zeros(c.lstm_size, np.float32), np.zeros(c.lstm_size, np.float32))
        # R2D2's adder of one environment: a PerEnvironmentAdders of one SequenceAdder.
        seq_adder = r2d2.make_adder(replay_client=client, spec=spec, num_envs=1).adders[0]
        rates["sequence_adder_steps_per_s"] = timed(
            args.window_s, lambda: adder_episode(feeder, seq_adder, {"core_state": state}))
        seq_adder.close()
        writer = client.trajectory_writer(num_keep_alive_refs=c.sequence_length)
        rates["bare_sequence_writer_steps_per_s"] = timed(
            args.window_s, lambda: bare_sequence_episode(feeder, writer, r2d2.table_name,
                                                         c.sequence_length, c.period, state))
        writer.close()

        batch = 32
        once = dqn.make_dataset_iterator(replay_address=address)
        iterator = whole.make_dataset_iterator(replay_address=address)
        bare = iter(reverb.TrajectoryDataset.from_table_signature(
            address, table, max_in_flight_samples_per_worker=2 * batch).batch(batch).prefetch(4))
        for it in (once, iterator, bare):
            for _ in range(20):
                next(it)
        assert next(once).data.observation.shape == (batch, 84, 84, 4)
        rates["dataset_frames_once_samples_per_s"] = timed(args.window_s,
                                                           lambda: next(once) and batch)
        rates["dataset_samples_per_s"] = timed(args.window_s, lambda: next(iterator) and batch)
        rates["bare_dataset_samples_per_s"] = timed(args.window_s, lambda: next(bare) and batch)

        report["rates"] = {k: round(v, 1) for k, v in rates.items()}
        report["ratios"] = {
            "nstep_adder_vs_bare": round(rates["nstep_adder_steps_per_s"]
                                         / rates["bare_transition_writer_steps_per_s"], 3),
            "batched_nstep_adder_vs_bare": round(rates["batched_nstep_adder_steps_per_s"]
                                                 / rates["bare_transition_writer_steps_per_s"], 3),
            "sequence_adder_vs_bare": round(rates["sequence_adder_steps_per_s"]
                                            / rates["bare_sequence_writer_steps_per_s"], 3),
            "dataset_vs_bare": round(rates["dataset_samples_per_s"]
                                     / rates["bare_dataset_samples_per_s"], 3),
            "frames_once_vs_whole_memory": round(
                report["memory"]["frames_once"]["bytes_per_transition"]
                / report["memory"]["whole_stacks"]["bytes_per_transition"], 3),
            "frames_once_vs_whole_inserts": round(
                rates["batched_nstep_adder_frames_once_steps_per_s"]
                / rates["batched_nstep_adder_steps_per_s"], 3),
            "frames_once_vs_whole_samples": round(rates["dataset_frames_once_samples_per_s"]
                                                  / rates["dataset_samples_per_s"], 3),
        }
        r = report["ratios"]
        print(f"[replay] inserts: n-step adder {rates['nstep_adder_steps_per_s']:,.0f}/s vs bare "
              f"{rates['bare_transition_writer_steps_per_s']:,.0f}/s ({r['nstep_adder_vs_bare']:.0%})"
              f"; batched n-step adder (16 slots) {rates['batched_nstep_adder_steps_per_s']:,.0f}"
              f" steps/s ({r['batched_nstep_adder_vs_bare']:.0%})"
              f"; sequence adder {rates['sequence_adder_steps_per_s']:,.0f} steps/s vs bare "
              f"{rates['bare_sequence_writer_steps_per_s']:,.0f} ({r['sequence_adder_vs_bare']:.0%})",
              flush=True)
        print(f"[replay] inserts, frames once: batched n-step adder (16 slots) "
              f"{rates['batched_nstep_adder_frames_once_steps_per_s']:,.0f} steps/s "
              f"({r['frames_once_vs_whole_inserts']:.2f}x whole stacks)", flush=True)
        print(f"[replay] samples: dataset {rates['dataset_samples_per_s']:,.0f}/s vs bare "
              f"{rates['bare_dataset_samples_per_s']:,.0f}/s ({r['dataset_vs_bare']:.0%}); frames "
              f"once {rates['dataset_frames_once_samples_per_s']:,.0f}/s "
              f"({r['frames_once_vs_whole_samples']:.2f}x whole stacks)", flush=True)
        os.makedirs(os.path.dirname(args.out), exist_ok=True)
        with open(args.out, "w") as f:
            json.dump(report, f, indent=1)
        m = report["memory"]
        print(f"[replay] summary: {m['frames_once']['gb_per_million']} GB per million Atari "
              f"transitions with frames once ({m['whole_stacks']['gb_per_million']} GB with whole "
              f"stacks); adders "
              f"{r['nstep_adder_vs_bare']:.0%} (n-step), "
              f"{r['batched_nstep_adder_vs_bare']:.0%} (batched n-step) and "
              f"{r['sequence_adder_vs_bare']:.0%} "
              f"(sequence) of bare inserts, dataset {r['dataset_vs_bare']:.0%} of bare samples "
              f"-> {args.out}")
    finally:
        server.stdin.close()
        server.wait(timeout=60)
    return 0


if __name__ == "__main__":
    if "--serve" in sys.argv:
        serve()
    else:
        sys.exit(main())
