"""stable-baselines3's DQN on CartPole-v1 with its tuned settings: seconds to an evaluation mean of 475.

Runs in a virtual environment of its own (`.venv-sb3`: stable-baselines3 and
PyTorch, which must not meet this project's TensorFlow stack);
`bench/time_to_solve.py --sb3` creates it and calls this script once per seed.
The settings are rl-baselines3-zoo's for DQN on CartPole-v1 (lr 2.3e-3,
batch 64, 128 gradient steps every 256 environment steps, target copy every
10 steps, exploration 1 -> 0.04 over the first 16% of 50k steps, MLP 256x256).
Evaluation is the same as the project's: 10 greedy episodes every 5,000
environment steps; the time is the wall-clock time since the model was
built when the first round's mean reached 475. Prints one JSON line.

    .venv-sb3/bin/python bench/sb3_dqn.py --seed=0
"""

from __future__ import annotations

import argparse
import json
import time

import gymnasium as gym
import numpy as np
import torch
from stable_baselines3 import DQN
from stable_baselines3.common.callbacks import BaseCallback

TARGET = 475.0


class FirstReached(BaseCallback):
    """Every `every` steps: `episodes` greedy episodes; stops training at the target."""

    def __init__(self, seed: int, every: int = 5_000, episodes: int = 10,
                 env_id: str = "CartPole-v1", target: float = TARGET):
        super().__init__()
        self.env = gym.make(env_id)
        self.seed, self.every, self.episodes, self.target = seed, every, episodes, target
        self.start = time.time()
        self.reached = None
        self.rounds = []
        self.next_round = every  # Vectorised learners step several environments per call.

    def _on_step(self) -> bool:
        if self.num_timesteps < self.next_round:
            return True
        self.next_round += self.every
        returns = []
        for e in range(self.episodes):
            obs, _ = self.env.reset(seed=10_000 + self.seed * 100 + e)
            done, total = False, 0.0
            while not done:
                action, _ = self.model.predict(obs, deterministic=True)
                obs, reward, terminated, truncated, _ = self.env.step(action)
                total += reward
                done = terminated or truncated
            returns.append(total)
        mean = float(np.mean(returns))
        self.rounds.append((self.num_timesteps, round(time.time() - self.start, 2), mean))
        if mean >= self.target:
            self.reached = {"wall_time_s": round(time.time() - self.start, 2),
                            "actor_steps": self.num_timesteps, "eval_return_mean": mean}
            return False
        return True


def learn_and_report(model, callback: FirstReached, max_steps: int, seed: int) -> None:
    """Trains `model` to `max_steps` (or the callback's target) and prints the one JSON line
    bench/time_to_solve.py reads."""
    callback.start = time.time()
    model.learn(total_timesteps=max_steps, callback=callback)
    print(json.dumps({"seed": seed, "solved": callback.reached is not None,
                      "first_reached": callback.reached, "rounds": callback.rounds,
                      "torch": torch.__version__}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max_steps", type=int, default=50_000)  # The zoo's n_timesteps.
    args = parser.parse_args()
    torch.set_num_threads(2)
    env = gym.make("CartPole-v1")
    callback = FirstReached(args.seed)
    model = DQN("MlpPolicy", env, learning_rate=2.3e-3, batch_size=64, buffer_size=100_000,
                learning_starts=1000, gamma=0.99, target_update_interval=10, train_freq=256,
                gradient_steps=128, exploration_fraction=0.16, exploration_final_eps=0.04,
                policy_kwargs=dict(net_arch=[256, 256]), seed=args.seed, verbose=0)
    learn_and_report(model, callback, args.max_steps, args.seed)


if __name__ == "__main__":
    main()
