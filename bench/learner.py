"""DQN learner steps/s on the Atari network, fed from Reverb vs from a constant in-memory batch.

Both learners are the project's DQNLearner with `DQNConfig.atari()` networks
(Nature CNN, dueling head) on 84x84x4 uint8 frames. The in-memory one steps
on the same batch again and again (no data path at all); the Reverb one
samples from a local server through the project's dataset
(`make_batch_iterator`, prefetched) and writes priorities back. The table is
filled first with random frames through the project's batched n-step adder
(storing each frame once, as the Atari preset does; `--store_frames_once=false`
stores whole stacks), and no rate limiter holds the learner, so the ratio is
the cost of the data path.
For each batch size, prints one line and writes bench/results/learner.json,
with the FLOPs of one step (convolutions and products of the trained forward,
its gradients, and the two forward passes of o_t) as a fraction of
TensorFlow's float32 matmul rate measured in the same run: how much of the
machine the learner uses.

    python bench/learner.py --batch_sizes=32,256 --window_s=20
    python bench/learner.py --network=mlp --batch_sizes=64 --window_s=10   # CartPole's MLP
    python bench/learner.py --network=mlp --batch_sizes=64 --batches_per_call=8
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import platform
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import dm_env  # noqa: E402
import numpy as np  # noqa: E402
import reverb  # noqa: E402
import tensorflow as tf  # noqa: E402

from agentkit.specs import make_environment_spec  # noqa: E402
from agents.dqn import DQNBuilder, DQNConfig  # noqa: E402
from agents.rainbow import RainbowBuilder, RainbowConfig  # noqa: E402
from components.environments.batched import BatchedEnvironment  # noqa: E402
from components.networks.flops import forward_flops, matmul_rate  # noqa: E402
from components.replay import ReplayServer  # noqa: E402
from launch_programs.devices import configure_tensorflow  # noqa: E402
from tests import fakes  # noqa: E402


def fill(address: str, builder: DQNBuilder, environment_factory, num_transitions: int) -> None:
    """Writes random-action episodes of 16 fake environments through the project's batched
    n-step adder, as DQN's batched actors do (Atari: stacks of random frames, each step's
    stack its predecessor moved on by one frame, so that frames can be stored once)."""
    num_envs = 16
    envs = BatchedEnvironment([environment_factory(seed) for seed in range(num_envs)])
    spec = make_environment_spec(environment_factory(0))
    adder = builder.make_adder(replay_client=reverb.Client(address), spec=spec,
                               num_envs=num_envs)
    rng = np.random.default_rng(0)
    num_actions = int(spec.actions.num_values)
    timestep = envs.reset()
    adder.add_first(timestep)
    written = 0
    while written < num_transitions:
        actions = rng.integers(0, num_actions, num_envs).astype(np.int32)
        timestep = envs.step(actions)
        adder.add(actions, timestep)
        written += int((timestep.step_type != dm_env.StepType.FIRST).sum())
    adder.close()


def _seeded(make, seed: int, **kwargs):
    return make(seed=seed, **kwargs)


def steps_per_s(learner, warmup_steps: int, window_s: float) -> tuple[float, int]:
    """Learner (SGD) steps per second; a call may make several (batches_per_call)."""
    for _ in range(warmup_steps):
        learner.step()
    start, first = time.time(), learner.num_steps
    while time.time() - start < window_s:
        learner.step()
    steps = learner.num_steps - first
    return steps / (time.time() - start), steps


class ConstantIterator:
    """The same sample forever: a learner with no data path."""

    def __init__(self, sample):
        self._sample = sample

    def __iter__(self):
        return self

    def __next__(self):
        return self._sample


AGENTS = {"dqn": (DQNBuilder, DQNConfig), "rainbow": (RainbowBuilder, RainbowConfig)}


def measure(batch_size: int, num_transitions: int, warmup_steps: int, window_s: float,
            network: str = "atari", batches_per_call: int = 1, agent: str = "dqn",
            jit: bool = False, compute_dtype: str = "float32",
            store_frames_once: bool = True) -> dict:
    # New items at priority 1: the actor-side priorities need an actor's network.
    common = dict(batch_size=batch_size, min_replay_size=batch_size, samples_per_insert=0.0,
                  actor_priorities=False, batches_per_call=batches_per_call,
                  compute_dtype=compute_dtype)
    builder_class, config_class = AGENTS[agent]
    if network == "atari":
        config = config_class.atari(store_frames_once=store_frames_once, **common)
        factory = functools.partial(_seeded, fakes.FrameStackAtari, episode_length=100)
    else:  # The classic-control preset's network (CartPole's): MLP 256x256, no head layer.
        config = config_class.classic_control(**common)
        factory = functools.partial(_seeded, fakes.discrete_environment, num_actions=2,
                                    observation_shape=(4,), episode_length=100)
    spec = make_environment_spec(factory(0))
    builder = builder_class(config)
    server = ReplayServer(builder.make_replay_tables(spec=spec))
    try:
        fill(server.address(), builder, factory, num_transitions)
        iterator = builder.make_dataset_iterator(replay_address=server.address())
        reverb_learner = builder.make_learner(networks=builder.make_networks(spec=spec), spec=spec,
                                              iterator=iterator,
                                              replay_address=server.address())
        reverb_rate, reverb_steps = steps_per_s(reverb_learner, warmup_steps, window_s)
        # One sample from the same table, kept in memory as tensors.
        sample = tf.nest.map_structure(tf.identity, next(iterator))
        # With several batches per call the loop reads them in its graph: a tf.data
        # iterator repeating the sample (a Python iterator would run a Python loop).
        constant = (ConstantIterator(sample) if batches_per_call == 1
                    else iter(tf.data.Dataset.from_tensors(sample).repeat()))
        memory_learner = builder.make_learner(networks=builder.make_networks(spec=spec), spec=spec,
                                              iterator=constant, replay_address=None)
        if jit:  # A trial: XLA compiles the whole step (the in-memory learner writes no
            # priorities, whose Reverb op XLA cannot compile).
            memory_learner._step_fn = tf.function(  # noqa: SLF001
                memory_learner._step, jit_compile=True, autograph=False)  # noqa: SLF001
        memory_rate, memory_steps = steps_per_s(memory_learner, warmup_steps, window_s)
        # The online network's forward on a batch, trained; plus the online (double Q) and
        # target values of o_t without gradients.
        observation = spec.observations
        forward = forward_flops(builder.make_networks(spec=spec)["q"], tf.TensorSpec(
            (batch_size, *observation.shape), observation.dtype))
        step_flops = forward.sgd_step(extra_forwards=2 if config.double_q else 1)
    finally:
        server.stop()
    return {
        "agent": agent,
        "network": network,
        "batch_size": batch_size,
        "batches_per_call": batches_per_call,
        "memory_jit_compile": jit,
        "compute_dtype": compute_dtype,
        "store_frames_once": store_frames_once if network == "atari" else False,
        "reverb_steps_per_s": round(reverb_rate, 2), "reverb_steps": reverb_steps,
        "memory_steps_per_s": round(memory_rate, 2), "memory_steps": memory_steps,
        "ratio_reverb_to_memory": round(reverb_rate / memory_rate, 3),
        "transitions_in_table": num_transitions,
        "step_gflop": round(step_flops / 1e9, 4),
        "reverb_gflop_per_s": round(step_flops * reverb_rate / 1e9, 2),
        "memory_gflop_per_s": round(step_flops * memory_rate / 1e9, 2),
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch_sizes", default="32,256")
    parser.add_argument("--transitions", type=int, default=5000)
    parser.add_argument("--warmup_steps", type=int, default=10)
    parser.add_argument("--window_s", type=float, default=20.0)
    parser.add_argument("--network", default="atari", choices=["atari", "mlp"],
                        help="atari: the Nature CNN on 84x84x4 frames; mlp: CartPole's MLP")
    parser.add_argument("--agent", default="dqn", choices=sorted(AGENTS),
                        help="whose learner (and Atari or classic-control preset)")
    parser.add_argument("--batches_per_call", type=int, default=1,
                        help="learner steps per compiled call (DQNConfig.batches_per_call)")
    parser.add_argument("--jit", action="store_true",
                        help="compile the in-memory learner's step with XLA (a trial)")
    parser.add_argument("--compute_dtype", default="float32", choices=["float32", "bfloat16"],
                        help="the Nature CNN's convolutions (DQNConfig.compute_dtype)")
    parser.add_argument("--store_frames_once", default="true", choices=["true", "false"],
                        help="Atari: replay stores each frame once (the preset) or whole stacks")
    parser.add_argument("--threads", type=int, default=0,
                        help="TensorFlow's intra- and inter-op threads (0: its default)")
    parser.add_argument("--out", default=None,
                        help="default: bench/results/learner.json (learner_mlp.json for mlp; "
                             "_bpc<N> added with --batches_per_call=N > 1)")
    args = parser.parse_args(argv)
    if args.out is None:
        name = "learner" + ("" if args.agent == "dqn" else f"_{args.agent}")
        name += "_mlp" if args.network == "mlp" else ""
        name += f"_bpc{args.batches_per_call}.json" if args.batches_per_call > 1 else ".json"
        args.out = os.path.join(os.path.dirname(__file__), "results", name)
    configure_tensorflow(args.threads)  # And GPU memory growth where there is a GPU.
    rate = matmul_rate()  # The machine's dense rate, in this run: what a step could reach.
    print(f"[learner] TensorFlow's 2048x2048 float32 matmul: {rate / 1e9:.1f} GFLOP/s", flush=True)
    runs = []
    for batch_size in (int(x) for x in args.batch_sizes.split(",")):
        run = measure(batch_size, args.transitions, args.warmup_steps, args.window_s,
                      args.network, args.batches_per_call, args.agent, args.jit,
                      args.compute_dtype, args.store_frames_once == "true")
        run["reverb_flop_fraction"] = round(run["reverb_gflop_per_s"] * 1e9 / rate, 3)
        run["memory_flop_fraction"] = round(run["memory_gflop_per_s"] * 1e9 / rate, 3)
        runs.append(run)
        frames = " frames once" if run["store_frames_once"] else ""
        print(f"[learner] {args.agent} {args.network}{frames} batch={batch_size} "
              f"batches_per_call={args.batches_per_call} from Reverb "
              f"{run['reverb_steps_per_s']} steps/s, "
              f"from memory {run['memory_steps_per_s']} steps/s, ratio "
              f"{run['ratio_reverb_to_memory']}; {run['step_gflop']} GFLOP a step: "
              f"{run['reverb_flop_fraction']} of the matmul rate from Reverb, "
              f"{run['memory_flop_fraction']} from memory", flush=True)
    report = {"runs": runs, "matmul_gflop_per_s": round(rate / 1e9, 1), "threads": args.threads,
              "machine": f"{platform.node()}, {os.cpu_count()} cpus",
              "tensorflow": tf.__version__, "gpu": bool(tf.config.list_physical_devices("GPU"))}
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(report, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
