"""R2D2 learner updates on Atari frames: the cost of an update against what the machine computes.

For each variant of `R2D2Config.atari()` (the 2-core preset, the paper's layout,
and the preset with one of its choices undone), the project's R2D2Learner steps on
one constant batch of random 84x84x4 frames (no replay: the learner alone), and
the script prints and writes bench/results/r2d2_learner.json: milliseconds an
update, trained steps a second, the dense FLOPs of an update (both networks'
forward passes over every step, the online network's gradients over the trained
steps) and the rate reached, beside TensorFlow's float32 and bfloat16 matmul rates
measured in the same run.

    python bench/r2d2_learner.py                      # every variant, 12 s each
    python bench/r2d2_learner.py --variants=preset,paper_b16 --window_s=20
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402
import reverb  # noqa: E402
import tensorflow as tf  # noqa: E402
import tree  # noqa: E402
from names import names_from  # noqa: E402

from agentkit.acting import ActingLayout  # noqa: E402
from agentkit.specs import make_environment_spec  # noqa: E402
from agents.r2d2 import R2D2Builder, R2D2Config  # noqa: E402
from components.networks.flops import forward_flops, matmul_rate  # noqa: E402
from components.networks.precision import resolve_compute_dtype  # noqa: E402
from launch_programs.devices import configure_tensorflow  # noqa: E402
from tests import fakes  # noqa: E402

PAPER = dict(sequence_length=80, period=40, burn_in=40, torso="atari", torso_features=0,
             lstm_size=512, head_hidden_size=512, compute_dtype="float32")
# name -> overrides of R2D2Config.atari().
VARIANTS = {
    "preset": {},
    "preset_float32": {"compute_dtype": "float32"},
    "no_torso_features": {"torso_features": 0, "compute_dtype": "float32"},
    "batch16": {"batch_size": 16},
    "batch64": {"batch_size": 64},
    "paper_b16": dict(PAPER, batch_size=16),  # The paper's layout at a quarter of its batch.
}
RESULT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "r2d2_learner.json")


def constant_sample(builder: R2D2Builder, spec, batch_size: int) -> reverb.ReplaySample:
    """A batch of the table's signature: random frames and actions, every step taken."""
    rng = np.random.default_rng(0)

    def draw(s):
        shape = (batch_size,) + tuple(s.shape)
        if s.dtype == tf.uint8:
            return tf.constant(rng.integers(0, 255, shape, dtype=np.uint8))
        if s.dtype.is_integer:
            return tf.constant(rng.integers(0, 6, shape).astype(s.dtype.as_numpy_dtype))
        return tf.constant(rng.random(shape).astype(np.float32))

    data = tree.map_structure(draw, builder.signature(spec))
    data["mask"] = tf.ones_like(data["mask"])
    info = reverb.SampleInfo(key=tf.zeros([batch_size], tf.uint64),
                             probability=tf.fill([batch_size], 1e-3),
                             table_size=tf.fill([batch_size], 1000),
                             priority=tf.ones([batch_size], tf.float64),
                             times_sampled=tf.ones([batch_size], tf.int32))
    return reverb.ReplaySample(info=info, data=data)


def update_flops(network, config: R2D2Config) -> tuple[float, int]:
    """(forward FLOPs of one frame, dense FLOPs of one update): online and target passes over
    all L steps, and the gradients (weights and inputs, less the first op's input) of the T
    trained steps."""
    f = forward_flops(lambda x: network(x, network.initial_state(1))[0],
                      tf.TensorSpec((1, 84, 84, 4), tf.uint8))
    length, trained = config.sequence_length, config.trained_steps
    per_sequence = 2 * length * f.total + trained * (2 * f.total - f.first)
    return f.total, config.batch_size * per_sequence


def measure(name: str, overrides: dict, window_s: float) -> dict:
    config = R2D2Config.atari(**overrides)
    spec = make_environment_spec(fakes.fake_atari())
    builder = R2D2Builder(config, ActingLayout(num_actors=1, num_envs_per_actor=16,
                                               env_groups=2))
    networks = builder.make_networks(spec=spec)
    sample = constant_sample(builder, spec, config.batch_size)
    learner = builder.make_learner(networks=networks, spec=spec,
                                   iterator=itertools.repeat(sample), replay_address=None)
    learner.step()
    learner.step()  # Traced and warm.
    steps, start = 0, time.perf_counter()
    while steps == 0 or time.perf_counter() - start < window_s:
        learner.step()
        steps += 1
    seconds = (time.perf_counter() - start) / steps
    frame_flops, flops = update_flops(networks["q"], config)
    row = {
        "variant": name, "overrides": overrides, "batch_size": config.batch_size,
        "sequence_length": config.sequence_length, "burn_in": config.burn_in,
        "compute_dtype": resolve_compute_dtype(config.compute_dtype),
        "update_ms": round(1000 * seconds, 1),
        "trained_steps_per_s": round(config.batch_size * config.trained_steps / seconds),
        "forward_mflops_per_frame": round(frame_flops / 1e6, 2),
        "update_gflops": round(flops / 1e9, 2),
        "gflops_per_s": round(flops / seconds / 1e9, 1),
    }
    print(f"[r2d2_learner] {name}: {row['update_ms']} ms an update, "
          f"{row['trained_steps_per_s']} trained steps/s, {row['update_gflops']} GFLOP an "
          f"update, {row['gflops_per_s']} GFLOP/s", flush=True)
    return row


def bfloat16_matmul_rate(size: int = 2048, seconds: float = 3.0) -> float:
    a = tf.cast(tf.random.normal((size, size)), tf.bfloat16)
    product = tf.function(lambda x: tf.reduce_sum(tf.cast(tf.linalg.matmul(x, x), tf.float32)))
    product(a).numpy()
    count, start = 0, time.perf_counter()
    while count == 0 or time.perf_counter() - start < seconds:
        product(a).numpy()
        count += 1
    return 2 * size ** 3 * count / (time.perf_counter() - start)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variants", default=",".join(VARIANTS),
                        help="comma-separated, of: " + ", ".join(VARIANTS))
    parser.add_argument("--window_s", type=float, default=12.0)
    parser.add_argument("--out", default=RESULT)
    args = parser.parse_args(argv)
    names = names_from(parser, "--variants", args.variants, VARIANTS)
    configure_tensorflow()
    f32, b16 = matmul_rate(), bfloat16_matmul_rate()
    print(f"[r2d2_learner] matmul: float32 {f32 / 1e9:.0f} GFLOP/s, bfloat16 "
          f"{b16 / 1e9:.0f} GFLOP/s", flush=True)
    rows = [measure(name, VARIANTS[name], args.window_s) for name in names]
    for row in rows:
        row["fraction_of_float32_matmul"] = round(row["gflops_per_s"] * 1e9 / f32, 3)
        row["fraction_of_bfloat16_matmul"] = round(row["gflops_per_s"] * 1e9 / b16, 3)
    result = {"matmul_gflops_float32": round(f32 / 1e9, 1),
              "matmul_gflops_bfloat16": round(b16 / 1e9, 1), "variants": rows,
              "machine": f"{platform.node()}, {os.cpu_count()} cpus"}
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)
    print(f"[r2d2_learner] wrote {args.out}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
