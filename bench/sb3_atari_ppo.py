"""stable-baselines3's PPO (CnnPolicy, its Atari wrappers) on Pong for a fixed number of agent
steps: its agent steps per second, for bench/atari_throughput.py.

Runs in `.venv-sb3` (bench/time_to_solve.py makes it; bench/atari_throughput.py adds ale-py).
PongNoFrameskip-v4 (no sticky actions) through `make_atari_env` (no-op starts, action repeat
4 with max-pooling, 84x84 grey, episodic life where a game has lives, reward clipping) and a
frame stack of 4 in a DummyVecEnv, torch on 2 threads. The clock starts when the model is
built and stops when `learn` returns. Prints one JSON line.

    .venv-sb3/bin/python bench/sb3_atari_ppo.py --envs=64 --steps=65536 --batch_size=2048
"""

from __future__ import annotations

import argparse
import json
import time

import ale_py
import gymnasium as gym
import stable_baselines3
import torch
from stable_baselines3 import PPO
from stable_baselines3.common.env_util import make_atari_env
from stable_baselines3.common.vec_env import VecFrameStack


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--envs", type=int, default=64)
    parser.add_argument("--rollout_length", type=int, default=128)
    parser.add_argument("--batch_size", type=int, default=2048)  # SGD minibatch.
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--steps", type=int, default=65_536)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    torch.set_num_threads(2)
    gym.register_envs(ale_py)
    env = VecFrameStack(make_atari_env("PongNoFrameskip-v4", n_envs=args.envs, seed=args.seed),
                        n_stack=4)
    start = time.time()
    model = PPO("CnnPolicy", env, n_steps=args.rollout_length, batch_size=args.batch_size,
                n_epochs=args.epochs, learning_rate=2.5e-4, clip_range=0.1, ent_coef=0.01,
                vf_coef=0.5, seed=args.seed, device="cpu", verbose=0)
    model.learn(total_timesteps=args.steps)
    elapsed = time.time() - start
    print(json.dumps({"agent_steps": int(model.num_timesteps), "wall_time_s": round(elapsed, 2),
                      "agent_steps_per_s": round(model.num_timesteps / elapsed, 1),
                      "stable_baselines3": stable_baselines3.__version__,
                      "torch": torch.__version__, "ale_py": ale_py.__version__}))


if __name__ == "__main__":
    main()
