"""stable-baselines3's PPO on CartPole-v1 with its tuned settings: seconds to an evaluation mean of 475.

Runs in `.venv-sb3`, as bench/sb3_dqn.py (whose evaluation callback it uses:
10 greedy episodes every 5,000 environment steps; the time counts from when
the model was built). The settings are rl-baselines3-zoo's for PPO on
CartPole-v1: 8 environments, 32 steps each per rollout, batch 256, 20
epochs, gamma 0.98, GAE lambda 0.8, no entropy bonus, learning rate 1e-3 and
clip range 0.2 both falling linearly to 0 over 100k steps. Prints one JSON line.

    .venv-sb3/bin/python bench/sb3_ppo.py --seed=0
"""

from __future__ import annotations

import argparse

import torch
from sb3_dqn import FirstReached, learn_and_report
from stable_baselines3 import PPO
from stable_baselines3.common.env_util import make_vec_env


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max_steps", type=int, default=100_000)  # The zoo's n_timesteps.
    args = parser.parse_args()
    torch.set_num_threads(2)
    env = make_vec_env("CartPole-v1", n_envs=8, seed=args.seed)
    callback = FirstReached(args.seed)
    model = PPO("MlpPolicy", env, n_steps=32, batch_size=256, n_epochs=20, gamma=0.98,
                gae_lambda=0.8, ent_coef=0.0, learning_rate=lambda left: 1e-3 * left,
                clip_range=lambda left: 0.2 * left, seed=args.seed, verbose=0)
    learn_and_report(model, callback, args.max_steps, args.seed)


if __name__ == "__main__":
    main()
