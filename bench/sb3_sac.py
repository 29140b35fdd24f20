"""stable-baselines3's SAC on Pendulum-v1 with rl-baselines3-zoo's tuned settings: seconds
to an evaluation mean of -250.

Runs in `.venv-sb3` (stable-baselines3 and PyTorch, apart from this project's TensorFlow);
`bench/time_to_solve.py --agents=sac,sb3_sac` calls it once per seed. The zoo's settings
for SAC on Pendulum-v1 (hyperparams/sac.yml): learning rate 1e-3, 20k steps, the rest
stable-baselines3's SAC defaults (buffer 1M, batch 256, 100 steps before learning, one
gradient step per step, tau 0.005, gamma 0.99, the temperature tuned from 1.0, 256x256).
Evaluation as the project's run: 10 deterministic episodes every `--eval_every` steps;
the time is the wall-clock since the model was built when a round's mean first reached
-250. Prints one JSON line.

    .venv-sb3/bin/python bench/sb3_sac.py --seed=0
"""

from __future__ import annotations

import argparse

import gymnasium as gym
import torch
from sb3_dqn import FirstReached, learn_and_report
from stable_baselines3 import SAC

TARGET = -250.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max_steps", type=int, default=20_000)  # The zoo's n_timesteps.
    parser.add_argument("--eval_every", type=int, default=2_000)
    args = parser.parse_args()
    torch.set_num_threads(2)
    callback = FirstReached(args.seed, every=args.eval_every, env_id="Pendulum-v1",
                            target=TARGET)
    model = SAC("MlpPolicy", gym.make("Pendulum-v1"), learning_rate=1e-3, seed=args.seed,
                verbose=0)
    learn_and_report(model, callback, args.max_steps, args.seed)


if __name__ == "__main__":
    main()
